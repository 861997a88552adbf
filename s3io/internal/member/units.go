package member

import (
	"io"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// unitSlack is what a compressed object's span plans past its end, and unitWindow what
// each later request covers: the next unit's first record takes its first block to decode,
// a few KiB of a gzip member, up to 128 KiB of stored bytes of a zstd frame (~30 KiB at
// the ratio logs compress by).
const (
	unitSlack  = 64 << 10
	unitWindow = 128 << 10
)

// unitChunkBytes is the least stored bytes of a chunk of a span's units that decodes on
// a goroutine of its own (decode.ParallelUnits): a gzip member of 8 MiB of logs, or 16 BGZF
// blocks. A span of fewer than two chunks decodes on its framing goroutine.
const unitChunkBytes = 1 << 20

// unitCheckpointsKept is how many unit starts a span read in chunks keeps for resume
// points: framing runs up to ~20 MiB decoded (4 chunks) ahead of the claims, so a few
// more than that.
const unitCheckpointsKept = 8

// unitsRead reads a span of a compressed object: the planner proved a unit (a gzip
// member, a zstd frame, a bzip2 stream) starts at its first byte. It decodes its own units,
// then the next units up to the end of the record in progress (decode.OpenUnits), so that a
// record straddling two spans is read once, by the span it starts in.
//
// A resumed read starts at the span's first unit, or at a later unit start its earlier
// read passed and logged (a Resume.Checkpoint with Unit set, which the read in chunks keeps
// at each chunk start): it fetches from that unit's stored byte, decodes from there, and
// skips unframed up to Resume.Offset. A split inside the span hands its residual the
// last unit start logged before the split's record (Log.Refine), or, with none logged, the
// span's start.
type unitsRead struct {
	from    int64 // the stored offset of the unit decoding starts at
	own     int64 // stored bytes of the span's own units from from
	more    bool  // units follow the span: its last record may end in them
	planEnd int64 // the span's end plus a slack for the next unit's first record
	tail    int64 // what each request past planEnd covers
	// skipPartial is true for a span read from its start (not the object's): the record
	// in progress at its first decoded byte is the previous span's.
	skipPartial bool
	resume      Resume
	base        int64 // the decoded offset of from: 0 at the span's start
}

func newUnitsRead(p Plan) unitsRead {
	start, end := p.Span()
	own := end - start
	// A small span plans less slack, and asks for less at a time past it, so that what
	// it fetches past its end stays a fraction of its own bytes.
	u := unitsRead{from: start, own: own, more: end < p.Size, resume: p.Resume,
		planEnd: min(end+min(unitSlack, own/8), p.Size), tail: min(unitWindow, max(own/4, 16<<10)),
		skipPartial: start > 0 && !p.Resume.Known()}
	if h := p.Resume; h.Known() && h.Checkpoint != "" {
		if cp, err := decode.DecodeCheckpoint(h.Checkpoint); err == nil && cp.Unit && cp.Stored > start && cp.Stored < end {
			u.from, u.own, u.base = cp.Stored, end-cp.Stored, cp.Decoded
		}
	}
	return u
}

func (u unitsRead) fetchRange() fetch.Range {
	return fetch.Range{From: u.from, PlanEnd: u.planEnd, TailWindow: u.tail}
}

func (u unitsRead) start() (base, skipTo int64) {
	if u.resume.Known() {
		return u.base, u.resume.Offset
	}
	return u.base, 0
}

func (u unitsRead) stopAt() int64 { return 0 }

// inChunks reports whether the units are enough to decode in chunks on goroutines of their
// own: more than two chunks.
func (u unitsRead) inChunks() bool { return u.own > 2*unitChunkBytes }

func (u unitsRead) log(*Reader) *Log {
	if u.inChunks() {
		return &Log{c: decode.Checkpoints{Keep: unitCheckpointsKept}}
	}
	return nil
}

// parallelUnits is how a span's units decode in chunks: each ends at the first unit start
// at least unitChunkBytes in, looked for 1 MiB further (a larger unit ends the chunking:
// the rest decodes as one); one chunk decodes ahead of the one being framed, holding at most
// 8 MiB decoded, so that a reader holds at most ~4 MiB stored and 16 MiB decoded per
// span beyond what it frames. One is enough on two cores: the framing and the emitting
// goroutines take the rest (two ahead were not measurably faster in a noisy A/B, and held
// ~50-150 MiB more peak RSS).
func (o *opening) parallelUnits() decode.ParallelUnits {
	return decode.ParallelUnits{Chunk: unitChunkBytes, Search: 1 << 20, Queued: 1, OutBytes: 8 << 20,
		MaxWindow: o.r.MaxDecoderWindowBytes, Get: o.r.getDecoders, Put: o.r.putDecoders,
		Checkpoints: o.read.log.checkpoints(), Base: o.read.base}
}

func (u unitsRead) storedOffsets(*opening) bool { return false }

// borrows: decoded ahead of the span being emitted, a units read's framing must go on past
// its window, or the second core idles.
func (u unitsRead) borrows(*opening) bool { return true }

func (u unitsRead) open(o *opening) (*decode.RecordReader, error) {
	comp := decode.Compression(o.plan.Codec)
	var stream io.Reader
	var err error
	if u.inChunks() {
		var s io.ReadCloser
		s, err = o.read.dec.OpenUnitsParallel(comp, o.src, u.from, u.own, u.more, o.parallelUnits())
		stream, o.read.units = s, s
	} else {
		stream, err = o.read.dec.OpenUnits(comp, o.src, u.from, u.own, u.more)
	}
	if err != nil {
		return nil, err
	}
	recs := decode.NewRecordReader(stream, o.r.NewFramer(), o.r.MaxRecordBytes, u.base)
	switch {
	case u.from == 0:
		recs.SkipHeaders(o.r.SkipHeaderRecords)
	case u.skipPartial:
		err = recs.SkipPastNewline() // the record in progress is the previous span's
	}
	if err == nil && u.resume.Known() {
		err = recs.Discard(u.resume.Offset)
	}
	return recs, err
}
