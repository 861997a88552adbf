package fakelist

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// client is the real SDK client, path-style, as the planner builds it. It does not retry, so
// that a server bug fails the test at once instead of backing off.
func client(s *Server) *s3.Client {
	return s3.New(s3.Options{
		RetryMaxAttempts: 1,
		BaseEndpoint:     aws.String(s.URL),
		UsePathStyle:     true,
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
	})
}

// expected computes a listing from every key directly, without binary search: the entries
// (keys and common prefixes, in byte order) under prefix that are greater than startAfter.
func expected(key func(int) string, n int, prefix, delim, startAfter string) (keys, prefixes []string) {
	for i := range n {
		k := key(i)
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if delim != "" {
			if j := strings.Index(k[len(prefix):], delim); j >= 0 {
				cp := k[:len(prefix)+j+len(delim)]
				if cp > startAfter && (len(prefixes) == 0 || prefixes[len(prefixes)-1] != cp) {
					prefixes = append(prefixes, cp)
				}
				continue
			}
		}
		if k > startAfter {
			keys = append(keys, k)
		}
	}
	return keys, prefixes
}

// listAll pages through a listing with the SDK's paginator and checks every page.
func listAll(t *testing.T, c *s3.Client, in *s3.ListObjectsV2Input) (keys, prefixes []string, objects []types.Object, pages int) {
	t.Helper()
	p := s3.NewListObjectsV2Paginator(c, in)
	limit := int32(1000)
	if in.MaxKeys != nil {
		limit = *in.MaxKeys
	}
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		pages++
		n := len(page.Contents) + len(page.CommonPrefixes)
		if got := aws.ToInt32(page.KeyCount); int(got) != n || got > limit {
			t.Fatalf("page %d: KeyCount %d, %d entries, MaxKeys %d", pages, got, n, limit)
		}
		if aws.ToBool(page.IsTruncated) != (aws.ToString(page.NextContinuationToken) != "") {
			t.Fatalf("page %d: IsTruncated %v with NextContinuationToken %q", pages, aws.ToBool(page.IsTruncated), aws.ToString(page.NextContinuationToken))
		}
		if aws.ToBool(page.IsTruncated) && int32(n) != limit {
			t.Fatalf("page %d: truncated after %d entries, MaxKeys %d", pages, n, limit)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
			objects = append(objects, o)
		}
		for _, cp := range page.CommonPrefixes {
			prefixes = append(prefixes, aws.ToString(cp.Prefix))
		}
		if len(keys)+len(prefixes) > 2500 || pages > 2501 { // no listing here has more entries
			t.Fatalf("endless listing: %d entries in %d pages", len(keys)+len(prefixes), pages)
		}
	}
	return keys, prefixes, objects, pages
}

func TestLayoutsIncrease(t *testing.T) {
	for name, key := range map[string]func(int) string{
		"flat":          FlatKeys("data/", 2500),
		"foldered":      FolderedKeys("data/", 2500, 100),
		"flat-wide":     FlatKeys("", 20_000_000),
		"foldered-wide": FolderedKeys("", 5_000_000, 1000),
	} {
		for i := 1; i < 2500; i++ {
			if key(i-1) >= key(i) {
				t.Fatalf("%s: key %d %q >= key %d %q", name, i-1, key(i-1), i, key(i))
			}
		}
	}
	// Where the folder number gains a digit, and the end of a million keys.
	w := FolderedKeys("", 5_000_000, 1000)
	f := FlatKeys("", 20_000_000)
	for _, i := range []int{999_999, 1_000_000, 9_999_999, 10_000_000, 19_999_999} {
		if f(i-1) >= f(i) || i < 5_000_000 && w(i-1) >= w(i) {
			t.Fatalf("not increasing at %d: %q %q / %q %q", i, f(i-1), f(i), w(i-1), w(i))
		}
	}
	if got := FlatKeys("p/", 10)(42); !strings.HasPrefix(got, "p/part-0000042-") || !strings.HasSuffix(got, ".ndjson.gz") || len(got) != len("p/part-0000042-12345678.ndjson.gz") {
		t.Errorf("FlatKeys: %q", got)
	}
	if got := FolderedKeys("p/", 10000, 100)(4217); got != "p/dt=2024-042/part-00017.ndjson.gz" {
		t.Errorf("FolderedKeys: %q", got)
	}
}

