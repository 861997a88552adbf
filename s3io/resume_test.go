package s3io

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// resumeFixture is one object on an in-process S3 server, and a reader DoFn set up for it.
type resumeFixture struct {
	srv  *s3test.Server
	fn   *reader
	desc SplitDescriptor
	key  string
	recs []string // the records the object holds, in order
	ends []int64  // decompressed offset just past each record
}

// newResumeFixture stores n lines of varied lengths, encoded by enc, as key.
func newResumeFixture(t *testing.T, key string, n int, enc func([]byte) []byte, cfg Config) *resumeFixture {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	var plain bytes.Buffer
	var recs []string
	var ends []int64
	for i := 0; i < n; i++ {
		r := fmt.Sprintf("record-%05d-%s", i, strings.Repeat("x", rng.IntN(300)))
		plain.WriteString(r + "\n")
		recs = append(recs, r)
		ends = append(ends, int64(plain.Len()))
	}
	f := newObjectFixture(t, key, enc(plain.Bytes()), recs, cfg)
	f.ends = ends
	return f
}

// newObjectFixture stores data, which holds recs, as key.
func newObjectFixture(t *testing.T, key string, data []byte, recs []string, cfg Config) *resumeFixture {
	t.Helper()
	f := &resumeFixture{srv: s3test.New(t), key: key, recs: recs}
	f.srv.CreateBucket(t, "resume")
	etag := f.srv.Put(t, "resume", key, data)
	members := []Member{{Key: key, Size: int64(len(data)), ETag: etag}}
	f.desc = SplitDescriptor{ID: splitID("resume", members), Bucket: "resume", Members: members}
	cfg.Bucket, cfg.Endpoint, cfg.UsePathStyle = "resume", f.srv.URL, true
	f.fn = &reader{Cfg: cfg.WithDefaults()}
	if err := f.fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.fn.Teardown)
	return f
}

// run processes rest, calling split(rt, n) after the n-th record it emits; it returns the
// records emitted.
func (f *resumeFixture) run(t *testing.T, rest restriction, split func(rt *sdf.LockRTracker, n int)) []string {
	t.Helper()
	got, _ := f.runCounted(t, rest, split)
	return got
}

// runBatched reads rest with ReadBatches' DoFn, set up as f.fn is, and returns the records
// of its batches and the s3io counters the read updated.
func (f *resumeFixture) runBatched(t *testing.T, rest restriction) ([]string, map[string]int64) {
	t.Helper()
	bf := &readBatchesFn{reader: reader{Cfg: f.fn.Cfg}}
	if err := bf.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer bf.Teardown()
	ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), "batches")
	rt := bf.CreateTracker(rest)
	var got []string
	err := bf.ProcessElement(ctx, rt, f.desc, func(b RecordBatch) {
		for _, r := range b.All() {
			got = append(got, string(r))
		}
	}, func(fl Failure) { t.Errorf("unexpected failure: %v", fl) })
	if err != nil || !rt.IsDone() {
		t.Fatalf("batched read of %+v: %v, done=%v", rest, err, rt.IsDone())
	}
	return got, countersOf(ctx)
}

// countersOf returns the s3io counters updated under ctx.
func countersOf(ctx context.Context) map[string]int64 {
	counters := map[string]int64{}
	for _, c := range metrics.ResultsExtractor(ctx).AllMetrics().Counters() {
		if c.Key.Namespace == MetricsNamespace {
			counters[c.Key.Name] += c.Result()
		}
	}
	return counters
}

