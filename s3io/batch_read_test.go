package s3io_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function2x0(batchPositions)
	register.Function1x1(positionString)
	register.DoFn3x0[context.Context, s3io.RecordBatch, func(string)](&checkBatchFn{})
}

// batchPositions flattens a batch into its records, each as ReadWithPositions gives it.
func batchPositions(b s3io.RecordBatch, emit func(string)) {
	for idx, r := range b.All() {
		emit(fmt.Sprintf("%s|%s|%d|%s|%d|%s", b.SplitID, b.Key, b.Member, b.Entry, idx, r))
	}
}

// positionString is a Record as batchPositions writes one.
func positionString(r s3io.Record) string {
	return fmt.Sprintf("%s|%s|%d|%s|%d|%s", r.SplitID, r.Key, r.Member, r.Entry, r.Index, r.Data)
}

// checkBatchFn emits what is wrong with a batch, for passert.Empty: its bounds, and that its
// records are the consecutive records of one object (or archive entry) that its identity
// names. The test data makes that checkable: every record starts with "NAME#INDEX ", NAME
// the object's key (the entry's name in an archive) and INDEX its record index.
type checkBatchFn struct{ MaxRecords, MaxBytes int }

var (
	batchesAtRecordBound = beam.NewCounter("s3io_test", "batches_at_record_bound")
	batchesNearByteBound = beam.NewCounter("s3io_test", "batches_near_byte_bound")
	oversizedAlone       = beam.NewCounter("s3io_test", "oversized_records_alone")
	batchesSeen          = beam.NewCounter("s3io_test", "batches")
)

func (f *checkBatchFn) ProcessElement(ctx context.Context, b s3io.RecordBatch, emit func(string)) {
	id := fmt.Sprintf("batch %s/%d from %d (%s)", b.Key, b.Member, b.Index, b.Entry)
	batchesSeen.Inc(ctx, 1)
	if b.Len() == 0 || b.Len() > f.MaxRecords {
		emit(fmt.Sprintf("%s holds %d records; the bound is %d", id, b.Len(), f.MaxRecords))
	}
	size := 0
	for i := range b.Len() {
		r := b.Record(i)
		size += len(r)
		name := b.Key
		if b.Entry != "" {
			name = b.Entry
		}
		if want := fmt.Sprintf("%s#%d ", name, b.Index+int64(i)); !strings.HasPrefix(string(r), want) {
			emit(fmt.Sprintf("%s: record %d is %.40q, want it to start with %q", id, i, r, want))
		}
		if len(r) > f.MaxBytes {
			if b.Len() != 1 {
				emit(fmt.Sprintf("%s: a record of %d bytes, over the bound %d, shares a batch of %d", id, len(r), f.MaxBytes, b.Len()))
			} else {
				oversizedAlone.Inc(ctx, 1)
			}
		}
	}
	if size != len(b.Data) {
		emit(fmt.Sprintf("%s: its records hold %d bytes of the %d in Data", id, size, len(b.Data)))
	}
	if size > f.MaxBytes && b.Len() > 1 {
		emit(fmt.Sprintf("%s holds %d bytes; the bound is %d", id, size, f.MaxBytes))
	}
	if b.Len() == f.MaxRecords {
		batchesAtRecordBound.Inc(ctx, 1)
	}
	if size > f.MaxBytes*3/4 && size <= f.MaxBytes {
		batchesNearByteBound.Inc(ctx, 1)
	}
}

// lines returns n records "name#i pad" from index from on, and the text holding them.
func lines(name string, from, n int) (text string, recs []string) {
	var b strings.Builder
	for i := from; i < from+n; i++ {
		r := fmt.Sprintf("%s#%d %s", name, i, strings.Repeat("p", i%61))
		b.WriteString(r + "\n")
		recs = append(recs, r)
	}
	return b.String(), recs
}

// runPipeline runs p on prism and returns its s3io counters and this file's.
func runPipeline(t *testing.T, p *beam.Pipeline) (lib, tests map[string]int64) {
	t.Helper()
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	return s3test.Counters(pr, s3io.MetricsNamespace), s3test.Counters(pr, "s3io_test")
}

