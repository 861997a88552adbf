package member

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// bench holds one object on an in-process S3 server, and reads plans of it as a reader
// instance does: a fetch of the plan's range, started with Reader.Start.
type bench struct {
	t       *testing.T
	obj     fetch.Object
	gets    *fetch.Gets
	fetcher *fetch.Fetcher
	reader  *Reader
}

func newBench(t *testing.T, key string, data []byte, checkpointBytes int64) *bench {
	t.Helper()
	return newBenchVerifying(t, key, data, checkpointBytes, false)
}

// newBenchVerifying is newBench, with VerifyChecksums and a server that answers each
// object's CRC32C when verify is set.
func newBenchVerifying(t *testing.T, key string, data []byte, checkpointBytes int64, verify bool) *bench {
	t.Helper()
	srv := s3test.New(t)
	srv.ServeChecksums(verify)
	srv.CreateBucket(t, "mem")
	etag := srv.Put(t, "mem", key, data)
	set := fetch.Settings{ReadTimeout: time.Minute, MaxAttempts: 4, PartBytes: 1 << 20, MaxRequestsInFlight: 4, VerifyChecksums: verify}
	pool := fetch.NewPool(64 << 20)
	budget := fetch.NewBudget(pool, 16<<20, 8<<20, 32<<20)
	b := &bench{t: t, obj: fetch.Object{Key: key, ETag: etag, Size: int64(len(data))},
		gets: fetch.NewGets(srv.Client, "mem", set), fetcher: fetch.NewFetcher(t.Context(), set, pool, budget)}
	b.reader = &Reader{NewFramer: func() decode.Framer { return decode.FramerFunc(decode.FrameLines) },
		Compression: "auto", MaxRecordBytes: 1 << 20, CheckpointBytes: checkpointBytes,
		MaxDecoderWindowBytes: decode.DefaultMaxWindow, WindowBytes: 1 << 20, Budget: budget, BudgetBytes: 32 << 20}
	t.Cleanup(func() { b.fetcher.Close(); b.reader.Close() })
	return b
}

// plan returns a plan of the object's stored bytes [start, end) (both 0: all of it).
func (b *bench) plan(start, end int64, codec string) Plan {
	return Plan{Key: b.obj.Key, Size: b.obj.Size, Start: start, End: end, Codec: codec}
}

// read reads p to its end and returns its records, and the read's resume point before
// record stopAt (counted from the plan's first record; -1 for none).
func (b *bench) read(p Plan, stopAt int) (recs []string, resume Resume) {
	b.t.Helper()
	of := b.fetcher.Add(b.gets, b.obj, p.FetchRange())
	of.Bind(b.t.Context())
	rd := b.reader.Start(p, of)
	defer rd.Finish(b.reader)
	idx := p.Resume.Index
	for {
		bt := rd.Next()
		for i, r := range bt.Records {
			if len(recs) == stopAt-1 {
				// What the tracker gives a residual starting after this record.
				resume = rd.Log().Refine(Resume{Index: idx + 1, Offset: bt.Ends[i], StoredOffsets: rd.StoredOffsets()})
			}
			recs = append(recs, string(r))
			idx++
		}
		switch {
		case bt.Err == io.EOF:
			return recs, resume
		case bt.Err != nil:
			b.t.Fatalf("read %+v: %v", p, bt.Err)
		}
		rd.Recycle(bt)
	}
}

