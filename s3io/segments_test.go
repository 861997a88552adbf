package s3io

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io/internal/decode"
)

// unitText returns n records of random characters (compressing to about two thirds, as
// real logs do not compress to nothing) and the records.
func unitText(n int) ([]byte, []string) {
	r := rand.New(rand.NewPCG(5, uint64(n)))
	var b bytes.Buffer
	recs := make([]string, n)
	for i := range recs {
		word := make([]byte, 40+r.IntN(400))
		for j := range word {
			word[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[r.IntN(36)]
		}
		recs[i] = fmt.Sprintf(`{"i":%d,"w":"%s"}`, i, word)
		b.WriteString(recs[i] + "\n")
	}
	return b.Bytes(), recs
}

// unitObject is an object written by a real tool, with the stored offsets where its units
// start (nil when they are not known to the test).
type unitObject struct {
	key    string
	data   []byte
	starts []int64
}

func unitObjectsOf(t *testing.T, plain []byte) []unitObject {
	clitool.Need(t, "bgzip", "gzip", "zstd", "pbzip2", "bzip2")
	bg := clitool.Run(t, plain, "bgzip", "-c", "-@", "2")
	gz, gzStarts := clitool.RunChunks(t, plain, 200<<10, "gzip", "-c")
	zs, zsStarts := clitool.RunChunks(t, plain, 200<<10, "zstd", "-c", "-q")
	// pbzip2 -b1 writes a bzip2 -9 stream per 100,000 bytes: those chunks' outputs, cat'ed.
	pb := clitool.Run(t, plain, "pbzip2", "-b1", "-p2", "-c")
	pbChunks, pbStarts := clitool.RunChunks(t, plain, 100_000, "bzip2", "-9", "-c")
	if !bytes.Equal(pb, pbChunks) {
		t.Fatal("pbzip2 -b1 did not write the bzip2 -9 streams of its 100,000-byte chunks")
	}
	return []unitObject{
		{"bgzip.ndjson.gz", bg, clitool.BGZFBlocks(t, bg)},
		{"cat-gzip.ndjson.gz", gz, gzStarts},
		{"cat-zstd.ndjson.zst", zs, zsStarts},
		{"seekable.ndjson.zst", s3test.ZstdSeekable(plain, 150<<10, false), nil},
		{"pbzip2.ndjson.bz2", pb, pbStarts},
	}
}

// unitsFixture stores the tool-written objects and a single-unit gzip, zstd and bzip2 object of
// the same records on an in-process S3 server.
func unitsFixture(t *testing.T) (*s3test.Server, []unitObject, []string) {
	plain, recs := unitText(8000) // ~2 MiB
	srv := s3test.New(t)
	srv.CreateBucket(t, "units")
	objs := unitObjectsOf(t, plain)
	objs = append(objs,
		unitObject{"single.ndjson.gz", clitool.Run(t, plain, "gzip", "-c"), []int64{0}},
		unitObject{"single.ndjson.zst", clitool.Run(t, plain, "zstd", "-c", "-q"), []int64{0}},
		unitObject{"single.ndjson.bz2", clitool.Run(t, plain, "bzip2", "-c"), []int64{0}}) // one stream of 900 kB blocks
	for _, o := range objs {
		srv.Put(t, "units", o.key, o.data)
	}
	return srv, objs, recs
}

// Multi-unit gzip and zstd objects written by bgzip, gzip and zstd, and one in the
// zstd seekable format, are planned as segments cut at unit starts only (the seekable one
// at its seek table's frames, with no probe of its bytes); single-member objects stay whole.
// Every segment, read as the reader reads it, gives its own records, and together they give
// every record once, in order.
func TestCompressedObjectsPlannedAtUnits(t *testing.T) {
	srv, objs, recs := unitsFixture(t)
	const target = 256 << 10
	cfg := Config{Bucket: "units", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: target}
	byKey := map[string][]Member{}
	st, err := PlanDescriptors(t.Context(), cfg, func(d SplitDescriptor) error {
		for _, m := range d.Members {
			byKey[m.Key] = append(byKey[m.Key], m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	planned := srv.Requests("seekable.ndjson.zst")
	// Every GET made while planning is a probe, counted in PlanStats; a single-member object
	// costs one.
	var asked int64
	for _, r := range srv.Requests("") {
		a, b, ok := parseRange(r.Range)
		if !ok {
			t.Errorf("planning GET of %s without a range (%q): a probe reads a window", r.Key, r.Range)
		}
		asked += b - a + 1
	}
	if all := srv.Requests(""); st.ProbeRequests != int64(len(all)) || st.ProbeBytes <= 0 || st.ProbeBytes > asked {
		t.Errorf("PlanStats counts %d probe GETs of %d bytes; the server answered %d GETs for %d bytes", st.ProbeRequests, st.ProbeBytes, len(all), asked)
	}
	// A single-member object costs one probe: from the first cut, through unitProbeBytes
	// and the proof's slack, in requests of 64 KiB, 128 KiB, 256 KiB, 256 KiB, ... (6); a zstd one
	// first the suffix GET that finds no seek table.
	for _, o := range objs[len(objs)-3:] {
		var probe []s3test.Request
		for _, r := range srv.Requests(o.key) {
			a, b, _ := parseRange(r.Range)
			if strings.HasSuffix(o.key, ".zst") && b == int64(len(o.data))-1 && a == int64(len(o.data))-decode.ZstdSeekTail {
				continue
			}
			probe = append(probe, r)
		}
		first, _, _ := parseRange(probe[0].Range)
		_, last, _ := parseRange(probe[len(probe)-1].Range)
		if len(probe) > 6 || last+1-first > unitProbeBytes+2*decodeProofSlack {
			t.Errorf("%s: %d GETs for bytes [%d, %d] while planning, want one probe of at most 6 GETs and %d bytes: %+v",
				o.key, len(probe), first, last, unitProbeBytes+2*decodeProofSlack, probe)
		}
	}
	fn := &reader{Cfg: cfg.WithDefaults()}
	if err := fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	for _, o := range objs {
		ms := byKey[o.key]
		slices.SortFunc(ms, func(a, b Member) int { return int(a.Start - b.Start) })
		single := strings.HasPrefix(o.key, "single")
		if single {
			if len(ms) != 1 || !ms[0].whole() || ms[0].Codec != "" {
				t.Errorf("%s: a single unit planned as %+v, want it whole", o.key, ms)
			}
		} else if want := int64(len(o.data)) / target / 2; int64(len(ms)) < max(want, 2) {
			t.Errorf("%s (%d bytes): %d segments, want at least %d", o.key, len(o.data), len(ms), max(want, 2))
		}
		var got []string
		for i, m := range ms {
			if !single && (m.Codec == "" || (o.starts != nil && !slices.Contains(o.starts, m.Start))) {
				t.Errorf("%s: segment %d [%d, %d) codec %q does not start at a unit", o.key, i, m.Start, m.End, m.Codec)
			}
			d := SplitDescriptor{ID: fmt.Sprintf("seg-%d", i), Bucket: "units", Members: []Member{m}}
			err := fn.process(context.Background(), fn.CreateTracker(fullRestriction(d)), d, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
				func(fl Failure) { t.Errorf("%s: unexpected failure %v", o.key, fl) })
			if err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, recs) {
			t.Errorf("%s: its %d segments gave %d records, want the %d in order", o.key, len(ms), len(got), len(recs))
		}
		if !single {
			checkpointInSegment(t, fn, ms[len(ms)/2])
		}
	}
	// The seekable object was planned from its seek table: its GETs while planning are the
	// suffix GET of its last bytes (magic bytes come from the extension) and the decode of its
	// head that tells it from a tarball (tarInside), from byte 0 on in growing requests.
	suffix, head := 0, int64(0)
	for _, r := range planned {
		a, b, ok := parseRange(r.Range)
		switch {
		case ok && b == int64(len(objs[3].data))-1 && a >= b-(64<<10):
			suffix++
		case ok && a == head && b < tarProbeBytes:
			head = b + 1
		default:
			t.Errorf("seekable object read with %q while planning: its seek table should have been used", r.Range)
		}
	}
	if suffix != 1 || head == 0 || len(planned) > 4 {
		t.Errorf("seekable object: %d GETs while planning (%d suffix GETs, its head read to %d), want the suffix GET and at most 3 of its head", len(planned), suffix, head)
	}
}

func init() {
	register.Function2x0(unitsBatchRecords)
	register.Emitter1[string]()
}

func unitsBatchRecords(b RecordBatch, emit func(string)) {
	for _, r := range b.All() {
		emit(string(r))
	}
}

// On prism, Read and ReadBatches read the tool-written multi-unit objects (planned as
// segments) and the single-member ones exactly: every record of every object once. Each
// segment fetches its own bytes and at most unitSlack and one unitWindow past its end for
// the next unit's first record.
func TestCompressedSegmentsReadOnPrism(t *testing.T) {
	srv, objs, recs := unitsFixture(t)
	var want []string
	for range objs {
		want = append(want, recs...)
	}
	cfg := Config{Bucket: "units", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 256 << 10}
	p, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, Read(s, cfg)), want)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, MetricsNamespace)
	var stored, segments int64
	for _, o := range objs {
		stored += int64(len(o.data))
	}
	segments = c["segments_planned"]
	if segments < 4*4 {
		t.Errorf("segments_planned = %d, want the four multi-unit objects cut into at least 4 each", segments)
	}
	if c["raw_bytes"] < stored || c["raw_bytes"] > stored+segments*(unitSlack+unitWindow) {
		t.Errorf("raw_bytes = %d for %d stored bytes in %d segments: want at most %d past them per segment", c["raw_bytes"], stored, segments, unitSlack+unitWindow)
	}

	p, s = beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, unitsBatchRecords, ReadBatches(s, cfg)), want)
	if _, err := ptest.RunWithMetrics(p); err != nil {
		t.Fatalf("batched pipeline failed: %v", err)
	}
}

