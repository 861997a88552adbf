package member

import (
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// inflateRead resumes a gzip object at an inflate checkpoint its earlier read logged: it
// fetches from the checkpoint's stored byte, primes the inflater with the checkpoint's
// window and skips unframed up to Resume.Offset. It logs checkpoints as a whole read does.
type inflateRead struct {
	cp     decode.Checkpoint
	resume Resume
	size   int64
}

func (r inflateRead) fetchRange() fetch.Range {
	return fetch.Range{From: r.cp.Stored, PlanEnd: max(r.size, r.cp.Stored), TailWindow: rangeWindow}
}

func (r inflateRead) start() (base, skipTo int64) { return r.cp.Decoded, r.resume.Offset }
func (r inflateRead) stopAt() int64               { return 0 }
func (r inflateRead) log(rd *Reader) *Log         { return rd.inflateLog() }

func (r inflateRead) storedOffsets(*opening) bool { return false }
func (r inflateRead) borrows(*opening) bool       { return false }

func (r inflateRead) open(o *opening) (*decode.RecordReader, error) {
	stream, err := decode.OpenGzipAt(o.src, r.cp, o.read.log.checkpoints())
	if err != nil {
		return nil, err
	}
	recs := decode.NewRecordReader(stream, o.r.NewFramer(), o.r.MaxRecordBytes, r.cp.Decoded)
	return recs, recs.Discard(r.resume.Offset)
}
