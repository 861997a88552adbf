package s3client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// headerServer answers every request 200 and records the account headers each carried.
type headerServer struct {
	mu   sync.Mutex
	seen [][2]string
}

func (h *headerServer) start(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, [2]string{r.Header.Get("X-Amz-Expected-Bucket-Owner"), r.Header.Get("X-Amz-Request-Payer")})
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// ExpectedBucketOwner and RequesterPays reach every operation the library sends, without
// being set on any input.
func TestAccountHeaders(t *testing.T) {
	s3test.SetAWSEnv(t, "AKIDTEST", "secret")
	for _, tc := range []struct {
		name, owner, payer string
	}{
		{"set", "123456789012", "requester"},
		{"unset", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h headerServer
			c, err := New(t.Context(), Options{Endpoint: h.start(t), UsePathStyle: true, MaxAttempts: 1,
				ExpectedBucketOwner: tc.owner, RequesterPays: tc.payer != ""})
			if err != nil {
				t.Fatal(err)
			}
			b, k := aws.String("b"), aws.String("k")
			if _, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: b}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: b, Key: k}); err != nil {
				t.Fatal(err)
			}
			out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: b, Key: k, Range: aws.String("bytes=0-9")})
			if err != nil {
				t.Fatal(err)
			}
			out.Body.Close()
			h.mu.Lock()
			defer h.mu.Unlock()
			if len(h.seen) != 3 {
				t.Fatalf("the server saw %d requests; want 3", len(h.seen))
			}
			for i, s := range h.seen {
				if s != [2]string{tc.owner, tc.payer} {
					t.Errorf("request %d carried owner %q, payer %q; want %q, %q", i, s[0], s[1], tc.owner, tc.payer)
				}
			}
		})
	}
}

func TestRegion(t *testing.T) {
	t.Run("from Options", func(t *testing.T) {
		s3test.IsolateAWSEnv(t)
		c, err := New(t.Context(), Options{Region: "eu-west-1"})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Options().Region; r != "eu-west-1" {
			t.Errorf("region %q; want eu-west-1", r)
		}
	})
	t.Run("from the environment", func(t *testing.T) {
		s3test.IsolateAWSEnv(t)
		t.Setenv("AWS_REGION", "ap-south-1")
		c, err := New(t.Context(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Options().Region; r != "ap-south-1" {
			t.Errorf("region %q; want ap-south-1", r)
		}
	})
	t.Run("endpoint defaults us-east-1", func(t *testing.T) {
		s3test.IsolateAWSEnv(t)
		c, err := New(t.Context(), Options{Endpoint: "http://127.0.0.1:9000"})
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Options().Region; r != "us-east-1" {
			t.Errorf("region %q; want us-east-1", r)
		}
	})
	t.Run("none", func(t *testing.T) {
		s3test.IsolateAWSEnv(t)
		if _, err := New(t.Context(), Options{}); !errors.Is(err, ErrNoRegion) {
			t.Errorf("New without region or endpoint = %v; want ErrNoRegion", err)
		}
	})
}

// The clients of one worker share one retryer per endpoint, region and attempts, so that
// the adaptive rate learns from all of them; checksums are validated only when required.
func TestClientsShareRetryer(t *testing.T) {
	s3test.SetAWSEnv(t, "AKIDTEST", "secret")
	o := Options{Endpoint: "http://127.0.0.1:9000", MaxAttempts: 4}
	a, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	ra, rb := a.Options().Retryer, b.Options().Retryer
	if ra != rb {
		t.Error("two clients of the same options have different retryers")
	}
	if n := ra.MaxAttempts(); n != 4 {
		t.Errorf("retryer MaxAttempts %d; want 4", n)
	}
	o.MaxAttempts = 5
	if workerRetryer(o) == ra {
		t.Error("another MaxAttempts shares the retryer")
	}
	if v := a.Options().ResponseChecksumValidation; v != aws.ResponseChecksumValidationWhenRequired {
		t.Errorf("ResponseChecksumValidation %v; want WhenRequired", v)
	}
	if a.Options().UsePathStyle != o.UsePathStyle {
		t.Error("UsePathStyle not passed on")
	}
}
