package listing

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/dirbucket"
)

const dirBucket = "lst--usw2-az1--x-s3"

// trickyKeys are keys whose order against folders is easy to get wrong: a key equal to a
// folder less its "/", keys sorting just before ("-", "." < "/") and after ("0") a folder,
// empty path segments, a folder marker, bytes XML cannot carry, %, + and non-ASCII.
var trickyKeys = []string{
	"a/", "a/b", "a/b/", "a/b/c", "a/b/c/d/e", "a/b-", "a/b-/x", "a/b.", "a/b.txt", "a/b0", "a/b0/z",
	"a//x", "a//", "a/\x01", "a/%2F", "a/+ x", "a/é", "a/é/\x7f", "a/z/", "a/z/y", "b", "b/", "b/b",
	"/", "/x", "//y", "c/" + strings.Repeat("n/", 12) + "deep",
}

// dirClient is an SDK client of srv with the keys srv takes.
func dirClient(srv *dirbucket.Server) *s3.Client {
	return s3.New(s3.Options{Region: "us-west-2", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
}

// drain runs l to its end and returns the keys in the order it handed them on.
func drain(t *testing.T, l Lister) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	l.Run(ctx)
	var got []string
	for {
		page, err := l.Next()
		if err != nil || page == nil {
			return got, err
		}
		for _, o := range page {
			got = append(got, o.Key)
		}
	}
}

// wantKeys is what a listing of prefix after startAfter hands on: keys in key order.
func wantKeys(keys []string, prefix, startAfter string) []string {
	var out []string
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if strings.HasPrefix(k, prefix) && k > startAfter {
			out = append(out, k)
		}
	}
	return out
}

// TestDirectoryKeyOrder: a directory bucket's listing, served in a new order on every
// request, hands on exactly the keys a general-purpose bucket's Listing hands on, in the
// same order, for every prefix (ending in "/" or not), StartAfter, parallelism and page
// size.
func TestDirectoryKeyOrder(t *testing.T) {
	keys := slices.Clone(trickyKeys)
	for i := range 300 {
		keys = append(keys, fmt.Sprintf("h/%02x/%03d", i%23, i), fmt.Sprintf("h/%02x.%d", i%29, i))
	}
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	gen := dirbucket.NewGeneral(t, "lst", "ak", "sk")
	for _, k := range keys {
		dir.Put(k, []byte(k))
		gen.Put(k, []byte(k))
	}
	for _, prefix := range []string{"", "a/", "a/b", "a/b/", "a/é", "b", "h/", "h/0", "c/n/", "zz/", "/"} {
		for _, after := range []string{"", "a/b", "a/b/c", "h/0a", "a/z/"} {
			want := wantKeys(keys, prefix, after)
			general, err := drain(t, New(Options{Client: dirClient(gen), Bucket: "lst", Prefix: prefix, StartAfter: after, Parallelism: 4, PageKeys: 7}))
			if err != nil || !slices.Equal(general, want) {
				t.Fatalf("general-purpose listing of %q after %q: %v\n got %q\nwant %q", prefix, after, err, general, want)
			}
			for _, par := range []int{1, 3, 16} {
				for _, page := range []int32{0, 5} {
					d := NewDirectory(Options{Client: dirClient(dir), Bucket: dirBucket, Prefix: prefix, StartAfter: after, Parallelism: par, PageKeys: page}, DirectoryFolderKeys)
					got, err := drain(t, d)
					if err != nil || !slices.Equal(got, want) {
						t.Fatalf("directory listing of %q after %q, parallelism %d, pages of %d: %v\n got %q\nwant %q", prefix, after, par, page, err, got, want)
					}
					if st := d.Stats(); st.Keys != int64(len(want)) {
						t.Errorf("Stats.Keys = %d, want %d", st.Keys, len(want))
					}
				}
			}
		}
	}
	if c := dir.Counts(); c.Rejected != 0 {
		t.Errorf("the directory bucket refused %d requests", c.Rejected)
	}
}

