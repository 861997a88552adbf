package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function1x1(failureRow)
}

// failureRow renders the fields of a Failure a test can predict.
func failureRow(f s3io.Failure) string {
	return fmt.Sprintf("%s|%s|%s|emitted=%d|etag-set=%v", f.Bucket, f.Key, f.Reason, f.Index, f.ETag != "" && f.SplitID != "")
}

// badPrefix seeds bucket with three good objects and one of each kind of bad one, and
// returns the records the good ones (and the bad ones, before they fail) hold. The proxy
// overwrites one object and deletes another right before their first GET: after planning.
func badPrefix(t *testing.T, g *versitygw.Gateway, p *faultproxy.Proxy, bucket string) (want, failures []string) {
	g.CreateBucket(t, bucket)
	for i, enc := range []func(string) []byte{func(s string) []byte { return []byte(s) }, func(s string) []byte { return s3test.Gzip(s) }, s3test.Zstd} {
		text, recs := s3test.NDJSON(fmt.Sprintf("%s-good-%d", bucket, i), 300)
		g.Put(t, bucket, fmt.Sprintf("b/good-%d", i), enc(text))
		want = append(want, recs...)
	}
	g.Put(t, bucket, "b/overwritten.txt", []byte("old 1\nold 2\n"))
	g.Put(t, bucket, "b/deleted.txt", []byte("doomed\n"))
	// A valid gzip header, then garbage: nothing decodes.
	g.Put(t, bucket, "b/corrupt.gz", append(s3test.Gzip("x")[:10], bytes.Repeat([]byte{0xff, 0x00, 0x13}, 200)...))
	// One zstd block cut in half: nothing decodes.
	z := s3test.Zstd(strings.Repeat("truncated zstd line\n", 100))
	g.Put(t, bucket, "b/truncated.zst", z[:len(z)/2])
	// Three good lines, then one over MaxRecordBytes (1000): the three stay emitted.
	g.Put(t, bucket, "b/too-large.txt", []byte("ok 1\nok 2\nok 3\n"+strings.Repeat("L", 5000)+"\nnever\n"))
	want = append(want, "ok 1", "ok 2", "ok 3")
	failures = []string{
		bucket + "|b/overwritten.txt|overwritten|emitted=0|etag-set=true",
		bucket + "|b/deleted.txt|deleted|emitted=0|etag-set=true",
		bucket + "|b/corrupt.gz|corrupt|emitted=0|etag-set=true",
		bucket + "|b/truncated.zst|corrupt|emitted=0|etag-set=true",
		bucket + "|b/too-large.txt|record_too_large|emitted=3|etag-set=true",
	}
	return want, failures
}

func TestQuarantine(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	for _, tc := range []struct {
		name   string
		bucket string
	}{{"ReadWithFailures", "dead-letter"}, {"Read fails the job", "fail-job"}} {
		t.Run(tc.name, func(t *testing.T) {
			want, failures := badPrefix(t, g, p, tc.bucket)
			p.Reset()
			p.Before = faultproxy.BeforeFirstGet([]string{"b/overwritten.txt", "b/deleted.txt"}, func(key string) {
				if key == "b/overwritten.txt" {
					g.Put(t, tc.bucket, key, []byte("NEW CONTENT that must never be read\n"))
				} else {
					g.Delete(t, tc.bucket, key)
				}
			})
			cfg := s3io.Config{Bucket: tc.bucket, Prefix: "b/", Endpoint: p.URL, UsePathStyle: true, MaxRecordBytes: 1000}

			pl, s := beam.NewPipelineWithRoot()
			if tc.name == "ReadWithFailures" {
				records, fails := s3io.ReadWithFailures(s, cfg)
				passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, records), want)
				passert.EqualsList(s, beam.ParDo(s, failureRow, fails), failures)
				pr, err := ptest.RunWithMetrics(pl)
				if err != nil {
					t.Fatalf("ReadWithFailures must let the job succeed: %v", err)
				}
				c := s3test.Counters(pr, s3io.MetricsNamespace)
				if c["objects_failed"] != 5 || c["objects_failed_corrupt"] != 2 || c["objects_failed_overwritten"] != 1 ||
					c["objects_failed_deleted"] != 1 || c["objects_failed_record_too_large"] != 1 {
					t.Errorf("failure counters: %v", c)
				}
				return
			}
			passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)), want)
			err := ptest.Run(pl)
			if err == nil {
				t.Fatal("Read succeeded although five objects were quarantined")
			}
			msg := err.Error()
			for _, k := range []string{"5 object read(s) failed", "b/overwritten.txt", "b/deleted.txt", "b/corrupt.gz", "b/truncated.zst", "b/too-large.txt", "record_too_large"} {
				if !strings.Contains(msg, k) {
					t.Errorf("job error does not mention %q: %s", k, msg)
				}
			}
			if strings.Contains(msg, "NEW CONTENT") {
				t.Errorf("the overwritten object's new content was read: %s", msg)
			}
		})
	}
}