// runCounted is run, also returning the s3io counters the read updated. It reads as a
// residual does on another worker process: with nothing handed over from an earlier read
// (these tests are of the reads that resume on their own).
func (f *resumeFixture) runCounted(t *testing.T, rest restriction, split func(rt *sdf.LockRTracker, n int)) ([]string, map[string]int64) {
	t.Helper()
	forgetHandovers()
	ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), "read")
	rt := f.fn.CreateTracker(rest)
	var got []string
	err := f.fn.process(ctx, rt, f.desc, func(_ int, _ int64, _ string, rec []byte) {
		got = append(got, string(rec))
		if split != nil {
			split(rt, len(got))
		}
	}, func(fl Failure) { t.Errorf("unexpected failure: %v", fl) })
	if err != nil {
		t.Fatalf("process %+v: %v", rest, err)
	}
	if !rt.IsDone() || rt.GetError() != nil {
		t.Fatalf("tracker of %+v: done=%v err=%v", rest, rt.IsDone(), rt.GetError())
	}
	return got, countersOf(ctx)
}

// checkpointAfter returns a run callback that checkpoints (TrySplit(0)) after the k-th
// record and stores the residual.
func checkpointAfter(t *testing.T, k int, residual *restriction) func(*sdf.LockRTracker, int) {
	return func(rt *sdf.LockRTracker, n int) {
		if n == k {
			_, r, err := rt.TrySplit(0)
			if err != nil || r == nil {
				t.Fatalf("TrySplit(0) = %v, %v", r, err)
			}
			*residual = r.(restriction)
		}
	}
}

func identity(b []byte) []byte { return b }

func gzipEnc(b []byte) []byte { return s3test.Gzip(string(b)) }

func zstdEnc(b []byte) []byte { return s3test.Zstd(string(b)) }

// resumeEncodings are the stored forms the resume tests read: named by key, encoded by enc.
var resumeEncodings = []struct {
	name string
	enc  func([]byte) []byte
}{{"plain.txt", identity}, {"gzip.txt.gz", gzipEnc}, {"zstd.txt.zst", zstdEnc}}

// A checkpoint (fraction 0) after k records hands the residual a resume hint: an
// uncompressed object is resumed with a ranged GET starting exactly where record k starts,
// so nothing already read is fetched again; a compressed one skips unframed to it.
func TestCheckpointResumeReadsNothingTwice(t *testing.T) {
	for _, tc := range resumeEncodings {
		t.Run(tc.name, func(t *testing.T) {
			f := newResumeFixture(t, tc.name, 3000, tc.enc, Config{})
			var residual restriction
			primary := f.run(t, fullRestriction(f.desc), checkpointAfter(t, 1234, &residual))
			k := int64(len(primary)) // the end of the run of claims holding record 1234
			if k < 1234 || k >= 3000 {
				t.Fatalf("primary emitted %d records after a checkpoint at 1234", k)
			}
			want := resumeHint{Index: k, Offset: f.ends[k-1], StoredOffsets: tc.name == "plain.txt"}
			if residual.Start != (position{Member: 0, Index: k}) || residual.Resume != want {
				t.Fatalf("residual = %+v, want start (0,%d) and resume %+v", residual, k, want)
			}
			rest, counters := f.runCounted(t, residual, nil)
			if got := append(primary, rest...); !slices.Equal(got, f.recs) {
				t.Fatalf("primary+residual gave %d records, want the object's %d in order", len(got), len(f.recs))
			}
			// What the residual decoded again: nothing for the plain object, read from the
			// resume point; the compressed ones decode (unframed) everything before it.
			redecoded := f.ends[k-1]
			if tc.name == "plain.txt" {
				redecoded = 0
			}
			if counters["redecoded_bytes"] != redecoded || counters["skipped_records"] != 0 {
				t.Errorf("residual counters %v: want redecoded_bytes %d and no skipped records", counters, redecoded)
			}
			// ReadBatches resumes the same way and counts the same.
			batched, bc := f.runBatched(t, residual)
			if !slices.Equal(batched, rest) || bc["redecoded_bytes"] != redecoded || bc["skipped_records"] != 0 {
				t.Errorf("batched residual: %d records (want the %d of Read's), counters %v: want redecoded_bytes %d", len(batched), len(rest), bc, redecoded)
			}
			// The residual's parts cover [resume point, end) exactly and nothing before it:
			// the plain one starts at the resume offset, the compressed ones at byte 0.
			size := f.desc.Members[0].Size
			from := int64(0)
			if tc.name == "plain.txt" {
				from = f.ends[k-1]
			}
			if covered, bytes := coveredFrom(t, f.srv.Requests(tc.name), from); covered != size || (tc.name == "plain.txt" && bytes != size-from) {
				t.Errorf("the residual's GETs cover [%d, %d) with %d bytes; want [%d, %d) with %d", from, covered, bytes, from, size, size-from)
			}
		})
	}
}

