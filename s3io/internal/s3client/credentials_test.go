package s3client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// countingServer answers every request 200 with an empty body and counts them.
func countingServer(t *testing.T) (url string, requests *atomic.Int64) {
	requests = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, requests
}

// TestCredentialFailuresMarked builds a real client for each way the default chain finds
// nothing usable and checks that the failure carries ErrCredentials through everything the
// SDK wraps it in (CredentialsCache, the adapter to smithy's identity resolver, the
// GetIdentity middleware, the retryer, smithy.OperationError), with the SDK's own message
// kept, and that no request was sent.
func TestCredentialFailuresMarked(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T, dir string)
		// atNew: LoadDefaultConfig itself fails, before any request.
		atNew bool
		msg   string
	}{
		{"nothing in the environment", func(*testing.T, string) {}, false, "no EC2 IMDS role found"},
		{"unknown profile", func(t *testing.T, _ string) { t.Setenv("AWS_PROFILE", "nope") }, true, "failed to get shared config profile, nope"},
		{"web-identity token file missing", func(t *testing.T, dir string) {
			t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", filepath.Join(dir, "no-such-token"))
			t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/reader")
		}, false, "no-such-token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := s3test.IsolateAWSEnv(t)
			t.Setenv("AWS_REGION", "us-east-1")
			tc.env(t, dir)
			url, requests := countingServer(t)
			c, err := New(t.Context(), Options{Endpoint: url, UsePathStyle: true, MaxAttempts: 3})
			if tc.atNew {
				if err == nil {
					t.Fatal("New succeeded; want LoadDefaultConfig to fail")
				}
			} else {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_, err = c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("b")})
				if err == nil {
					t.Fatal("ListObjectsV2 succeeded without credentials")
				}
				var op interface{ Operation() string }
				if !errors.As(err, &op) || op.Operation() != "ListObjectsV2" {
					t.Errorf("error %v is not the SDK's OperationError of ListObjectsV2", err)
				}
			}
			if !errors.Is(err, ErrCredentials) {
				t.Errorf("errors.Is(%v, ErrCredentials) = false", err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not keep the SDK's message %q", err, tc.msg)
			}
			if strings.Contains(err.Error(), ErrCredentials.Error()) {
				t.Errorf("error %q repeats the sentinel's text; s3io adds the hint", err)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the server saw %d requests; a request without credentials must not be sent", n)
			}
		})
	}
}

// With credentials, nothing is marked and the request goes out.
func TestCredentialsFoundNotMarked(t *testing.T) {
	s3test.SetAWSEnv(t, "AKIDTEST", "secret")
	url, requests := countingServer(t)
	c, err := New(t.Context(), Options{Endpoint: url, UsePathStyle: true, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	if requests.Load() != 1 {
		t.Errorf("the server saw %d requests; want 1", requests.Load())
	}
}

// A configuration error that is not about credentials is not marked.
func TestConfigErrorNotMarked(t *testing.T) {
	s3test.IsolateAWSEnv(t)
	t.Setenv("AWS_RETRY_MODE", "no-such-mode")
	_, err := New(t.Context(), Options{Endpoint: "http://127.0.0.1:1"})
	if err == nil {
		t.Fatal("New accepted AWS_RETRY_MODE=no-such-mode")
	}
	if errors.Is(err, ErrCredentials) {
		t.Errorf("%v is marked ErrCredentials", err)
	}
}

type countingProvider struct {
	calls atomic.Int64
	err   error
}

func (p *countingProvider) Retrieve(context.Context) (aws.Credentials, error) {
	p.calls.Add(1)
	if p.err != nil {
		return aws.Credentials{}, p.err
	}
	return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "s", Source: "test"}, nil
}

// The marker wraps the SDK's cache, so a success is fetched once and then served from it.
func TestMarkedCredentialsKeepCache(t *testing.T) {
	inner := &countingProvider{}
	m := markedCredentials{aws.NewCredentialsCache(inner)}
	for range 5 {
		if _, err := m.Retrieve(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := inner.calls.Load(); n != 1 {
		t.Errorf("the provider was asked %d times; want 1 (cached)", n)
	}
}

func TestMarkedCredentialsCancellationNotMarked(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	m := markedCredentials{&countingProvider{err: context.Canceled}}
	_, err := m.Retrieve(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrCredentials) {
		t.Errorf("Retrieve on a cancelled context = %v; want context.Canceled, not ErrCredentials", err)
	}
}

// What the SDK asks of a provider still reaches the wrapped one.
func TestMarkedCredentialsForward(t *testing.T) {
	anon := markedCredentials{aws.AnonymousCredentials{}}
	if !aws.IsCredentialsProvider(anon, (*aws.AnonymousCredentials)(nil)) {
		t.Error("wrapped anonymous credentials are not recognised as anonymous: S3 would try to sign")
	}
	if aws.IsCredentialsProvider(markedCredentials{&countingProvider{}}, (*aws.AnonymousCredentials)(nil)) {
		t.Error("a wrapped provider is taken for anonymous credentials")
	}
	src := markedCredentials{aws.NewCredentialsCache(&sourced{})}
	if got := src.ProviderSources(); len(got) != 1 || got[0] != aws.CredentialSourceEnvVars {
		t.Errorf("ProviderSources() = %v; want the wrapped provider's [%v]", got, aws.CredentialSourceEnvVars)
	}
}

type sourced struct{ countingProvider }

func (*sourced) ProviderSources() []aws.CredentialSource {
	return []aws.CredentialSource{aws.CredentialSourceEnvVars}
}
