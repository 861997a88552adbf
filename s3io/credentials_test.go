package s3io

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io/internal/s3client"
)

const credentialHint = "no usable AWS credentials"

// credentialSources are the ways a worker's default credential chain finds nothing usable.
// Each starts from an environment with nothing in it (no keys, no profile, a HOME and
// config files of the test's own, no instance metadata) and sets what it needs on top.
var credentialSources = []struct {
	name string
	env  func(t *testing.T, dir string)
}{
	{"nothing in the environment", func(*testing.T, string) {}},
	{"unknown profile", func(t *testing.T, _ string) { t.Setenv("AWS_PROFILE", "nope") }},
	{"web-identity token file missing", func(t *testing.T, dir string) {
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", filepath.Join(dir, "no-such-token"))
		t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader")
	}},
}

// withoutAWSCredentials empties this process's AWS environment for the test (prism's
// loopback workers run in it) and returns the test's directory.
func withoutAWSCredentials(t *testing.T) string {
	t.Helper()
	dir := s3test.IsolateAWSEnv(t)
	t.Setenv("AWS_REGION", "us-east-1")
	return dir
}

// A worker without credentials fails the job at once, saying so, whichever source failed:
// the client's error is classified fatal by errors.Is on s3client.ErrCredentials, and
// describeS3Error adds what to check. An unknown profile fails already in newClient
// (LoadDefaultConfig checks that the profile exists); the others at the first request.
func TestNoCredentialsIsFatal(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "creds")
	srv.Put(t, "creds", "k/a.ndjson", []byte("{\"a\":1}\n"))
	cfg := Config{Bucket: "creds", Prefix: "k/", Endpoint: srv.URL, UsePathStyle: true}.WithDefaults()
	for _, src := range credentialSources {
		t.Run(src.name, func(t *testing.T) {
			src.env(t, withoutAWSCredentials(t))
			c, err := newClient(t.Context(), cfg)
			if err == nil {
				_, err = c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("creds"), Key: aws.String("k/a.ndjson")})
				if err == nil {
					t.Fatal("GetObject succeeded without credentials")
				}
				err = describeS3Error(err, "pinned GET")
			} else if src.name != "unknown profile" {
				t.Fatalf("newClient: %v", err)
			}
			if !errors.Is(err, s3client.ErrCredentials) {
				t.Errorf("errors.Is(%v, s3client.ErrCredentials) = false", err)
			}
			if !strings.Contains(err.Error(), credentialHint) {
				t.Errorf("error %q lacks the hint %q", err, credentialHint)
			}
			if fatal, reason := classify(&objectError{ObjectRef: ObjectRef{Key: "k/a.ndjson"}, Err: err}); !fatal {
				t.Errorf("classify(%v) = not fatal, %q; want fatal", err, reason)
			}
		})
	}
}

// The same, end to end: planning (LIST) returns the hint, and a read of descriptors planned
// with credentials fails the pipeline with it rather than quarantining the object.
func TestNoCredentialsFailsPlanAndRead(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "creds")
	srv.Put(t, "creds", "k/a.ndjson", []byte("{\"a\":1}\n"))
	cfg := Config{Bucket: "creds", Prefix: "k/", Endpoint: srv.URL, UsePathStyle: true}
	var planned []SplitDescriptor
	if _, err := PlanDescriptors(t.Context(), cfg, func(d SplitDescriptor) error {
		planned = append(planned, d)
		return nil
	}); err != nil || len(planned) != 1 {
		t.Fatalf("planning with credentials: %d descriptors, %v", len(planned), err)
	}
	for _, src := range credentialSources {
		t.Run(src.name, func(t *testing.T) {
			src.env(t, withoutAWSCredentials(t))
			_, err := PlanDescriptors(t.Context(), cfg, func(SplitDescriptor) error { return nil })
			if err == nil || !strings.Contains(err.Error(), credentialHint) {
				t.Errorf("PlanDescriptors = %v; want an error with the hint %q", err, credentialHint)
			}

			p, s := beam.NewPipelineWithRoot()
			records, failures := ReadSplitsWithFailures(s, cfg, beam.Create(s, planned[0]))
			passert.Empty(s, records)
			passert.Empty(s, failures)
			err = ptest.Run(p)
			if err == nil || !strings.Contains(err.Error(), credentialHint) {
				t.Errorf("the read pipeline ended with %v; want it failed with the hint %q", err, credentialHint)
			}
		})
	}
}