func TestListMatchesDirectListing(t *testing.T) {
	const n = 2500
	layouts := []struct {
		name string
		key  func(int) string
	}{
		{"flat", FlatKeys("data/", n)},
		{"foldered", FolderedKeys("data/", n, 100)},
	}
	for _, l := range layouts {
		s := New(Options{Bucket: "b", N: n, Key: l.key})
		defer s.Close()
		c := client(s)
		k := l.key
		prefixes := []string{"", "data/", "data/dt=2024-003", "data/dt=2024-003/", "data/part-00012", "data/zzz", "a"}
		starts := []string{"", k(0), k(1234), k(n - 1), "data/", "data/dt=2024-007/", "data/dt=2024-007/part-00050", "data/dt=2024-007", "b", "data/part-0001"}
		for _, prefix := range prefixes {
			for _, delim := range []string{"", "/", "-0"} {
				for _, start := range starts {
					for _, maxKeys := range []int32{1000, 97, 7, 1} {
						// Small pages of every key are slow (the SDK decodes about 60,000 keys
						// a second here) and add no case: pages of 7 and 1 entries are for
						// ending pages on common prefixes.
						tiny := maxKeys == 7 || maxKeys == 1
						if maxKeys == 97 && prefix != "data/" || tiny && (delim != "/" || l.name == "flat" && prefix != "") ||
							maxKeys == 1 && start != "" || delim == "-0" && prefix != "data/" && maxKeys != 1000 {
							continue
						}
						name := fmt.Sprintf("%s/prefix=%q/delim=%q/start=%q/max=%d", l.name, prefix, delim, start, maxKeys)
						in := &s3.ListObjectsV2Input{Bucket: aws.String("b"), MaxKeys: aws.Int32(maxKeys)}
						if prefix != "" {
							in.Prefix = aws.String(prefix)
						}
						if delim != "" {
							in.Delimiter = aws.String(delim)
						}
						if start != "" {
							in.StartAfter = aws.String(start)
						}
						gotKeys, gotPrefixes, _, _ := listAll(t, c, in)
						wantKeys, wantPrefixes := expected(k, n, prefix, delim, start)
						if !slices.Equal(gotKeys, wantKeys) || !slices.Equal(gotPrefixes, wantPrefixes) {
							t.Fatalf("%s: got %d keys, %d prefixes %.5q; want %d keys, %d prefixes %.5q", name, len(gotKeys), len(gotPrefixes), gotPrefixes, len(wantKeys), len(wantPrefixes), wantPrefixes)
						}
					}
				}
			}
		}
	}
}

func TestObjectMetadata(t *testing.T) {
	const n = 2500
	key := FlatKeys("", n)
	s := New(Options{Bucket: "b", N: n, Key: key})
	defer s.Close()
	_, _, objs, pages := listAll(t, client(s), &s3.ListObjectsV2Input{Bucket: aws.String("b")})
	if len(objs) != n || pages != 3 {
		t.Fatalf("%d objects in %d pages, want %d in 3", len(objs), pages, n)
	}
	etags := map[string]bool{}
	for i, o := range objs {
		etag := aws.ToString(o.ETag)
		if aws.ToString(o.Key) != key(i) || aws.ToInt64(o.Size) != DefaultSize(i) || o.StorageClass != types.ObjectStorageClassStandard ||
			len(etag) != 34 || etag[0] != '"' || etag[33] != '"' || etags[etag] ||
			!aws.ToTime(o.LastModified).Equal(time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC)) {
			t.Fatalf("object %d: %+v", i, o)
		}
		etags[etag] = true
	}

	// Another generation changes every ETag; the caller's functions replace the defaults.
	s2 := New(Options{Bucket: "b", N: n, Key: key, Generation: 1,
		Size:         func(i int) int64 { return int64(i) },
		StorageClass: func(i int) string { return [...]string{"STANDARD", "GLACIER"}[i%2] },
	})
	defer s2.Close()
	_, _, objs2, _ := listAll(t, client(s2), &s3.ListObjectsV2Input{Bucket: aws.String("b")})
	for i, o := range objs2 {
		if etags[aws.ToString(o.ETag)] || aws.ToInt64(o.Size) != int64(i) || string(o.StorageClass) != [...]string{"STANDARD", "GLACIER"}[i%2] {
			t.Fatalf("generation 1, object %d: %+v", i, o)
		}
	}
}

