package s3test

import (
	"os"
	"path/filepath"
	"testing"
)

// SetAWSEnv points the AWS default credential chain of this process (where prism's
// loopback workers run) at the static keys given, for the test, and keeps it off the
// machine's own configuration: IsolateAWSEnv, then the keys and us-east-1.
func SetAWSEnv(t testing.TB, accessKey, secretKey string) {
	t.Helper()
	IsolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_REGION", "us-east-1")
}

// awsEnv are the variables of the SDK's default chain a test must not inherit from the
// machine: keys, profiles, roles, container and instance credentials, regions.
var awsEnv = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
}

// IsolateAWSEnv gives the test an AWS environment with nothing in it: no variable of the
// default chain, a HOME of its own, empty config and credentials files, no instance
// metadata. It returns the test's directory.
func IsolateAWSEnv(t testing.TB) string {
	t.Helper()
	for _, k := range awsEnv {
		t.Setenv(k, "") // restores the machine's value after the test
		os.Unsetenv(k)
	}
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", dir)
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return dir
}
