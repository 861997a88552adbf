package s3io_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// planNow plans cfg outside a pipeline, so that a test can change the bucket after planning.
func planNow(t *testing.T, cfg s3io.Config) []s3io.SplitDescriptor {
	t.Helper()
	var descs []s3io.SplitDescriptor
	if _, err := s3io.PlanDescriptors(context.Background(), cfg, func(d s3io.SplitDescriptor) error {
		descs = append(descs, d)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return descs
}

// etagOf returns the planned ETag of key.
func etagOf(t *testing.T, descs []s3io.SplitDescriptor, key string) string {
	t.Helper()
	for _, d := range descs {
		for _, m := range d.Members {
			if m.Key == key {
				return m.ETag
			}
		}
	}
	t.Fatalf("%s was not planned", key)
	return ""
}

// On prism, behind a server that ignores If-Match: objects overwritten after planning, one
// with new content of exactly the same size, are quarantined as overwritten by the ETag of
// the answer, with no record emitted; every other object is read exactly.
func TestPipelineIfMatchIgnored(t *testing.T) {
	srv := s3test.New(t)
	srv.IgnoreIfMatch(true)
	srv.CreateBucket(t, "pins")
	var want []string
	for i, enc := range []func(string) []byte{func(s string) []byte { return []byte(s) }, func(s string) []byte { return s3test.Gzip(s) }, s3test.Zstd} {
		text, recs := s3test.NDJSON(fmt.Sprintf("good-%d", i), 300)
		srv.Put(t, "pins", fmt.Sprintf("good-%d", i), enc(text))
		want = append(want, recs...)
	}
	old, _ := s3test.NDJSON("over", 300)
	srv.Put(t, "pins", "over.ndjson", []byte(old))
	srv.Put(t, "pins", "over.ndjson.gz", s3test.Gzip(old))
	cfg := s3io.Config{Bucket: "pins", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson"}
	descs := planNow(t, cfg)
	// The same records with another source name, of the same length: only the ETag differs.
	renamed := strings.ReplaceAll(old, `"over"`, `"OVER"`)
	if len(renamed) != len(old) || renamed == old {
		t.Fatal("the new version must differ from the old one and have its size")
	}
	srv.Put(t, "pins", "over.ndjson", []byte(renamed))
	srv.Put(t, "pins", "over.ndjson.gz", s3test.Gzip(renamed))

	p, s := beam.NewPipelineWithRoot()
	recs, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.CreateList(s, descs))
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, recs), want)
	passert.EqualsList(s, beam.ParDo(s, failureSummary, failures), []string{
		fmt.Sprintf("over.ndjson %s overwritten emitted=0", etagOf(t, descs, "over.ndjson")),
		fmt.Sprintf("over.ndjson.gz %s overwritten emitted=0", etagOf(t, descs, "over.ndjson.gz")),
	})
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_failed_overwritten"] != 2 || c["objects_failed"] != 2 {
		t.Errorf("counters %v: want 2 objects failed as overwritten", c)
	}
}

// On prism, behind a server that ignores If-Match: an object read in parts is overwritten
// with content of the same size after its first part was fetched. The next part's answer
// carries the new ETag and is refused, so exactly the first part's records (of the planned
// version) are emitted and the object is quarantined as overwritten.
func TestPipelinePartAfterSameSizeOverwrite(t *testing.T) {
	const part, recLen = 16 << 10, 64 // records of 64 bytes: a part holds 256 whole records
	srv := s3test.New(t)
	srv.IgnoreIfMatch(true)
	srv.CreateBucket(t, "over")
	record := func(tag string, i int) string {
		return fmt.Sprintf("%s %05d %s", tag, i, strings.Repeat("b", recLen-11))
	}
	var big, renamed strings.Builder
	for i := range 2000 {
		big.WriteString(record("big", i) + "\n")
		renamed.WriteString(record("NEW", i) + "\n")
	}
	srv.Put(t, "over", "a/big.txt", []byte(big.String()))
	small, smallRecs := s3test.NDJSON("small", 100)
	srv.Put(t, "over", "b/small.ndjson", []byte(small))
	cfg := s3io.Config{Bucket: "over", Endpoint: srv.URL, UsePathStyle: true, PartBytes: part, MaxRequestsInFlight: 1}
	descs := planNow(t, cfg)
	// The first part stalls on the server; meanwhile the object is overwritten. With one
	// request in flight the second part is only asked for after the first arrived.
	srv.SetFault("a/big.txt", "bytes=0-", 1, faultproxy.Fault{StallAfter: 1, Stall: 2 * time.Second})
	go func() {
		for len(srv.Requests("a/big.txt")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		srv.Put(t, "over", "a/big.txt", []byte(renamed.String()))
	}()
	want := smallRecs
	for i := range part / recLen {
		want = append(want, record("big", i))
	}
	p, s := beam.NewPipelineWithRoot()
	recs, failures := s3io.ReadSplitsWithFailures(s, cfg, beam.CreateList(s, descs))
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, recs), want)
	passert.EqualsList(s, beam.ParDo(s, failureSummary, failures), []string{fmt.Sprintf("a/big.txt %s overwritten emitted=%d", etagOf(t, descs, "a/big.txt"), part/recLen)})
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_failed_overwritten"] != 1 {
		t.Errorf("counters %v: want one object failed as overwritten", c)
	}
}