// lines returns n distinct lines of varied length, which compress about 2-fold as logs
// with ids do, and their text.
func lines(n int) ([]string, []byte) {
	var buf bytes.Buffer
	out := make([]string, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range out {
		out[i] = fmt.Sprintf("record %07d %016x%016x %s", i, rng.Uint64(), rng.Uint64(), bytes.Repeat([]byte{'a' + byte(i%26)}, i%97))
		buf.WriteString(out[i] + "\n")
	}
	return out, buf.Bytes()
}

// gzipMembers compresses text in members of about every bytes, cut at line ends, as bgzip
// and rotated logs write them, and returns the stored offset of each member.
func gzipMembers(text []byte, every int) (data []byte, starts []int64) {
	var parts []string
	for len(text) > 0 {
		n := min(every, len(text))
		if i := bytes.IndexByte(text[n-1:], '\n'); i >= 0 {
			n += i
		}
		parts = append(parts, string(text[:n]))
		text = text[n:]
	}
	for _, p := range parts {
		starts = append(starts, int64(len(data)))
		data = append(data, s3test.Gzip(p)...)
	}
	return data, starts
}

// lastMemberText returns the length of the text gzipMembers puts in the last member.
func lastMemberText(text []byte, every int) int {
	n := 0
	for len(text) > 0 {
		n = min(every, len(text))
		if i := bytes.IndexByte(text[n-1:], '\n'); i >= 0 {
			n += i
		}
		text = text[n:]
	}
	return n
}

// TestSegmentsPartitionRecords: the reads of an object's segments, uncompressed (cut at any
// byte) or compressed (cut at unit starts), yield its records once each, in order.
func TestSegmentsPartitionRecords(t *testing.T) {
	want, text := lines(20000)
	gz, starts := gzipMembers(text, 64<<10)
	cases := []struct {
		name, codec string
		data        []byte
		cuts        []int64
	}{
		{"uncompressed", "", text, []int64{1, 100_000, 100_001, int64(len(text)) / 2, int64(len(text)) - 1}},
		{"gzip units", "gzip", gz, []int64{starts[1], starts[len(starts)/2], starts[len(starts)-1]}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, "o", tc.data, 0)
			var got []string
			bounds := append(append([]int64{0}, tc.cuts...), int64(len(tc.data)))
			for i := range len(bounds) - 1 {
				p := b.plan(bounds[i], bounds[i+1], tc.codec)
				if r := p.FetchRange(); r.From > bounds[i] || r.PlanEnd < bounds[i+1] {
					t.Errorf("segment [%d, %d) fetches %+v: want its own bytes at least", bounds[i], bounds[i+1], r)
				}
				recs, _ := b.read(p, -1)
				got = append(got, recs...)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("segments yield %d records, want the object's %d in order", len(got), len(want))
			}
		})
	}
}

// TestVerifiedSpanReadInChunks: a span of gzip members decoded in chunks, whose fetch
// covers the whole object (its last member lies within the span's slack), checks the
// object's stored checksum over every byte: once its records end, the parts its decoding
// did not take (the last member's) are taken and checked.
func TestVerifiedSpanReadInChunks(t *testing.T) {
	want, text := lines(60000)
	cut := 0
	for range 59500 {
		cut += bytes.IndexByte(text[cut:], '\n') + 1
	}
	data, starts := gzipMembers(text[:cut], 5<<19) // members of ~1.3 MB: chunks of their own
	last := s3test.Gzip(string(text[cut:]))
	end := int64(len(data))
	data = append(data, last...)
	if len(starts) < 2 || len(last) >= 64<<10 {
		t.Fatalf("premise: %d members before a last one of %d bytes", len(starts), len(last))
	}
	b := newBenchVerifying(t, "o", data, 0, true)
	p := b.plan(0, end, "gzip")
	if r := p.FetchRange(); r.From != 0 || r.PlanEnd != int64(len(data)) {
		t.Fatalf("premise: span [0, %d) fetches %+v, want the whole object's %d bytes", end, r, len(data))
	}
	// Its records, and the first of the last member: the one in progress at its end, which
	// the span that starts there skips.
	recs, _ := b.read(p, -1)
	if !slices.Equal(recs, want[:59501]) {
		t.Fatalf("span yields %d records, want %d", len(recs), 59501)
	}
	if st := b.fetcher.Stats(); st.ChecksumsVerified != 1 || st.ChecksumsUnchecked != 0 || st.ChecksumLookups == 0 {
		t.Errorf("stats %+v: want the object verified, after its lookup", st)
	}
}

