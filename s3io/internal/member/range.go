package member

import (
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// rangeSlack and rangeWindow size the ranged GETs of an uncompressed span: its own
// range plus rangeSlack in the planned parts, then rangeWindow at a time for a record
// that straddles the span's end by more.
const (
	rangeSlack  = 64 << 10
	rangeWindow = 1 << 20
)

// rangeRead reads stored bytes that are the records themselves from a byte offset: a
// span of an uncompressed object (from the byte before its range, to see whether a
// record begins on its first byte), or an uncompressed object resumed where a record ends.
// Its record offsets are object offsets.
type rangeRead struct {
	from    int64 // the first byte fetched and framed
	planEnd int64 // where the planned bytes end: the object's size, or the span's end plus slack
	// skipPartial is true when the read begins on the byte before a span's range: if that
	// byte ends a line, the first record starts at the span's start; otherwise the record
	// in progress belongs to the previous span.
	skipPartial bool
	stop        int64 // a span's end; 0 for an object
}

func newRangeRead(p Plan) rangeRead {
	r := rangeRead{planEnd: p.Size}
	if p.IsPart() {
		start, end := p.Span()
		r.from, r.planEnd = max(start-1, 0), min(end+rangeSlack, p.Size)
		r.skipPartial, r.stop = start > 0, end
	}
	if h := p.Resume; h.Known() && h.StoredOffsets {
		r.from, r.skipPartial = h.Offset, false
	}
	r.planEnd = max(r.planEnd, r.from)
	return r
}

func (r rangeRead) fetchRange() fetch.Range {
	return fetch.Range{From: r.from, PlanEnd: r.planEnd, TailWindow: rangeWindow}
}

func (r rangeRead) start() (base, skipTo int64) { return r.from, r.from }
func (r rangeRead) stopAt() int64               { return r.stop }
func (r rangeRead) log(*Reader) *Log            { return nil }

func (r rangeRead) storedOffsets(*opening) bool { return true }
func (r rangeRead) borrows(*opening) bool       { return false }

func (r rangeRead) open(o *opening) (*decode.RecordReader, error) {
	recs := decode.NewRecordReader(o.src, o.r.NewFramer(), o.r.MaxRecordBytes, r.from)
	if r.from == 0 {
		recs.SkipHeaders(o.r.SkipHeaderRecords)
	}
	var err error
	if r.skipPartial {
		err = recs.SkipPastNewline()
	}
	return recs, err
}
