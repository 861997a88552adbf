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
	cfg := Config{Bucket: "lst", Endpoint: srv.URL, UsePathStyle: true, Region: "us-east-1"}.withDefaults()
	return srv, cfg
}

// testListing prepares a listing of prefix in pages of pageKeys; run it with runListing.
func testListing(t *testing.T, cfg Config, prefix, startAfter string, parallelism int, pageKeys int32) *listing {
	t.Helper()
	client, err := newClient(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ListParallelism = parallelism
	l := newListing(client, &cfg, cfg.Bucket, prefix, startAfter)
	l.pageKeys = pageKeys
	return l
}

// runListing runs l to its end, calling each after every page, and returns the keys in the
// order it handed them out.
func runListing(t *testing.T, l *listing, each func()) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l.run(ctx)
	var got []string
	for {
		page, err := l.next()
		if err != nil {
			t.Fatal(err)
		}
		if page == nil {
			return got
		}
		for _, o := range page {
			got = append(got, o.Key)
		}
		if each != nil {
			each()
		}
	}
}

// listAll lists prefix to its end and returns the keys in the order they were handed out.
func listAll(t *testing.T, cfg Config, prefix, startAfter string, parallelism int, pageKeys int32) ([]string, *listing) {
	t.Helper()
	l := testListing(t, cfg, prefix, startAfter, parallelism, pageKeys)
	return runListing(t, l, nil), l
}

// keyLayouts are key sets whose shapes stress different cuts: zero-padded counters in one
// folder, dated folders, deep trees, hex hashes, and keys over a wide alphabet with
// non-ASCII runes, spaces and punctuation that sort between the usual characters.
func keyLayouts(rng *rand.Rand) map[string][]string {
	flat := make([]string, 0, 3000)
	for i := range 3000 {
		flat = append(flat, fmt.Sprintf("data/part-%07d.json", i*7))
	}
	foldered := make([]string, 0, 3000)
	for d := range 40 {
		for i := range 1 + rng.IntN(120) {
			foldered = append(foldered, fmt.Sprintf("data/dt=2024-%02d-%02d/part-%05d.gz", d/28+1, d%28+1, i))
		}
		foldered = append(foldered, fmt.Sprintf("data/dt=2024-%02d-%02d.manifest", d/28+1, d%28+1))
	}
	deep := make([]string, 0, 3000)
	for range 3000 {
		deep = append(deep, fmt.Sprintf("data/%c/%c%c/%d/%d.bin", 'a'+rng.IntN(3), 'a'+rng.IntN(26), 'a'+rng.IntN(26), rng.IntN(9), rng.IntN(1000)))
	}
	hex := make([]string, 0, 3000)
	for range 3000 {
		hex = append(hex, fmt.Sprintf("data/%016x", rng.Uint64()))
	}
	wide := make([]string, 0, 2000)
	alpha := []rune("aZ09 -._~!/+%é日\u00a0")
	for range 2000 {
		n := 1 + rng.IntN(12)
		var b strings.Builder
		b.WriteString("data/")
		for range n {
			b.WriteRune(alpha[rng.IntN(len(alpha))])
		}
		wide = append(wide, b.String())
	}
	return map[string][]string{"flat": flat, "foldered": foldered, "deep": deep, "hex": hex, "wide": wide}
}

// TestListingInKeyOrderWhateverTheParallelism: whatever the parallelism and the timing of the
// requests, the consumer gets exactly the sorted keys after StartAfter under the prefix.
func TestListingInKeyOrderWhateverTheParallelism(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, keys := range keyLayouts(rng) {
		t.Run(name, func(t *testing.T) {
			others := append(slices.Clone(keys), "aaa/before", "zzz/after", "data")
			_, cfg := listFixture(t, others, 0)
			want := slices.Clone(keys)
			slices.Sort(want)
			want = slices.Compact(want)
			startAfter := want[len(want)/5]
			for _, p := range []int{1, 2, 7, 16, 64} {
				got, l := listAll(t, cfg, "data/", "", p, 50)
				if !slices.Equal(got, want) {
					t.Fatalf("parallelism %d: %d keys, want %d; first difference at %d", p, len(got), len(want), firstDiff(got, want))
				}
				// Discovering where to cut costs requests that return little (empty or tiny
				// ranges, delimiter probes): up to ~6 requests a page in the "deep" layout of
				// folders holding a key or two (365 for 59 pages at parallelism 7, the worst
				// of 15 runs). A runaway splitter would cost far more than this bound.
				if p > 1 && l.stats.requests > int64(len(want)/50)*8+int64(p)*16 {
					t.Errorf("parallelism %d: %d requests for %d pages of keys", p, l.stats.requests, len(want)/50)
				}
				got, _ = listAll(t, cfg, "data/", startAfter, p, 50)
				if i := slices.Index(want, startAfter); !slices.Equal(got, want[i+1:]) {
					t.Fatalf("parallelism %d, StartAfter %q: %d keys, want %d", p, startAfter, len(got), len(want)-i-1)
				}
			}
		})
	}
}