func TestDelimiterGivesFolders(t *testing.T) {
	const n, per = 2500, 100
	s := New(Options{Bucket: "b", N: n, Key: FolderedKeys("data/", n, per), LogLimit: 100})
	defer s.Close()
	keys, prefixes, _, pages := listAll(t, client(s), &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("data/"), Delimiter: aws.String("/"), MaxKeys: aws.Int32(10)})
	if len(keys) != 0 || len(prefixes) != n/per || pages != 3 {
		t.Fatalf("%d keys, %d prefixes, %d pages", len(keys), len(prefixes), pages)
	}
	for i, p := range prefixes {
		if want := fmt.Sprintf("data/dt=2024-%03d/", i); p != want {
			t.Fatalf("prefix %d: %q, want %q", i, p, want)
		}
	}
	st := s.Stats()
	if st.Lists != 3 || st.Delimited != 3 || st.Undelimited != 0 || st.Probes != 3 || st.Entries != 25 || len(st.Log) != 3 ||
		st.Log[0] != (Request{Prefix: "data/", Delimiter: "/", MaxKeys: 10, Entries: 10, Truncated: true}) ||
		st.Log[2] != (Request{Prefix: "data/", Delimiter: "/", Continued: true, MaxKeys: 10, Entries: 5}) {
		t.Fatalf("stats: %+v", st)
	}
}

func TestMaxKeysZeroAndCap(t *testing.T) {
	s := New(Options{Bucket: "b", N: 50, Key: FlatKeys("", 50), MaxKeysCap: 20})
	defer s.Close()
	c := client(s)
	out, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), MaxKeys: aws.Int32(0)})
	if err != nil || len(out.Contents) != 0 || aws.ToBool(out.IsTruncated) || aws.ToInt32(out.KeyCount) != 0 {
		t.Fatalf("MaxKeys=0: %+v, %v", out, err)
	}
	out, err = c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), MaxKeys: aws.Int32(5000)})
	if err != nil || len(out.Contents) != 20 || !aws.ToBool(out.IsTruncated) || aws.ToInt32(out.MaxKeys) != 20 {
		t.Fatalf("MaxKeys above the cap: %d keys, %v", len(out.Contents), err)
	}
}

// specialKeys hold every character XML or URL encoding must change.
var specialKeys = func() []string {
	k := []string{"a b/c d", "a b/e", "a&b", "a+b", "a<b>'\"", "tab\tx", "cr\rlf\nx", "ctl\x01x/y", "é/ü ö", "100%.csv", "plain/key.gz", "q?x#y=z;"}
	sort.Strings(k)
	return k
}()

func specialServer() *Server {
	return New(Options{Bucket: "b", N: len(specialKeys), Key: func(i int) string { return specialKeys[i] }})
}

func TestXMLEscaping(t *testing.T) {
	s := specialServer()
	defer s.Close()
	c := client(s)
	// Every key but the one with a control character parses back exactly.
	var want []string
	for _, k := range specialKeys {
		if !strings.HasPrefix(k, "ctl") {
			want = append(want, k)
		}
	}
	// The keys before the one with a control character, then those after it.
	before, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), MaxKeys: aws.Int32(int32(slices.Index(specialKeys, "ctl\x01x/y")))})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range before.Contents {
		got = append(got, aws.ToString(o.Key))
	}
	after, _, _, _ := listAll(t, c, &s3.ListObjectsV2Input{Bucket: aws.String("b"), StartAfter: aws.String("ctm")})
	got = append(got, after...)
	if !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if got := string(appendEscaped(nil, "a<b>'\"&\t\r\n\x01é")); got != "a&lt;b&gt;&apos;&quot;&amp;&#x9;&#xd;&#xa;&#x1;é" {
		t.Errorf("appendEscaped: %q", got)
	}
	// As with S3, a control character makes the XML unparseable without encoding-type=url.
	_, err = c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), Prefix: aws.String("ctl")})
	if err == nil || !strings.Contains(err.Error(), "illegal character code U+0001") {
		t.Fatalf("control character without encoding-type: %v", err)
	}
}