// randomNDJSON returns n records that compress poorly, so that a compressed object spans
// several parts, and the text holding them.
func randomNDJSON(src string, n int) (text string, recs []string) {
	rng := rand.New(rand.NewPCG(uint64(len(src)), uint64(n)))
	var b strings.Builder
	for i := range n {
		r := fmt.Sprintf(`{"src":%q,"i":%d,"r":"%016x%016x"}`, src, i, rng.Uint64(), rng.Uint64())
		b.WriteString(r + "\n")
		recs = append(recs, r)
	}
	return b.String(), recs
}

// On prism, behind a server that ignores Range (every ranged GET answered 200 with the whole
// object): segments of a large plain object, objects read in many parts, gzip and zstd
// objects and bodies that break and are resumed mid-object are all read exactly, each
// record once, and the answers used whole are counted, with prism's dynamic splits and
// without them.
func TestPipelineRangeIgnored(t *testing.T) {
	const part = 64 << 10
	read := func(t *testing.T) (*s3test.Server, map[string]int64) {
		srv := s3test.New(t)
		srv.IgnoreRange(true)
		srv.CreateBucket(t, "whole")
		var want []string
		put := func(key string, data []byte, recs []string) {
			srv.Put(t, "whole", key, data)
			want = append(want, recs...)
		}
		bigText, bigRecs := randomNDJSON("big", 16000) // ~900 KB: segments of 256 KiB, in parts
		put("seg/big.ndjson", []byte(bigText), bigRecs)
		gzText, gzRecs := randomNDJSON("gz", 8000) // compressed, still several parts
		put("z/parts.ndjson.gz", s3test.Gzip(gzText[:len(gzText)/2], gzText[len(gzText)/2:]), gzRecs)
		zsText, zsRecs := randomNDJSON("zs", 8000)
		put("z/parts.ndjson.zst", s3test.Zstd(zsText), zsRecs)
		// Under a part each, read with one whole-object GET whose body breaks half-way: the
		// resume asks for a range and is answered with the whole object again.
		resText, resRecs := randomNDJSON("resumed", 500)
		put("r/resumed.ndjson", []byte(resText), resRecs)
		resGz, resGzRecs := randomNDJSON("resumed-gz", 500)
		put("r/resumed.ndjson.gz", s3test.Gzip(resGz), resGzRecs)
		srv.SetFault("r/resumed.ndjson", "", 1, faultproxy.Fault{ResetAt: 0.5})
		srv.SetFault("r/resumed.ndjson.gz", "", 1, faultproxy.Fault{ResetAt: 0.5})
		small, smallRecs := s3test.NDJSON("small", 10)
		put("small.ndjson", []byte(small), smallRecs)

		cfg := s3io.Config{Bucket: "whole", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 256 << 10, PartBytes: part}
		p, s := beam.NewPipelineWithRoot()
		recs, failures := s3io.ReadWithFailures(s, cfg)
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, recs), want)
		passert.Empty(s, failures)
		pr, err := ptest.RunWithMetrics(p)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		return srv, s3test.Counters(pr, s3io.MetricsNamespace)
	}
	t.Run("dynamic splits", func(t *testing.T) {
		// A split's residual fetches on its own, and a fetch a split dropped may end before
		// its break: the counts are bounds.
		_, c := read(t)
		if c["segments_planned"] < 3 || c["body_resumes"] > 2 || c["range_ignored"] < 10 || c["objects_failed"] != 0 {
			t.Errorf("counters %v: want >= 3 segments, at most 2 body resumes, >= 10 ranged GETs answered whole, no failure", c)
		}
	})
	t.Run("one reader each", func(t *testing.T) {
		// Exact GET counts: prism must not split reads and add GETs of its own.
		oldExp := *jobopts.Experiments
		*jobopts.Experiments = "prism_disable_sdf_split"
		defer func() { *jobopts.Experiments = oldExp }()
		srv, c := read(t)
		if c["segments_planned"] < 3 || c["body_resumes"] != 2 || c["range_ignored"] < 10 || c["objects_failed"] != 0 {
			t.Errorf("counters %v: want >= 3 segments, 2 body resumes, >= 10 ranged GETs answered whole, no failure", c)
		}
		for _, key := range []string{"r/resumed.ndjson", "r/resumed.ndjson.gz"} {
			if reqs := srv.Requests(key); len(reqs) != 2 || reqs[0].Range != "" || !strings.HasPrefix(reqs[1].Range, "bytes=") {
				t.Errorf("%s: GETs %+v, want the whole object, then one resume asking for a range", key, reqs)
			}
		}
	})
}
