package s3client

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// The limiter sits right after the retry middleware, so every attempt waits its turn.
func TestRateLimitAfterRetry(t *testing.T) {
	s3test.SetAWSEnv(t, "AKIDTEST", "secret")
	url, _ := countingServer(t)
	c, err := New(t.Context(), Options{Endpoint: url, UsePathStyle: true, MaxAttempts: 1, MaxRequestsPerSecond: 1000, Bucket: "after-retry"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	_, err = c.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}, func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(s *middleware.Stack) error {
			ids = s.Finalize.List()
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(ids, "Retry")
	if i < 0 || i+1 >= len(ids) || ids[i+1] != "s3io.RateLimit" {
		t.Errorf("finalize step %v; want s3io.RateLimit right after Retry", ids)
	}
}

// n concurrent requests at rate r arrive spread over at least n-1 intervals of 1/r, and the
// clients of one bucket share the limit.
func TestRateLimitSpacesRequests(t *testing.T) {
	s3test.SetAWSEnv(t, "AKIDTEST", "secret")
	const n, rps = 20, 50.0
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	o := Options{Endpoint: srv.URL, UsePathStyle: true, MaxAttempts: 1, MaxRequestsPerSecond: rps, Bucket: "spaced"}
	var clients [2]*s3.Client
	for i := range clients {
		c, err := New(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := clients[i%2].HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(at) != n {
		t.Fatalf("the server saw %d requests; want %d", len(at), n)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	interval := time.Duration(float64(time.Second) / rps)
	// Each request's own trip to the server is the slack of the first.
	if span, min := at[n-1].Sub(at[0]), time.Duration(n-2)*interval; span < min {
		t.Errorf("%d requests arrived within %v; at %v/s they need at least %v", n, span, rps, min)
	}
}

func TestWorkerRateLimiter(t *testing.T) {
	if workerRateLimiter(Options{}) != nil {
		t.Error("a limiter for MaxRequestsPerSecond 0")
	}
	o := Options{Endpoint: "e", Bucket: "b", MaxRequestsPerSecond: 3}
	if first, again := workerRateLimiter(o), workerRateLimiter(o); first != again {
		t.Error("two limiters for one endpoint and bucket")
	}
	p := o
	p.Bucket = "other"
	if workerRateLimiter(o) == workerRateLimiter(p) {
		t.Error("two buckets share a limiter")
	}
}