// checkpointInSegment reads segment m, checkpoints it halfway through its records, and reads
// the residual: together they give the segment's records once, and the residual decoded
// again only the segment's bytes before its resume point, not the object's.
func checkpointInSegment(t *testing.T, fn *reader, m Member) {
	t.Helper()
	d := SplitDescriptor{ID: "mid", Bucket: "units", Members: []Member{m}}
	read := func(rest restriction, split func(*sdf.LockRTracker, int)) ([]string, map[string]int64) {
		return readSegment(t, fn, d, rest, split)
	}
	all, _ := read(fullRestriction(d), nil)
	var residual restriction
	k := len(all) / 2
	primary, _ := read(fullRestriction(d), checkpointAfter(t, k, &residual))
	if k = len(primary); residual.Resume.StoredOffsets || residual.Resume.Index != int64(k) || k >= len(all) {
		t.Fatalf("%s [%d,%d): residual %+v, want a decoded resume at record %d, the end of the run of claims the checkpoint came in, inside the segment", m.Key, m.Start, m.End, residual, k)
	}
	forgetHandovers() // the residual resumes on its own, as on another worker
	rest, c := read(residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, all) {
		t.Fatalf("%s [%d,%d): primary and residual gave %d records, want the segment's %d", m.Key, m.Start, m.End, len(got), len(all))
	}
	if c["redecoded_bytes"] != residual.Resume.Offset || c["redecoded_bytes"] <= 0 || c["decompressed_bytes"] > 4*(m.End-m.Start)+unitSlack*4 {
		t.Errorf("%s [%d,%d): residual counters %v: want the segment's %d bytes before the resume point decoded again, no more", m.Key, m.Start, m.End, c, residual.Resume.Offset)
	}
}

