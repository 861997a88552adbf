package s3io

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/fakelist"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// listFixture serves keys (sorted here) from the synthetic listing server.
func listFixture(t *testing.T, keys []string, latency time.Duration) (*fakelist.Server, Config) {
	t.Helper()
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	srv := fakelist.New(fakelist.Options{Bucket: "lst", N: len(keys), Key: func(i int) string { return keys[i] }, Latency: latency, LogLimit: 100000})
	t.Cleanup(srv.Close)
	s3test.SetAWSEnv(t, "test", "test")
	cfg := Config{Bucket: "lst", Endpoint: srv.URL, UsePathStyle: true, Region: "us-east-1"}.WithDefaults()
	return srv, cfg
}

// TestPlanIDsIndependentOfParallelism: the planner's descriptors, in order, are the same
// with one LIST request at a time and with many.
func TestPlanIDsIndependentOfParallelism(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for name, keys := range fakelist.Layouts(rng) {
		t.Run(name, func(t *testing.T) {
			_, cfg := listFixture(t, keys, 0)
			cfg.Prefix, cfg.SplitTargetBytes, cfg.Compression = "data/", 1<<20, CompressionGzip
			var ids [2][]string
			for i, p := range []int{1, 16} {
				cfg.ListParallelism = p
				st, err := PlanDescriptors(context.Background(), cfg, func(d SplitDescriptor) error {
					ids[i] = append(ids[i], d.ID)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if want := len(slices.Compact(slices.Sorted(slices.Values(keys)))); st.Objects != int64(want) {
					t.Errorf("parallelism %d planned %d objects, want %d", p, st.Objects, want)
				}
			}
			if len(ids[0]) < 10 || !slices.Equal(ids[0], ids[1]) {
				t.Errorf("descriptor IDs differ: %d sequential, %d parallel", len(ids[0]), len(ids[1]))
			}
		})
	}
}

// TestListingErrors: LIST answers the SDK retries (503 SlowDown) cost nothing but time; an
// answer that cannot be retried fails planning with S3's reason and what to check, and the
// listing's workers stop.
func TestListingErrors(t *testing.T) {
	keys := make([]string, 2500)
	for i := range keys {
		keys[i] = fmt.Sprintf("data/%05d", i)
	}
	fake := fakelist.New(fakelist.Options{Bucket: "lst", N: len(keys), Key: func(i int) string { return keys[i] }})
	defer fake.Close()
	var mu sync.Mutex
	n, denyAfter := 0, -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k, deny := n, denyAfter >= 0 && n > denyAfter
		mu.Unlock()
		switch {
		case deny:
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		case k%7 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		default:
			fake.ServeHTTP(w, r)
		}
	}))
	defer srv.Close()
	s3test.SetAWSEnv(t, "test", "test")
	cfg := Config{Bucket: "lst", Prefix: "data/", Endpoint: srv.URL, UsePathStyle: true, Region: "us-east-1", Compression: CompressionGzip}
	st, err := PlanDescriptors(context.Background(), cfg, func(SplitDescriptor) error { return nil })
	if err != nil || st.Objects != int64(len(keys)) {
		t.Fatalf("with 503s: planned %d objects, err %v; want %d, nil", st.Objects, err, len(keys))
	}

	mu.Lock()
	n, denyAfter = 0, 1 // the first page only: the rest of the listing cannot finish
	mu.Unlock()
	_, err = PlanDescriptors(context.Background(), cfg, func(SplitDescriptor) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "AccessDenied") || !strings.Contains(err.Error(), "s3:ListBucket") || !strings.Contains(err.Error(), "s3://lst/data/") {
		t.Fatalf("err = %v, want AccessDenied naming the prefix and what to check", err)
	}
	settleGoroutines(t) // the listing's workers stop
}