func firstDiff(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestListingKeepsRequestsInFlight: with per-request latency, a prefix of many pages is
// listed with many requests at once, and the pages held ahead of a slow consumer stay
// within the listing's bound.
func TestListingKeepsRequestsInFlight(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, name := range []string{"flat", "foldered", "hex"} {
		t.Run(name, func(t *testing.T) {
			keys := keyLayouts(rng)[name]
			srv, cfg := listFixture(t, keys, 5*time.Millisecond)
			l := testListing(t, cfg, "data/", "", 8, 20)
			most := 0
			n := len(runListing(t, l, func() {
				l.mu.Lock()
				most = max(most, l.buffered)
				l.mu.Unlock()
				time.Sleep(200 * time.Microsecond) // a consumer slower than the listers
			}))
			if n != len(keys) {
				t.Fatalf("listed %d keys, want %d", n, len(keys))
			}
			if st := srv.Stats(); st.MaxInFlight < 4 {
				t.Errorf("at most %d requests in flight, want several of 8", st.MaxInFlight)
			}
			if limit := 2*l.budget + l.parallelism; most > limit {
				t.Errorf("%d pages buffered ahead of the consumer, bound %d", most, limit)
			}
		})
	}
}

// TestListingSmallPrefixOneRequest: a prefix that fits in one page costs one request at any
// parallelism: ranges are only split once a page says there is more.
func TestListingSmallPrefixOneRequest(t *testing.T) {
	keys := make([]string, 900)
	for i := range keys {
		keys[i] = fmt.Sprintf("p/%04d", i)
	}
	srv, cfg := listFixture(t, keys, 0)
	got, _ := listAll(t, cfg, "p/", "", 16, 0)
	if len(got) != 900 {
		t.Fatalf("listed %d keys, want 900", len(got))
	}
	if st := srv.Stats(); st.Lists != 1 {
		t.Errorf("%d LIST requests for 900 keys, want 1", st.Lists)
	}
}

// TestPlanIDsIndependentOfParallelism: the planner's descriptors, in order, are the same
// with one LIST request at a time and with many.
func TestPlanIDsIndependentOfParallelism(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for name, keys := range keyLayouts(rng) {
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

// TestAlphabetCuts: cut points are strictly increasing, strictly between their bounds, and
// made of the alphabet's characters (so valid UTF-8).
func TestAlphabetCuts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var a alphabet
	a.add("part-0123456789abcdefXYZ/._")
	chars := []byte("-./0123456789abcXYZ_")
	randKey := func() string {
		b := make([]byte, 1+rng.IntN(10))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		return string(b)
	}
	for range 20000 {
		from, to := randKey(), randKey()
		if from > to {
			from, to = to, from
		}
		bounded := rng.IntN(4) > 0
		cuts := a.between(from, to, bounded, 2+rng.IntN(30))
		prev := from
		for _, c := range cuts {
			if c <= prev || bounded && c >= to {
				t.Fatalf("between(%q, %q, %v) gave %q out of order in %q", from, to, bounded, c, cuts)
			}
			prev = c
		}
	}
	if cuts := a.between("part-0000999", "", false, 16); len(cuts) != 15 {
		t.Errorf("an open range cut into %d pieces, want 16: %q", len(cuts)+1, cuts)
	}
}

// TestListingSkipsFolders: folders the planner says hold nothing it would select are not
// listed, and every key of the other folders still is, in order.
func TestListingSkipsFolders(t *testing.T) {
	var keys []string
	for d := range 60 {
		for i := range 40 {
			keys = append(keys, fmt.Sprintf("data/day=%02d/part-%03d.gz", d, i))
		}
	}
	skip := func(f string) bool { return strings.HasPrefix(f, "data/day=") && (f[len("data/day=")+1]-'0')%2 == 1 }
	srv, cfg := listFixture(t, keys, time.Millisecond)
	l := testListing(t, cfg, "data/", "", 16, 50)
	l.skipFolder = skip
	got := runListing(t, l, nil)
	if !slices.IsSorted(got) {
		t.Fatal("keys out of order")
	}
	var kept int
	for _, k := range keys {
		if !skip(k[:len("data/day=00/")]) {
			kept++
			if _, found := slices.BinarySearch(got, k); !found {
				t.Fatalf("key %q of a folder that may match was not listed", k)
			}
		}
	}
	if l.stats.skippedFolders == 0 || len(got) >= len(keys) {
		t.Errorf("listed %d of %d keys (%d in folders that may match), %d folders skipped: nothing was pruned", len(got), len(keys), kept, l.stats.skippedFolders)
	}
	t.Logf("listed %d of %d keys with %d requests; %d folders skipped", len(got), len(keys), srv.Stats().Lists, l.stats.skippedFolders)
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