// ReadBatches emits exactly Read's records, each batch naming its first record's identity
// as ReadWithPositions names it, and the batches survive a stage boundary (a Reshuffle:
// Beam's schema coder encodes and decodes them).
func TestReadBatchesEqualsRead(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "batches")
	var want []string
	put := func(key string, data []byte, recs []string) {
		srv.Put(t, "batches", key, data)
		want = append(want, recs...)
	}
	// The plain and zstd objects span several of the framer's 256 KiB slabs, which a
	// batched read recycles: a slab reused before its records were copied would show here.
	text, recs := lines("p/a.txt", 0, 40000)
	put("p/a.txt", []byte(text), recs)
	g1, r1 := lines("p/b.txt.gz", 0, 1500)
	g2, r2 := lines("p/b.txt.gz", 1500, 700)
	put("p/b.txt.gz", s3test.Gzip(g1, g2), append(r1, r2...))
	z, rz := lines("p/c.zst", 0, 30000)
	put("p/c.zst", s3test.Zstd(z), rz)
	put("p/d-empty.txt", nil, nil)
	put("p/e-one.txt", []byte("p/e-one.txt#0 no final newline"), []string{"p/e-one.txt#0 no final newline"})

	cfg := s3io.Config{Bucket: "batches", Prefix: "p/", Endpoint: srv.URL, UsePathStyle: true, MaxSplitMembers: 2, BatchRecords: 300}
	p, s := beam.NewPipelineWithRoot()
	batches := beam.Reshuffle(s, s3io.ReadBatches(s, cfg))
	passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: 300, MaxBytes: 1 << 20}, batches))
	flat := beam.ParDo(s, batchPositions, batches)
	passert.Equals(s, flat, beam.ParDo(s, positionString, s3io.ReadWithPositions(s, cfg)))
	passert.EqualsList(s, beam.ParDo(s, dataOf, flat), want)
	c, tc := runPipeline(t, p)
	if c["records"] != 2*int64(len(want)) {
		t.Errorf("records = %d, want %d (twice: batched and by position)", c["records"], 2*len(want))
	}
	if tc["batches_at_record_bound"] == 0 || tc["batches"] > int64(len(want)/10) {
		t.Errorf("test counters %v: want batches at the 300-record bound, and far fewer batches than %d records", tc, len(want))
	}
}

func init() { register.Function1x1(dataOf) }

// dataOf is the record of a batchPositions line.
func dataOf(s string) string { return s[strings.LastIndexByte(s[:strings.Index(s, "#")], '|')+1:] }

// A batched read that prism splits (at member boundaries and inside one member) and
// checkpoints while a GET stalls: the records are exactly the objects', once each, and no
// batch spans objects or skips a record.
func TestReadBatchesSplitsAndResumes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects int
	}{{"members", 6}, {"one member", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s3test.New(t)
			srv.CreateBucket(t, "split")
			var want []string
			for i := range tc.objects {
				key := fmt.Sprintf("d/obj-%d.txt", i)
				text, recs := lines(key, 0, 20000)
				srv.Put(t, "split", key, []byte(text))
				want = append(want, recs...)
			}
			// As in TestPrismSplitsAStalledRead: the fourth 128 KiB part stalls.
			srv.SetFault("d/obj-0.txt", fmt.Sprintf("bytes=%d-", 3*128<<10), 1, faultproxy.Fault{Stall: 1500 * time.Millisecond})
			cfg := s3io.Config{Bucket: "split", Prefix: "d/", Endpoint: srv.URL, UsePathStyle: true,
				SplitTargetBytes: 1 << 30, InitialSplitBytes: 1 << 30, PartBytes: 128 << 10, BatchRecords: 64}
			p, s := beam.NewPipelineWithRoot()
			batches := s3io.ReadBatches(s, cfg)
			passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: 64, MaxBytes: 1 << 20}, batches))
			passert.EqualsList(s, beam.ParDo(s, dataOf, beam.ParDo(s, batchPositions, batches)), want)
			c, _ := runPipeline(t, p)
			t.Logf("counters: %v", c)
			if c["records"] != int64(len(want)) {
				t.Errorf("records = %d, want %d", c["records"], len(want))
			}
			if c["restrictions_read"] < 2 {
				t.Errorf("restrictions_read = %d: prism did not split the read", c["restrictions_read"])
			}
			if tc.objects == 1 && c["resumed_reads"] < 1 {
				t.Errorf("resumed_reads = %d: want a residual inside the member resuming at its hint", c["resumed_reads"])
			}
		})
	}
}