// coveredFrom follows the chain of ranged GETs that starts exactly at from (a part ends
// where the next begins) and returns where it ends and how many body bytes it carried. A
// restriction's parts are aligned on where its read began, so another read's GETs of the
// same object (cancelled ones included, which may reach the server late) are not part of
// the chain unless they start at the same offsets.
func coveredFrom(t *testing.T, reqs []s3test.Request, from int64) (end, bytes int64) {
	t.Helper()
	end = from
	for {
		next := -1
		for i, r := range reqs {
			if a, _, ok := parseRange(r.Range); ok && a == end && r.Bytes > 0 || r.Range == "" && end == 0 {
				next = i
			}
		}
		if next < 0 {
			return end, bytes
		}
		r := reqs[next]
		reqs = append(reqs[:next:next], reqs[next+1:]...)
		bytes += r.Bytes
		end += r.Bytes
	}
}

// parseRange parses "bytes=a-b".
func parseRange(h string) (a, b int64, ok bool) {
	_, err := fmt.Sscanf(h, "bytes=%d-%d", &a, &b)
	return a, b, err == nil
}

// A split at a fraction inside the only member lands on a record estimated from the bytes
// per record so far; the residual resumes at the last known boundary and skips by count to
// its first record. Primary and residual together hold every record once.
func TestFractionalSplitInsideMember(t *testing.T) {
	f := newResumeFixture(t, "big.txt", 5000, identity, Config{})
	var residual restriction
	primary := f.run(t, fullRestriction(f.desc), func(rt *sdf.LockRTracker, n int) {
		if n == 1000 {
			_, r, err := rt.TrySplit(0.5)
			if err != nil || r == nil {
				t.Fatalf("TrySplit(0.5) = %v, %v", r, err)
			}
			residual = r.(restriction)
		}
	})
	if residual.Start.Member != 0 || residual.Start.Index <= 1000 || residual.Start.Index >= 5000 {
		t.Fatalf("residual starts at %v, want inside member 0 past record 1000", residual.Start)
	}
	// The hint is the end of the run of claims holding record 1000, the last claim.
	h := residual.Resume.Index
	if !residual.Resume.StoredOffsets || h < 1000 || h >= residual.Start.Index || residual.Resume.Offset != f.ends[h-1] {
		t.Fatalf("residual resume = %+v, want a record from 1000 to %d at its byte", residual.Resume, residual.Start.Index)
	}
	if int64(len(primary)) != residual.Start.Index {
		t.Fatalf("primary emitted %d records, want %d", len(primary), residual.Start.Index)
	}
	rest, counters := f.runCounted(t, residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, f.recs) {
		t.Fatalf("primary+residual gave %d records, want %d in order", len(got), len(f.recs))
	}
	// It decoded again only the records between the resume point and its first record.
	start := residual.Start.Index
	if skipped, redecoded := counters["skipped_records"], counters["redecoded_bytes"]; skipped != start-h || redecoded != f.ends[start-1]-f.ends[h-1] {
		t.Errorf("residual skipped %d records and decoded %d bytes again, want %d and %d", skipped, redecoded, start-h, f.ends[start-1]-f.ends[h-1])
	}
	if batched, bc := f.runBatched(t, residual); !slices.Equal(batched, rest) || bc["skipped_records"] != start-h || bc["redecoded_bytes"] != f.ends[start-1]-f.ends[h-1] {
		t.Errorf("batched residual: %d records (want %d), counters %v", len(batched), len(rest), bc)
	}
	// The residual reads from the resume point, not from byte 0.
	if covered, _ := coveredFrom(t, f.srv.Requests("big.txt"), f.ends[h-1]); covered != f.desc.Members[0].Size {
		t.Errorf("GETs %+v do not cover the object from the resume point %d", f.srv.Requests("big.txt"), f.ends[h-1])
	}
}

