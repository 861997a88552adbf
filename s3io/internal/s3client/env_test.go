package s3client

import (
	"os"
	"path/filepath"
	"testing"
)

// awsEnv are the variables of the SDK's default chain a test must not inherit from the
// machine: keys, profiles, roles, container and instance credentials, regions.
var awsEnv = []string{
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
	"AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME",
	"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_EC2_METADATA_SERVICE_ENDPOINT",
}

// isolateAWSEnv gives the test an AWS environment with nothing in it: no variable of
// awsEnv, a HOME of its own, empty config and credentials files, no instance metadata.
// It returns the test's directory.
func isolateAWSEnv(t *testing.T) string {
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

// staticAWSEnv is isolateAWSEnv with static keys and a region.
func staticAWSEnv(t *testing.T) {
	t.Helper()
	isolateAWSEnv(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")
}