// An object that fails in the middle of a prefix is quarantined: the batches of its records
// before the failure are kept, the objects around it are read whole, and the Failure names
// the first record not emitted; ReadBatches fails the job instead.
func TestReadBatchesQuarantine(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "quar")
	var want []string
	a, ra := lines("q/a.txt", 0, 400)
	srv.Put(t, "quar", "q/a.txt", []byte(a))
	b1, rb := lines("q/b.txt", 0, 250)
	// Record 250 is longer than MaxRecordBytes: q/b.txt fails there.
	b2, _ := lines("q/b.txt", 251, 100)
	srv.Put(t, "quar", "q/b.txt", []byte(b1+"q/b.txt#250 "+strings.Repeat("x", 5000)+"\n"+b2))
	c, rc := lines("q/c.txt", 0, 300)
	srv.Put(t, "quar", "q/c.txt", []byte(c))
	want = append(append(append(want, ra...), rb...), rc...)

	cfg := s3io.Config{Bucket: "quar", Prefix: "q/", Endpoint: srv.URL, UsePathStyle: true, MaxRecordBytes: 1000, BatchRecords: 32}
	p, s := beam.NewPipelineWithRoot()
	batches, failures := s3io.ReadBatchesWithFailures(s, cfg)
	passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: 32, MaxBytes: 1 << 20}, batches))
	passert.EqualsList(s, beam.ParDo(s, dataOf, beam.ParDo(s, batchPositions, batches)), want)
	passert.EqualsList(s, beam.ParDo(s, failureKeyIndex, failures), []string{"q/b.txt record_too_large 250"})
	runPipeline(t, p)

	p, s = beam.NewPipelineWithRoot()
	beam.ParDo(s, batchPositions, s3io.ReadBatches(s, cfg))
	if _, err := ptest.RunWithMetrics(p); err == nil || !strings.Contains(err.Error(), "q/b.txt") {
		t.Fatalf("ReadBatches over a quarantined object: err = %v, want the job to fail naming q/b.txt", err)
	}
}

func init() { register.Function1x1(failureKeyIndex) }

func failureKeyIndex(f s3io.Failure) string { return fmt.Sprintf("%s %s %d", f.Key, f.Reason, f.Index) }

// The entries of an archive are never mixed in one batch: each batch names its entry, and
// indexes run on across entries as ReadWithPositions numbers them.
func TestReadBatchesArchiveEntries(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "arch")
	ta, ra := lines("x/a.log", 0, 37)
	tb, rb := lines("x/b.log", 37, 5)
	tcc, rc := lines("x/c.log", 42, 60)
	dir := clitool.WriteFiles(t, map[string]string{"x/a.log": ta, "x/b.log": tb, "x/c.log": tcc})
	tarball := clitool.RunIn(t, dir, nil, "tar", "-cf", "-", "x/a.log", "x/b.log", "x/c.log")
	srv.Put(t, "arch", "in/logs.tar.gz", clitool.Run(t, tarball, "gzip", "-c"))
	want := append(append(ra, rb...), rc...)

	cfg := s3io.Config{Bucket: "arch", Prefix: "in/", Endpoint: srv.URL, UsePathStyle: true}
	p, s := beam.NewPipelineWithRoot()
	batches := s3io.ReadBatches(s, cfg)
	passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: 1024, MaxBytes: 1 << 20}, batches))
	flat := beam.ParDo(s, batchPositions, batches)
	passert.Equals(s, flat, beam.ParDo(s, positionString, s3io.ReadWithPositions(s, cfg)))
	passert.EqualsList(s, beam.ParDo(s, dataOf, flat), want)
	_, tc := runPipeline(t, p)
	if tc["batches"] < 3 {
		t.Errorf("%d batches for 3 entries", tc["batches"])
	}
}