// readSegment reads rest of d, the descriptor of one segment, as the reader does, calling
// split after each record, and returns the records and the read's counters.
func readSegment(t *testing.T, fn *reader, d SplitDescriptor, rest restriction, split func(*sdf.LockRTracker, int)) ([]string, map[string]int64) {
	t.Helper()
	m := d.Members[0]
	ctx := metrics.SetPTransformID(metrics.SetBundleID(context.Background(), "bundle"), fmt.Sprintf("read-%s-%d-%d", m.Key, m.Start, rest.Start.Index))
	rt := fn.CreateTracker(rest)
	var got []string
	err := fn.process(ctx, rt, d, func(_ int, _ int64, _ string, rec []byte) {
		got = append(got, string(rec))
		if split != nil {
			split(rt, len(got))
		}
	}, func(fl Failure) { t.Errorf("unexpected failure %v", fl) })
	if err != nil || !rt.IsDone() {
		t.Fatalf("segment %+v from %+v: %v, done=%v", m, rest, err, rt.IsDone())
	}
	return got, countersOf(ctx)
}

// A tar compressed into units (a tarball bgzip'd or pbzip2'd) is planned whole and read as
// its entries, whatever its name: cut into segments, its headers and padding would be
// framed as records. A name that says tar costs no probe; a misnamed one is known by the
// tar header its first unit decodes to.
func TestTarInUnitsIsNotCut(t *testing.T) {
	clitool.Need(t, "tar", "bgzip", "pbzip2")
	plain, recs := unitText(8000)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.ndjson"), plain, 0o644); err != nil {
		t.Fatal(err)
	}
	tarball := clitool.RunIn(t, dir, nil, "tar", "-cf", "-", "a.ndjson")
	srv := s3test.New(t)
	srv.CreateBucket(t, "units")
	objects := map[string][]byte{
		"named.tar.gz": clitool.Run(t, tarball, "bgzip", "-c"),
		"misnamed.gz":  clitool.Run(t, tarball, "bgzip", "-c"),
		"misnamed.bz2": clitool.Run(t, tarball, "pbzip2", "-b1", "-p2", "-c"),
		"plain.tbz2":   clitool.Run(t, tarball, "pbzip2", "-b1", "-p2", "-c"),
	}
	for k, v := range objects {
		srv.Put(t, "units", k, v)
	}
	cfg := Config{Bucket: "units", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 256 << 10}
	var members []Member
	if _, err := PlanDescriptors(t.Context(), cfg, func(d SplitDescriptor) error {
		members = append(members, d.Members...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(members) != len(objects) {
		t.Fatalf("planned %d members, want the %d objects whole: %+v", len(members), len(objects), members)
	}
	for _, r := range srv.Requests("") {
		if strings.Contains(r.Key, ".tar.") || strings.HasSuffix(r.Key, ".tbz2") {
			t.Errorf("%s was probed (%s) though its name says tar", r.Key, r.Range)
		}
	}
	fn := &reader{Cfg: cfg.WithDefaults()}
	if err := fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fn.Teardown()
	for _, m := range members {
		if !m.whole() || m.Codec != "" {
			t.Errorf("%s planned as a segment %+v", m.Key, m)
		}
		var got []string
		d := SplitDescriptor{ID: m.Key, Bucket: "units", Members: []Member{m}}
		err := fn.process(context.Background(), fn.CreateTracker(fullRestriction(d)), d, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
			func(fl Failure) { t.Errorf("%s: unexpected failure %v", m.Key, fl) })
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, recs) {
			t.Errorf("%s: %d records, want the tar entry's %d", m.Key, len(got), len(recs))
		}
	}
}