// Every object's first GET gets 503 SlowDown, its second 500, and its third breaks after
// half the body: the records are exact, with prism's dynamic splits and without them; and
// read by one reader each (no split), each object is finished by one ranged GET from where
// its body broke, not by a restart.
func TestTransientFaultsAreRetried(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "flaky")
	var want []string
	sizes := map[string]int64{}
	for i := 0; i < 12; i++ {
		text, recs := s3test.NDJSON(fmt.Sprintf("flaky-%d", i), 400+i*37)
		data := []byte(text)
		switch i % 3 {
		case 1:
			data = s3test.Gzip(text)
		case 2:
			data = s3test.Zstd(text)
		}
		key := fmt.Sprintf("f/%02d", i)
		g.Put(t, "flaky", key, data)
		sizes[key] = int64(len(data))
		want = append(want, recs...)
	}
	read := func(t *testing.T) (*faultproxy.Proxy, map[string]int64) {
		p := faultproxy.New(t, g.URL)
		p.Decide = func(key string, n int) faultproxy.Fault {
			switch n {
			case 1:
				return faultproxy.Fault{Status: 503, Code: "SlowDown"}
			case 2:
				return faultproxy.Fault{Status: 500, Code: "InternalError"}
			case 3:
				return faultproxy.Fault{ResetAfter: sizes[key] / 2}
			}
			return faultproxy.Fault{}
		}
		c := runRead(t, s3io.Config{Bucket: "flaky", Prefix: "f/", Endpoint: p.URL, UsePathStyle: true}, want)
		if c["objects_failed"] != 0 {
			t.Errorf("counters %v: want no failure", c)
		}
		return p, c
	}
	t.Run("dynamic splits", func(t *testing.T) {
		// The SDK's backoff between attempts looks like a stall to prism, which splits the
		// read: a residual's GETs take some of the faults, and a fetch a split dropped may
		// end before its break. Every reset that a read got to is resumed, no more.
		p, c := read(t)
		resets := 0
		for key := range sizes {
			for _, get := range p.Gets(key) {
				if get.Reset {
					resets++
				}
			}
		}
		if c["body_resumes"] < 1 || c["body_resumes"] > int64(resets) {
			t.Errorf("counters %v: want between 1 and %d body resumes, one per broken body read", c, resets)
		}
	})
	t.Run("one reader each", func(t *testing.T) {
		// The exact GETs of the retries: prism must not split the read and add its own.
		old := *jobopts.Experiments
		*jobopts.Experiments = "prism_disable_sdf_split"
		defer func() { *jobopts.Experiments = old }()
		p, c := read(t)
		for key, size := range sizes {
			gets := p.Gets(key)
			if len(gets) != 4 {
				t.Errorf("%s: %d GETs %+v, want 503, 500, a broken body and one resume", key, len(gets), gets)
				continue
			}
			if want := fmt.Sprintf("bytes=%d-%d", size/2, size-1); gets[3].Range != want || gets[3].Bytes != size-size/2 {
				t.Errorf("%s: resume GET %+v, want Range %s for %d bytes", key, gets[3], want, size-size/2)
			}
		}
		if c["body_resumes"] != 12 {
			t.Errorf("counters %v: want 12 body resumes", c)
		}
	})
}

// A body that stalls longer than ReadTimeout is abandoned and resumed.
func TestStallLongerThanReadTimeout(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	g.CreateBucket(t, "stall")
	text, want := s3test.NDJSON("stall", 2000)
	g.Put(t, "stall", "s/obj", []byte(text))
	p.Decide = func(key string, n int) faultproxy.Fault {
		if n == 1 {
			return faultproxy.Fault{StallAfter: 4096, Stall: 3 * time.Second}
		}
		return faultproxy.Fault{}
	}
	cfg := s3io.Config{Bucket: "stall", Prefix: "s/", Endpoint: p.URL, UsePathStyle: true, ReadTimeout: 300 * time.Millisecond}
	pl, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)), want)
	if err := ptest.Run(pl); err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	// prism may also split the stalled element (it asks after ~300 ms without progress),
	// which adds a residual's GET from the last record boundary; the stalled body itself
	// must be resumed from the byte where it stopped.
	resumed := false
	for _, g := range p.Gets("s/obj") {
		resumed = resumed || g.Range == fmt.Sprintf("bytes=4096-%d", len(text)-1)
	}
	if gets := p.Gets("s/obj"); gets[0].Bytes != 4096 || !resumed {
		t.Errorf("GETs %+v: want the stalled one and a resume from byte 4096", gets)
	}
}

// Configuration mistakes fail at once, saying what to fix.
func TestFatalErrorsFailFast(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "exists")
	g.Put(t, "exists", "k/x", []byte("x\n"))
	for _, tc := range []struct {
		name, bucket, secret string
		want                 []string
	}{
		{"wrong secret key", "exists", "not-the-secret", []string{"SignatureDoesNotMatch", "credentials"}},
		{"missing bucket", "no-such-bucket-here", "", []string{"no-such-bucket-here", "NoSuchBucket"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.secret != "" {
				t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			}
			pl, s := beam.NewPipelineWithRoot()
			s3io.Read(s, s3io.Config{Bucket: tc.bucket, Prefix: "k/", Endpoint: g.URL, UsePathStyle: true})
			start := time.Now()
			err := ptest.Run(pl)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("the job succeeded")
			}
			if elapsed > 10*time.Second {
				t.Errorf("took %v to fail, want under 10 s", elapsed)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q: %v", w, err)
				}
			}
		})
	}
}