// A body that breaks mid-stream is resumed with one ranged GET from the byte where it broke,
// transparently to the decompressor and the framer.
func TestBrokenBodyResumesWithRange(t *testing.T) {
	for _, tc := range resumeEncodings {
		t.Run(tc.name, func(t *testing.T) {
			f := newResumeFixture(t, tc.name, 3000, tc.enc, Config{})
			size := f.desc.Members[0].Size
			cut := size / 3
			f.srv.SetFault(tc.name, "", 1, faultproxy.Fault{ResetAfter: cut})
			if got := f.run(t, fullRestriction(f.desc), nil); !slices.Equal(got, f.recs) {
				t.Fatalf("got %d records, want %d in order", len(got), len(f.recs))
			}
			// Whichever part broke, one more GET resumes it from the byte where it broke to the
			// part's end, and the other parts are untouched.
			reqs := f.srv.Requests(tc.name)
			var broken *s3test.Request
			for i := range reqs {
				if reqs[i].Bytes == cut {
					broken = &reqs[i]
				}
			}
			if broken == nil {
				t.Fatalf("GETs = %+v, want one broken after %d bytes", reqs, cut)
			}
			start, end := int64(0), size-1
			if a, b, ok := parseRange(broken.Range); ok {
				start, end = a, b
			}
			want := fmt.Sprintf("bytes=%d-%d", start+cut, end)
			if !slices.ContainsFunc(reqs, func(r s3test.Request) bool { return r.Range == want && r.Bytes == end+1-start-cut }) {
				t.Errorf("GETs = %+v, want a resume with Range %s and %d bytes", reqs, want, end+1-start-cut)
			}
			if covered, bytes := coveredFrom(t, reqs, 0); covered != size || bytes != size {
				t.Errorf("GETs %+v cover [0, %d) with %d bytes, want the object's %d exactly once", reqs, covered, bytes, size)
			}
		})
	}
}

// Segments own the records that start inside their byte range, wherever the range ends:
// inside a record, right after a newline, or on one.
func TestSegmentsPartitionRecords(t *testing.T) {
	f := newResumeFixture(t, "seg.ndjson", 2000, identity, Config{Framer: "lines"})
	size := f.desc.Members[0].Size
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 20; round++ {
		cuts := []int64{0, size}
		for range 1 + rng.IntN(8) {
			switch rng.IntN(3) {
			case 0:
				cuts = append(cuts, f.ends[rng.IntN(len(f.ends)-1)]) // a record's first byte
			case 1:
				cuts = append(cuts, f.ends[rng.IntN(len(f.ends)-1)]-1) // its newline
			default:
				cuts = append(cuts, 1+rng.Int64N(size-1))
			}
		}
		slices.Sort(cuts)
		cuts = slices.Compact(cuts)
		var got []string
		for i := 0; i+1 < len(cuts); i++ {
			m := f.desc.Members[0]
			m.Start, m.End = cuts[i], cuts[i+1]
			seg := SplitDescriptor{ID: "seg", Bucket: "resume", Members: []Member{m}}
			rt := f.fn.CreateTracker(fullRestriction(seg))
			err := f.fn.process(context.Background(), rt, seg, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
				func(fl Failure) { t.Errorf("unexpected failure: %v", fl) })
			if err != nil {
				t.Fatalf("segment [%d,%d): %v", m.Start, m.End, err)
			}
		}
		if !slices.Equal(got, f.recs) {
			t.Fatalf("segments %v gave %d records, want %d in order", cuts, len(got), len(f.recs))
		}
	}
}