func TestEncodingTypeURL(t *testing.T) {
	s := specialServer()
	defer s.Close()
	c := client(s)
	dec := func(s string) string {
		v, err := url.PathUnescape(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return v
	}
	for _, delim := range []string{"", "/", " "} {
		for _, start := range []string{"", "a b/c d", "a&b"} {
			in := &s3.ListObjectsV2Input{Bucket: aws.String("b"), EncodingType: types.EncodingTypeUrl, MaxKeys: aws.Int32(3)}
			if delim != "" {
				in.Delimiter = aws.String(delim)
			}
			if start != "" {
				in.StartAfter = aws.String(start)
			}
			var keys, prefixes []string
			p := s3.NewListObjectsV2Paginator(c, in)
			for p.HasMorePages() {
				page, err := p.NextPage(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if page.EncodingType != types.EncodingTypeUrl || aws.ToString(page.Delimiter) != strings.ReplaceAll(delim, " ", "%20") ||
					aws.ToString(page.StartAfter) != strings.NewReplacer(" ", "%20", "&", "%26").Replace(start) {
					t.Fatalf("page echoes %q %q %q", page.EncodingType, aws.ToString(page.Delimiter), aws.ToString(page.StartAfter))
				}
				for _, o := range page.Contents {
					if k := aws.ToString(o.Key); strings.ContainsAny(k, " +&<\t\x01") {
						t.Fatalf("key not encoded: %q", k)
					}
					keys = append(keys, dec(aws.ToString(o.Key)))
				}
				for _, cp := range page.CommonPrefixes {
					prefixes = append(prefixes, dec(aws.ToString(cp.Prefix)))
				}
			}
			wantKeys, wantPrefixes := expected(func(i int) string { return specialKeys[i] }, len(specialKeys), "", delim, start)
			if !slices.Equal(keys, wantKeys) || !slices.Equal(prefixes, wantPrefixes) {
				t.Fatalf("delim %q start %q: got %q %q, want %q %q", delim, start, keys, prefixes, wantKeys, wantPrefixes)
			}
		}
	}
	// The encoding itself: what s3-tests expects of S3.
	for in, want := range map[string]string{"quux ab/": "quux%20ab/", "asdf+b": "asdf%2Bb", "é/x": "%C3%A9/x", "a~b_c-d.e": "a~b_c-d.e", "100%": "100%25"} {
		if got := string(appendURLEncoded(nil, in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestOtherRequests(t *testing.T) {
	s := New(Options{Bucket: "b", N: 10, Key: FlatKeys("", 10)})
	defer s.Close()
	c := client(s)
	ctx := context.Background()
	code := func(err error) string {
		var ae smithy.APIError
		if errors.As(err, &ae) {
			return ae.ErrorCode()
		}
		return fmt.Sprint(err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("b")}); err != nil {
		t.Errorf("HeadBucket: %v", err)
	}
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String(FlatKeys("", 10)(3))}); code(err) != "NotImplemented" {
		t.Errorf("GET of a listed key: %v", err)
	}
	var nsk *types.NoSuchKey
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("b"), Key: aws.String("nope")}); !errors.As(err, &nsk) {
		t.Errorf("GET of another key: %v", err)
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("other")}); code(err) != "NoSuchBucket" {
		t.Errorf("another bucket: %v", err)
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("b"), ContinuationToken: aws.String("bogus")}); code(err) != "InvalidArgument" {
		t.Errorf("a bad token: %v", err)
	}
	if st := s.Stats(); st.Lists != 0 || st.Other != st.Requests || st.Other < 5 {
		t.Errorf("stats: %+v", st)
	}
}

// Timings are asserted from below only, or with a wide margin: a loaded machine makes
// requests slower, never faster.
func TestLatencyAndMaxInFlight(t *testing.T) {
	const parallel, latency = 8, 300 * time.Millisecond
	s := New(Options{Bucket: "b", N: 100, Key: FlatKeys("", 100), Latency: latency})
	defer s.Close()
	c := client(s)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, parallel)
	for i := range parallel {
		wg.Go(func() {
			_, err := c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("b"), StartAfter: aws.String(FlatKeys("", 100)(i * 10)), MaxKeys: aws.Int32(1)})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	st := s.Stats()
	if st.MaxInFlight != parallel || st.Probes != parallel || st.Undelimited != parallel {
		t.Errorf("stats: %+v", st)
	}
	if elapsed < latency || elapsed > parallel*latency/2 {
		t.Errorf("%d concurrent requests of %v took %v: not slept concurrently", parallel, latency, elapsed)
	}
	s.ResetStats()
	if st := s.Stats(); st.Requests != 0 || st.MaxInFlight != 0 {
		t.Errorf("after ResetStats: %+v", st)
	}
}