// TestDirectorySkipFolder: folders SkipFolder rules out are never listed.
func TestDirectorySkipFolder(t *testing.T) {
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	var keys []string
	for _, f := range []string{"x/2026-10-30/", "x/2026-11-01/", "x/2026-11-02/", "x/2026-10-31/"} {
		for i := range 5 {
			k := fmt.Sprintf("%s%d/k", f, i)
			dir.Put(k, nil)
			keys = append(keys, k)
		}
	}
	d := NewDirectory(Options{Client: dirClient(dir), Bucket: dirBucket, Prefix: "x/", Parallelism: 4,
		SkipFolder: func(f string) bool { return strings.HasPrefix(f, "x/2026-10") }}, DirectoryFolderKeys)
	got, err := drain(t, d)
	if want := wantKeys(keys, "x/2026-11", ""); err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
	for _, l := range dir.Lists() {
		if strings.HasPrefix(l.Prefix, "x/2026-10") {
			t.Errorf("listed %q, a folder SkipFolder ruled out", l.Prefix)
		}
	}
	if st := d.Stats(); st.SkippedFolders != 2 || st.Requests != 1+2+10 {
		t.Errorf("stats %+v, want 2 folders skipped and 13 requests", st)
	}
}

// TestDirectoryFolderTooLarge: a folder over the bound fails the listing, naming it.
func TestDirectoryFolderTooLarge(t *testing.T) {
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	for i := range 6 {
		dir.Put(fmt.Sprintf("p/small/%d", i%5), nil)
		dir.Put(fmt.Sprintf("p/big/%d", i), nil)
	}
	_, err := drain(t, NewDirectory(Options{Client: dirClient(dir), Bucket: dirBucket, Prefix: "p/", Parallelism: 2, PageKeys: 2}, 5))
	var tl *FolderTooLargeError
	if !errors.As(err, &tl) || tl.Folder != "p/big/" || tl.Bucket != dirBucket || tl.Limit != 5 {
		t.Fatalf("err = %v, want FolderTooLargeError for p/big/", err)
	}
}

// TestDirectoryMemoryBound: folders listed ahead of a consumer that has stopped hold no
// more than the budget and a page per request in flight.
func TestDirectoryMemoryBound(t *testing.T) {
	dir := dirbucket.New(t, dirBucket, "ak", "sk")
	for f := range 100 {
		for i := range 20 {
			dir.Put(fmt.Sprintf("m/%03d/%02d", f, i), nil)
		}
	}
	const par, page = 2, 10
	d := NewDirectory(Options{Client: dirClient(dir), Bucket: dirBucket, Prefix: "m/", Parallelism: par, PageKeys: page}, DirectoryFolderKeys)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d.Run(ctx)
	if p, err := d.Next(); err != nil || len(p) != page {
		t.Fatalf("first page %d keys, %v", len(p), err)
	}
	// Wait until no worker can go on: nothing in flight and no folder admitted.
	for {
		d.mu.Lock()
		f, idle := d.nextFolder()
		stuck := d.inFlight == 0 && f == nil && !idle
		held, budget := d.aheadN, d.budget
		d.mu.Unlock()
		if stuck {
			if held > budget+par*page {
				t.Fatalf("folders ahead hold %d entries, budget %d", held, budget)
			}
			if held < budget {
				t.Fatalf("folders ahead hold %d entries, less than the budget %d, and no worker lists", held, budget)
			}
			break
		}
		time.Sleep(time.Millisecond)
	}
	got := 1
	for {
		p, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		if p == nil {
			break
		}
		got++
	}
	if got != 100*20/page {
		t.Errorf("%d pages, want %d", got, 100*20/page)
	}
}

func TestIsDirectoryBucket(t *testing.T) {
	for name, want := range map[string]bool{"a--usw2-az1--x-s3": true, "ap--use1-az4--xa-s3": true, "x-s3": false, "logs": false, "a--x-s3-b": false} {
		if got := IsDirectoryBucket(name); got != want {
			t.Errorf("IsDirectoryBucket(%q) = %v", name, got)
		}
		if _, dir := Open(Options{Bucket: name}).(*Directory); dir != want {
			t.Errorf("Open(%q) is a Directory: %v", name, dir)
		}
	}
}

// BenchmarkDirectorySort measures what a Directory adds per key over a Listing: the sort
// of a folder's keys once it is listed whole (the folder shuffled, as a directory bucket
// lists it).
//
//	go test -run '^$' -bench DirectorySort ./s3io/internal/listing
func BenchmarkDirectorySort(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			keys := make([]Object, n)
			for i := range keys {
				keys[i].Key = fmt.Sprintf("logs/2026/11/05/part-%08d-%x.ndjson.gz", i, i*2654435761)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			work := make([]Object, n)
			for b.Loop() {
				b.StopTimer()
				copy(work, keys)
				rng.Shuffle(n, func(i, j int) { work[i], work[j] = work[j], work[i] })
				b.StartTimer()
				slices.SortFunc(work, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/key")
		})
	}
}