// BatchRecords and BatchBytes bound every batch, and a record longer than BatchBytes is a
// batch of its own.
func TestReadBatchesBounds(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "bounds")
	var b strings.Builder
	var want []string
	for i := range 3000 {
		r := fmt.Sprintf("k/obj.txt#%d %s", i, strings.Repeat("y", (i*7)%40))
		if i%500 == 250 {
			r += strings.Repeat("B", 700) // over BatchBytes
		}
		b.WriteString(r + "\n")
		want = append(want, r)
	}
	srv.Put(t, "bounds", "k/obj.txt", []byte(b.String()))
	z, rz := lines("k/obj2.zst", 0, 2000)
	srv.Put(t, "bounds", "k/obj2.zst", s3test.Zstd(z))
	want = append(want, rz...)

	for _, bound := range []struct{ recs, bytes int }{{7, 1 << 20}, {1 << 20, 500}, {13, 300}} {
		t.Run(fmt.Sprintf("%d records %d bytes", bound.recs, bound.bytes), func(t *testing.T) {
			cfg := s3io.Config{Bucket: "bounds", Prefix: "k/", Endpoint: srv.URL, UsePathStyle: true, BatchRecords: bound.recs, BatchBytes: bound.bytes}
			p, s := beam.NewPipelineWithRoot()
			batches := s3io.ReadBatches(s, cfg)
			passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: bound.recs, MaxBytes: bound.bytes}, batches))
			passert.EqualsList(s, beam.ParDo(s, dataOf, beam.ParDo(s, batchPositions, batches)), want)
			_, tc := runPipeline(t, p)
			t.Logf("test counters: %v", tc)
			if bound.bytes < 700 && tc["oversized_records_alone"] != 6 {
				t.Errorf("oversized_records_alone = %d, want the 6 records over BatchBytes, each alone", tc["oversized_records_alone"])
			}
			if bound.recs < 1000 && tc["batches_at_record_bound"] == 0 || bound.recs > 1000 && tc["batches_near_byte_bound"] == 0 {
				t.Errorf("test counters %v: no batch reached its bound", tc)
			}
		})
	}
}

// A batched read recycles the framer's 256 KiB slabs once every record in them is copied
// out. Objects larger than the framer's window make it wait for the reader, so a slab
// handed back too early is refilled while records in it are still pending: checkBatchFn
// sees each record's own name and index, and the count is exact.
func TestReadBatchesRecyclesSlabs(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "slabs")
	var n int
	long := func(name string, count int) []byte {
		var b strings.Builder
		for i := range count {
			fmt.Fprintf(&b, "%s#%d %s\n", name, i, strings.Repeat("q", 40+i%150))
		}
		n += count
		return []byte(b.String())
	}
	srv.Put(t, "slabs", "r/big.txt", long("r/big.txt", 90000))
	srv.Put(t, "slabs", "r/big.zst", s3test.Zstd(string(long("r/big.zst", 90000))))
	cfg := s3io.Config{Bucket: "slabs", Prefix: "r/", Endpoint: srv.URL, UsePathStyle: true, BatchBytes: 100_000}
	p, s := beam.NewPipelineWithRoot()
	passert.Empty(s, beam.ParDo(s, &checkBatchFn{MaxRecords: 1024, MaxBytes: 100_000}, s3io.ReadBatches(s, cfg)))
	c, _ := runPipeline(t, p)
	if c["records"] != int64(n) {
		t.Errorf("records = %d, want %d", c["records"], n)
	}
}
