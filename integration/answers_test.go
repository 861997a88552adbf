package integration

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// ignoringProxy returns a fault proxy in front of g that can drop If-Match and Range.
func ignoringProxy(t *testing.T, g *versitygw.Gateway) *faultproxy.Proxy {
	p := faultproxy.New(t, g.URL)
	p.Credentials = aws.Credentials{AccessKeyID: versitygw.AccessKey, SecretAccessKey: versitygw.SecretKey}
	return p
}

// Behind a proxy that drops If-Match in front of versitygw: objects overwritten right before
// their first GET (after planning) with new content of the same size, plain and gzip, are
// quarantined as overwritten with no record emitted; the other objects are read exactly.
func TestIfMatchIgnoredByProxy(t *testing.T) {
	g := versitygw.Start(t)
	p := ignoringProxy(t, g)
	p.IgnoreIfMatch = true
	g.CreateBucket(t, "pins")
	var want []string
	for i, enc := range []func(string) []byte{func(s string) []byte { return []byte(s) }, func(s string) []byte { return s3test.Gzip(s) }, s3test.Zstd} {
		text, recs := s3test.NDJSON(fmt.Sprintf("good-%d", i), 300)
		g.Put(t, "pins", fmt.Sprintf("b/good-%d", i), enc(text))
		want = append(want, recs...)
	}
	old, _ := s3test.NDJSON("over", 300)
	renamed := strings.ReplaceAll(old, `"over"`, `"OVER"`) // same size, other content
	newVersion := map[string][]byte{"b/over.ndjson": []byte(renamed), "b/over.ndjson.gz": s3test.Gzip(renamed)}
	g.Put(t, "pins", "b/over.ndjson", []byte(old))
	g.Put(t, "pins", "b/over.ndjson.gz", s3test.Gzip(old))
	p.Before = faultproxy.BeforeFirstGet([]string{"b/over.ndjson", "b/over.ndjson.gz"}, func(key string) {
		g.Put(t, "pins", key, newVersion[key])
	})
	cfg := s3io.Config{Bucket: "pins", Prefix: "b/", Endpoint: p.URL, UsePathStyle: true, Framer: "ndjson"}
	pl, s := beam.NewPipelineWithRoot()
	records, fails := s3io.ReadWithFailures(s, cfg)
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), want)
	passert.EqualsList(s, beam.ParDo(s, failureRow, fails), []string{
		"pins|b/over.ndjson|overwritten|emitted=0|etag-set=true",
		"pins|b/over.ndjson.gz|overwritten|emitted=0|etag-set=true",
	})
	pr, err := ptest.RunWithMetrics(pl)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	if c := s3test.Counters(pr, s3io.MetricsNamespace); c["objects_failed_overwritten"] != 2 || c["objects_failed"] != 2 {
		t.Errorf("counters %v: want 2 objects failed as overwritten", c)
	}
	for key := range newVersion {
		for _, get := range p.Gets(key) {
			if get.Status != 200 || get.IfMatch == "" {
				t.Errorf("%s: GET %+v; want the new version served (200) to a pinned GET", key, get)
			}
		}
	}
}

// Behind a proxy that drops Range in front of versitygw, every ranged GET is answered 200
// with the whole object: segments of a large plain object, objects read in many parts, gzip
// and zstd objects, and bodies the proxy breaks half-way and that are resumed, are all read
// exactly, with prism's dynamic splits and without them.
func TestRangeIgnoredByProxy(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "whole")
	var want []string
	put := func(key string, data []byte, recs []string) {
		g.Put(t, "whole", key, data)
		want = append(want, recs...)
	}
	text := func(src string, n int) (string, []string) {
		rng := rand.New(rand.NewPCG(uint64(len(src)), uint64(n)))
		var b strings.Builder
		var recs []string
		for i := range n {
			r := fmt.Sprintf(`{"src":%q,"i":%d,"r":"%016x%016x"}`, src, i, rng.Uint64(), rng.Uint64())
			b.WriteString(r + "\n")
			recs = append(recs, r)
		}
		return b.String(), recs
	}
	bigText, bigRecs := text("big", 16000)
	put("w/big.ndjson", []byte(bigText), bigRecs)
	gzText, gzRecs := text("gz", 8000)
	put("w/parts.ndjson.gz", s3test.Gzip(gzText), gzRecs)
	zsText, zsRecs := text("zs", 8000)
	put("w/parts.ndjson.zst", s3test.Zstd(zsText), zsRecs)
	resText, resRecs := text("resumed", 500)
	put("w/resumed.ndjson", []byte(resText), resRecs)
	resGz, resGzRecs := text("resumed-gz", 500)
	put("w/resumed.ndjson.gz", s3test.Gzip(resGz), resGzRecs)
	read := func(t *testing.T) (*faultproxy.Proxy, map[string]int64) {
		p := ignoringProxy(t, g)
		p.IgnoreRange = true
		p.Decide = func(key string, n int) faultproxy.Fault {
			if strings.HasPrefix(key, "w/resumed") && n == 1 {
				return faultproxy.Fault{ResetAt: 0.5}
			}
			return faultproxy.Fault{}
		}
		cfg := s3io.Config{Bucket: "whole", Prefix: "w/", Endpoint: p.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 256 << 10, PartBytes: 64 << 10}
		pl, s := beam.NewPipelineWithRoot()
		records, fails := s3io.ReadWithFailures(s, cfg)
		passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), want)
		passert.Empty(s, fails)
		pr, err := ptest.RunWithMetrics(pl)
		if err != nil {
			t.Fatalf("pipeline failed: %v", err)
		}
		c := s3test.Counters(pr, s3io.MetricsNamespace)
		return p, c
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
		old := *jobopts.Experiments
		*jobopts.Experiments = "prism_disable_sdf_split"
		defer func() { *jobopts.Experiments = old }()
		p, c := read(t)
		if c["segments_planned"] < 3 || c["body_resumes"] != 2 || c["range_ignored"] < 10 || c["objects_failed"] != 0 {
			t.Errorf("counters %v: want >= 3 segments, 2 body resumes, >= 10 ranged GETs answered whole, no failure", c)
		}
		for _, key := range []string{"w/resumed.ndjson", "w/resumed.ndjson.gz"} {
			gets := p.Gets(key)
			if len(gets) != 2 || gets[0].Range != "" || !gets[0].Reset || !strings.HasPrefix(gets[1].Range, "bytes=") || gets[1].Status != 200 {
				t.Errorf("%s: GETs %+v, want the whole object broken half-way, then a ranged resume answered 200", key, gets)
			}
		}
	})
}
