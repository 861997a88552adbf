package s3io_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.Function1x1(keyAndData)
	register.Function1x1(recordID)
	register.Function1x2(withOne)
	register.Function2x1(sumInts)
}

// runRead reads cfg with s3io.Read on prism and asserts that the records are exactly want,
// as a multiset. It returns the pipeline's s3io counters.
func runRead(t *testing.T, cfg s3io.Config, want []string) map[string]int64 {
	t.Helper()
	p, s := beam.NewPipelineWithRoot()
	got := beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg))
	if len(want) == 0 {
		passert.Empty(s, got)
	} else {
		passert.EqualsList(s, got, want)
	}
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	return s3test.Counters(pr, s3io.MetricsNamespace)
}

func TestReadMixedPrefix(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "logs")
	var want []string
	add := func(key string, data []byte, recs ...string) {
		f.Put(t, "logs", key, data)
		want = append(want, recs...)
	}
	plain, plainRecs := s3test.NDJSON("plain", 500)
	add("2026/11/a-plain.ndjson", []byte(plain), plainRecs...)

	g1, g1Recs := s3test.NDJSON("gz-member-1", 300)
	g2, g2Recs := s3test.NDJSON("gz-member-2", 200)
	add("2026/11/b-multi.json.gz", s3test.Gzip(g1, g2), append(g1Recs, g2Recs...)...)

	z, zRecs := s3test.NDJSON("zstd", 400)
	add("2026/11/c.json.zst", s3test.Zstd(z), zRecs...)

	// Compression found by magic bytes, not by name.
	m, mRecs := s3test.NDJSON("gz-no-extension", 50)
	add("2026/11/d-gzip-without-extension", s3test.Gzip(m), mRecs...)

	add("2026/11/e-empty.txt", nil)
	add("2026/11/f-empty.gz", nil)
	add("2026/11/g-no-final-newline.txt", []byte("first\nsecond\nlast without newline"), "first", "second", "last without newline")
	add("2026/11/h-crlf.txt", []byte("crlf one\r\ncrlf two\r\n\r\nbare\rcr inside\r\n"), "crlf one", "crlf two", "", "bare\rcr inside")
	add("2026/11/i key with spaces.txt", []byte("spaced\n"), "spaced")
	add("2026/11/j-ünïcødé-日本.txt", []byte("unicode key\n"), "unicode key")
	add("2026/11/k-blank-lines.txt", []byte("\n\nx\n\n"), "", "", "x", "")
	add("2026/11/dir/", nil) // a directory marker: skipped, and it holds no records anyway
	f.Put(t, "logs", "2026/12/outside-prefix.txt", []byte("must not be read\n"))

	c := runRead(t, s3io.Config{Bucket: "logs", Prefix: "2026/11/", Endpoint: f.URL, UsePathStyle: true}, want)
	if got := f.Unpinned(); len(got) != 0 {
		t.Errorf("GETs without If-Match: %q", got)
	}
	if c["records"] != int64(len(want)) {
		t.Errorf("records counter = %d, want %d", c["records"], len(want))
	}
	if c["objects"] != 11 || c["objects_planned"] != 11 {
		t.Errorf("objects = %d, objects_planned = %d, want 11 (the directory marker is skipped)", c["objects"], c["objects_planned"])
	}
}

func TestReadFramers(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "frames")
	f.Put(t, "frames", "nd/a.ndjson", []byte("{\"a\":1}\n\n  \n{\"a\":2}\r\n\t\n{\"a\":3}"))
	var u32 bytes.Buffer
	for _, r := range []string{"one", "", "three\nwith newline", strings.Repeat("x", 70000)} {
		binary.Write(&u32, binary.BigEndian, uint32(len(r)))
		u32.WriteString(r)
	}
	f.Put(t, "frames", "u32/a.bin", u32.Bytes())
	f.Put(t, "frames", "u32/b.bin.zst", s3test.Zstd(u32.String()))

	t.Run("ndjson", func(t *testing.T) {
		runRead(t, s3io.Config{Bucket: "frames", Prefix: "nd/", Framer: "ndjson", Endpoint: f.URL, UsePathStyle: true},
			[]string{`{"a":1}`, `{"a":2}`, `{"a":3}`})
	})
	t.Run("u32be", func(t *testing.T) {
		recs := []string{"one", "", "three\nwith newline", strings.Repeat("x", 70000)}
		runRead(t, s3io.Config{Bucket: "frames", Prefix: "u32/", Framer: "u32be", Endpoint: f.URL, UsePathStyle: true},
			append(recs, recs...))
	})
}

func TestReadManyObjectsManySplits(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "many")
	var want []string
	const objects = 1234
	for i := 0; i < objects; i++ {
		text, recs := s3test.NDJSON(fmt.Sprintf("obj-%04d", i), 3)
		f.Put(t, "many", fmt.Sprintf("p/%04d.ndjson", i), []byte(text))
		want = append(want, recs...)
	}
	// Sequential listing: two pages. (Parallel listing is tested in list_test.go.)
	c := runRead(t, s3io.Config{Bucket: "many", Prefix: "p/", Endpoint: f.URL, UsePathStyle: true, MaxSplitMembers: 100, ListParallelism: 1}, want)
	if c["keys_listed"] != objects || c["list_requests"] != 2 {
		t.Errorf("keys_listed = %d, list_requests = %d; want %d and 2", c["keys_listed"], c["list_requests"], objects)
	}
	if c["objects"] != objects {
		t.Errorf("objects = %d, want %d", c["objects"], objects)
	}
	if pages := f.ListPages(); pages != 2 {
		t.Errorf("the sequential planner made %d ListObjectsV2 requests, want 2 pages of at most 1000 keys", pages)
	}
	cfg := s3io.Config{Bucket: "many", Prefix: "p/", Endpoint: f.URL, UsePathStyle: true, MaxSplitMembers: 100, ListParallelism: 1}
	planned := 0
	if _, err := s3io.PlanDescriptors(t.Context(), cfg, func(d s3io.SplitDescriptor) error {
		if len(d.Members) > 100 {
			t.Errorf("split %s holds %d members, over MaxSplitMembers", d.ID, len(d.Members))
		}
		planned++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c["splits_planned"] != int64(planned) || planned < 13 {
		t.Errorf("splits_planned = %d, want %d as PlanDescriptors planned (at least 13: 1234 objects, at most 100 per split)", c["splits_planned"], planned)
	}
}

func TestReadEmptyPrefix(t *testing.T) {
	f := s3test.New(t)
	f.CreateBucket(t, "empty")
	f.Put(t, "empty", "elsewhere/x.txt", []byte("x\n"))
	c := runRead(t, s3io.Config{Bucket: "empty", Prefix: "nothing/", Endpoint: f.URL, UsePathStyle: true}, nil)
	if c["splits_planned"] != 0 || c["records"] != 0 {
		t.Errorf("counters = %v, want no splits and no records", c)
	}
}
