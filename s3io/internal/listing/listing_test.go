package listing

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/spate-io/beam-s3/internal/fakelist"
)

// listFixture serves keys (sorted here) from the synthetic listing server, and returns the
// options of a listing of it.
func listFixture(t *testing.T, keys []string, latency time.Duration) (*fakelist.Server, Options) {
	t.Helper()
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	srv := fakelist.New(fakelist.Options{Bucket: "lst", N: len(keys), Key: func(i int) string { return keys[i] }, Latency: latency, LogLimit: 100000})
	t.Cleanup(srv.Close)
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	return srv, Options{Client: client, Bucket: "lst"}
}

// testListing prepares a listing of prefix in pages of pageKeys; run it with runListing.
func testListing(t *testing.T, opts Options, prefix, startAfter string, parallelism int, pageKeys int32) *Listing {
	t.Helper()
	opts.Prefix, opts.StartAfter, opts.Parallelism, opts.PageKeys = prefix, startAfter, parallelism, pageKeys
	return New(opts)
}

// runListing runs l to its end, calling each after every page, and returns the keys in the
// order it handed them out.
func runListing(t *testing.T, l *Listing, each func()) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l.Run(ctx)
	var got []string
	for {
		page, err := l.Next()
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
func listAll(t *testing.T, opts Options, prefix, startAfter string, parallelism int, pageKeys int32) ([]string, *Listing) {
	t.Helper()
	l := testListing(t, opts, prefix, startAfter, parallelism, pageKeys)
	return runListing(t, l, nil), l
}

// TestListingInKeyOrderWhateverTheParallelism: whatever the parallelism and the timing of the
// requests, the consumer gets exactly the sorted keys after StartAfter under the prefix.
func TestListingInKeyOrderWhateverTheParallelism(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for name, keys := range fakelist.Layouts(rng) {
		t.Run(name, func(t *testing.T) {
			others := append(slices.Clone(keys), "aaa/before", "zzz/after", "data")
			_, opts := listFixture(t, others, 0)
			want := slices.Clone(keys)
			slices.Sort(want)
			want = slices.Compact(want)
			startAfter := want[len(want)/5]
			for _, p := range []int{1, 2, 7, 16, 64} {
				got, l := listAll(t, opts, "data/", "", p, 50)
				if !slices.Equal(got, want) {
					t.Fatalf("parallelism %d: %d keys, want %d; first difference at %d", p, len(got), len(want), firstDiff(got, want))
				}
				// Discovering where to cut costs requests that return little (empty or tiny
				// ranges, delimiter probes): up to ~6 requests a page in the "deep" layout of
				// folders holding a key or two (365 for 59 pages at parallelism 7, the worst
				// of 15 runs). A runaway splitter would cost far more than this bound.
				if p > 1 && l.Stats().Requests > int64(len(want)/50)*8+int64(p)*16 {
					t.Errorf("parallelism %d: %d requests for %d pages of keys", p, l.Stats().Requests, len(want)/50)
				}
				got, _ = listAll(t, opts, "data/", startAfter, p, 50)
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
			keys := fakelist.Layouts(rng)[name]
			srv, opts := listFixture(t, keys, 5*time.Millisecond)
			l := testListing(t, opts, "data/", "", 8, 20)
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
			if limit := 2*l.budget + l.opts.Parallelism; most > limit {
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
	srv, opts := listFixture(t, keys, 0)
	got, _ := listAll(t, opts, "p/", "", 16, 0)
	if len(got) != 900 {
		t.Fatalf("listed %d keys, want 900", len(got))
	}
	if st := srv.Stats(); st.Lists != 1 {
		t.Errorf("%d LIST requests for 900 keys, want 1", st.Lists)
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
	srv, opts := listFixture(t, keys, time.Millisecond)
	l := testListing(t, opts, "data/", "", 16, 50)
	l.opts.SkipFolder = skip
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
	if l.Stats().SkippedFolders == 0 || len(got) >= len(keys) {
		t.Errorf("listed %d of %d keys (%d in folders that may match), %d folders skipped: nothing was pruned", len(got), len(keys), kept, l.Stats().SkippedFolders)
	}
	t.Logf("listed %d of %d keys with %d requests; %d folders skipped", len(got), len(keys), srv.Stats().Lists, l.Stats().SkippedFolders)
}

// TestListingPagesDecodedFast: the pages of a URL-encoded listing, keys with spaces, '%',
// '+', '&' and non-ASCII runes among them, are decoded by the fast parser, not handed to the
// SDK, and their keys come out decoded.
func TestListingPagesDecodedFast(t *testing.T) {
	keys := []string{"data/a b", "data/a%2Fb", "data/a+b", "data/a&b<c>", "data/é/日本", "data/x"}
	_, opts := listFixture(t, keys, 0)
	in := &s3.ListObjectsV2Input{Bucket: aws.String("lst"), Prefix: aws.String("data/"), EncodingType: types.EncodingTypeUrl}
	out, err := opts.Client.ListObjectsV2(t.Context(), in, pageDecoding(nil))
	if err != nil {
		t.Fatal(err)
	}
	page, fast := out.ResultMetadata.Get(pageKey{}).(*Page)
	if !fast {
		t.Fatalf("the page went to the SDK's decoder")
	}
	if err := page.unescape("lst"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range page.Objects {
		got = append(got, o.Key)
	}
	if want := slices.Sorted(slices.Values(keys)); !slices.Equal(got, want) {
		t.Errorf("keys %q, want %q", got, want)
	}
}
