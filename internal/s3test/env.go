package s3test

import (
	"os"
	"testing"
)

// SetAWSEnv points the AWS default credential chain of this process (where prism's
// loopback workers run) at the static keys given, for the test, and keeps it off the
// machine's own configuration: us-east-1, no config or credentials files, no EC2
// metadata service.
func SetAWSEnv(t testing.TB, accessKey, secretKey string) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           accessKey,
		"AWS_SECRET_ACCESS_KEY":       secretKey,
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             os.DevNull,
		"AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}
