package member

import (
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// wholeRead reads an object from its first stored byte, whatever its compression or
// archive format, skipping (decoded, not framed) up to a resume point. A gzip object logs
// inflate checkpoints as it decodes, so that a split inside it resumes near its record.
type wholeRead struct{ plan Plan }

func (r wholeRead) fetchRange() fetch.Range {
	return fetch.Range{From: 0, PlanEnd: r.plan.Size, TailWindow: rangeWindow}
}

func (r wholeRead) start() (base, skipTo int64) {
	if r.plan.Resume.Known() {
		return 0, r.plan.Resume.Offset
	}
	return 0, 0
}

func (r wholeRead) stopAt() int64       { return 0 }
func (r wholeRead) log(rd *Reader) *Log { return rd.inflateLog() }

// storedOffsets: an object stored uncompressed, not an archive (whose records are offsets
// of its entries).
func (r wholeRead) storedOffsets(o *opening) bool {
	return o.comp == decode.None && !o.archive
}

// borrows: a slow codec's framing borrows part budget.
func (r wholeRead) borrows(o *opening) bool { return decode.Slow(o.comp) }

func (r wholeRead) open(o *opening) (*decode.RecordReader, error) {
	o.read.dec.Checkpoints = o.read.log.checkpoints() // a gzip stream logs its checkpoints
	obj := decode.ObjectInfo{Key: r.plan.Key, Size: r.plan.Size, ReadRange: o.of.ReadRange}
	entries, stream, comp, err := o.read.dec.OpenEntries(decode.Compression(o.r.Compression), obj, o.src)
	if err != nil {
		return nil, err
	}
	o.comp, o.archive = comp, entries != nil
	var recs *decode.RecordReader
	if entries != nil {
		// An archive's records are offsets of its entries, not of the gzip stream. The log
		// stays (the claims of this member hold it, on another goroutine), but empty.
		o.read.log.disable()
		recs = decode.NewEntriesRecordReader(entries, o.r.NewFramer, o.r.MaxRecordBytes)
	} else {
		recs = decode.NewRecordReader(stream, o.r.NewFramer(), o.r.MaxRecordBytes, 0)
	}
	recs.SkipHeaders(o.r.SkipHeaderRecords)
	if r.plan.Resume.Known() {
		// Compressed: decompress up to the resume point, but frame nothing before it.
		err = recs.Discard(r.plan.Resume.Offset)
	}
	return recs, err
}