// TestResumeWhereTheLogSays: a read resumed at the resume point its earlier read gave for
// a record yields exactly the records after it, and fetches from a point the log kept, not
// from the member's or segment's first byte: a gzip object read whole (inflate
// checkpoints), a gzip segment read in chunks (unit starts), an uncompressed object (a
// byte offset).
func TestResumeWhereTheLogSays(t *testing.T) {
	want, text := lines(120000) // ~12 MB, ~6 MB in gzip: a segment of several chunks
	gz, starts := gzipMembers(text, 256<<10)
	cases := []struct {
		name, codec string
		data        []byte
		segment     bool
		kind        string
	}{
		{"gzip whole", "", gz, false, "member.inflateRead"},
		{"gzip segment in chunks", "gzip", gz, true, "member.unitsRead"},
		{"uncompressed", "", text, false, "member.rangeRead"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t, "o", tc.data, 256<<10)
			p, recs := b.plan(0, 0, ""), want
			if tc.segment {
				// All but the last member: a segment. The record in progress at its end, which
				// starts the last member (a unit's first decoded byte is no record start:
				// the byte before it is in the previous unit), is its too.
				p = b.plan(0, starts[len(starts)-1], tc.codec)
				recs = want[:len(want)-strings.Count(string(text[len(text)-lastMemberText(text, 256<<10):]), "\n")+1]
			}
			stop := len(recs) * 3 / 4
			_, resume := b.read(p, stop)
			if !resume.Known() {
				t.Fatalf("no resume point before record %d", stop)
			}
			p.Resume = resume
			if k := fmt.Sprintf("%T", p.kind()); k != tc.kind {
				t.Errorf("resumed at %+v: a %s, want a %s", resume, k, tc.kind)
			}
			if from := p.FetchRange().From; from <= 0 {
				t.Errorf("resumed at %+v: fetches from byte %d, want past the start", resume, from)
			}
			got, _ := b.read(p, -1)
			if !slices.Equal(got, recs[stop:]) {
				t.Fatalf("resumed read yields %d records, want the %d after record %d", len(got), len(recs)-stop, stop)
			}
		})
	}
}

// TestLogRefine: a nil log, a point at a stored offset and a point before every logged one come
// back unchanged; otherwise the point takes the latest logged one at or before it.
func TestLogRefine(t *testing.T) {
	var none *Log
	h := Resume{Index: 5, Offset: 100}
	if got := none.Refine(h); got != h {
		t.Errorf("nil log: %+v, want %+v", got, h)
	}
	l := (&Reader{CheckpointBytes: 1, WindowBytes: 1}).inflateLog()
	if got := l.Refine(h); got != h {
		t.Errorf("empty log: %+v, want %+v", got, h)
	}
	if (&Reader{}).inflateLog() != nil {
		t.Error("CheckpointBytes 0 keeps a log")
	}
	seek := Resume{Index: 5, Offset: 100, StoredOffsets: true}
	if got := l.Refine(seek); got != seek {
		t.Errorf("stored offsets: %+v, want %+v", got, seek)
	}
}

// TestPlanKinds: which kind of read a plan takes, and what it fetches.
func TestPlanKinds(t *testing.T) {
	cp := decode.Checkpoint{Stored: 5000, Decoded: 20000}.Encode()
	unit := decode.Checkpoint{Stored: 5000, Decoded: 20000, Unit: true}.Encode()
	cases := []struct {
		name string
		p    Plan
		kind string
		from int64
	}{
		{"whole", Plan{Size: 1e6}, "member.wholeRead", 0},
		{"uncompressed segment", Plan{Size: 1e6, Start: 1000, End: 2000}, "member.rangeRead", 999},
		{"resume at a stored offset", Plan{Size: 1e6, Resume: Resume{Index: 3, Offset: 700, StoredOffsets: true}}, "member.rangeRead", 700},
		{"inflate resume", Plan{Size: 1e6, Resume: Resume{Index: 3, Offset: 30000, Checkpoint: cp}}, "member.inflateRead", 5000},
		{"bad checkpoint", Plan{Size: 1e6, Resume: Resume{Index: 3, Offset: 30000, Checkpoint: "x"}}, "member.wholeRead", 0},
		{"units segment", Plan{Size: 1e6, Start: 1000, End: 9000, Codec: "gzip"}, "member.unitsRead", 1000},
		{"units resumed at a unit", Plan{Size: 1e6, Start: 1000, End: 9000, Codec: "gzip", Resume: Resume{Index: 3, Offset: 30000, Checkpoint: unit}}, "member.unitsRead", 5000},
		{"unit outside the segment", Plan{Size: 1e6, Start: 6000, End: 9000, Codec: "gzip", Resume: Resume{Index: 3, Offset: 30000, Checkpoint: unit}}, "member.unitsRead", 6000},
	}
	for _, tc := range cases {
		if k := fmt.Sprintf("%T", tc.p.kind()); k != tc.kind {
			t.Errorf("%s: a %s, want a %s", tc.name, k, tc.kind)
		}
		if r := tc.p.FetchRange(); r.From != tc.from || r.PlanEnd < r.From {
			t.Errorf("%s: fetches %+v, want from %d", tc.name, r, tc.from)
		}
	}
}
