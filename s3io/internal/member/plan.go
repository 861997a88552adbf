package member

import (
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// Resume says that framing a member's decoded stream from byte Offset yields record Index
// first. Splits and checkpoints at positions already read know it, and it spares the
// residual's read from fetching (StoredOffsets: a ranged GET from Offset) or framing (compressed:
// decoded bytes before Offset are skipped unframed) what came before. Its fields are
// exported because Beam encodes it in a restriction with a schema coder.
type Resume struct {
	Index  int64
	Offset int64
	// StoredOffsets is true when the member is stored uncompressed, so Offset is also a byte
	// offset in the object.
	StoredOffsets bool
	// Checkpoint is a resume point inside the compressed stream at or before Offset (an
	// encoded decode.Checkpoint): for a gzip object an inflate checkpoint, for a part read
	// in chunks the start of a unit its read passed. The read fetches from its stored
	// byte and decodes only from there. What it costs a restriction is in docs/design.md,
	// "Inflate checkpoints".
	Checkpoint string
}

// Known reports whether h says anything: a read at a member's start has no resume point.
func (h Resume) Known() bool { return h.Offset > 0 }

// Plan is what was planned for reading one member, and where its restriction resumes.
type Plan struct {
	Key  string
	Size int64 // stored bytes of the object
	// Start and End cut a part of the object, in stored bytes; both zero mean all of it.
	Start, End int64
	// Codec names the compression a part was cut by at unit starts; "" for a part of an
	// uncompressed object or a whole object.
	Codec string
	// Resume is where the read resumes; zero to read from the member's first record.
	Resume Resume
}

// Span returns the stored bytes whose records the member owns.
func (p Plan) Span() (start, end int64) {
	if p.Start == 0 && p.End == 0 {
		return 0, p.Size
	}
	return p.Start, p.End
}

// IsPart reports whether p is part of an object rather than all of it.
func (p Plan) IsPart() bool {
	start, end := p.Span()
	return start > 0 || end < p.Size
}

// FetchRange is what the read of p fetches: the planned bytes ahead, and past them (only a
// part's last record can reach there) a window at a time.
func (p Plan) FetchRange() fetch.Range { return p.kind().fetchRange() }

// kind is one kind of read: where it starts, what it fetches and how it decodes. Each
// owns its slack, tail window and tuning constants.
type kind interface {
	fetchRange() fetch.Range
	// start returns where the read's decoded stream starts (base, an offset of the
	// member's records) and the offset up to which it decodes without framing (skipTo),
	// for the bytes decoded again to reach the restriction's first record.
	start() (base, skipTo int64)
	// stopAt is where framing stops: the first record starting there or later is the next
	// part's. 0 frames to the end.
	stopAt() int64
	// log returns the resume points the read keeps for splits inside it, nil for none.
	log(r *Reader) *Log
	// open opens the read's record reader on the framing goroutine (it may block on the
	// network): decode.FramingSource.Open.
	open(o *opening) (*decode.RecordReader, error)
	// storedOffsets reports whether the offsets of the records open returned are also
	// byte offsets in the object (it is read uncompressed); asked once open returned.
	storedOffsets(o *opening) bool
	// borrows reports whether framing may go on past its window on the part budget's
	// credit; asked once open returned.
	borrows(o *opening) bool
}

// kind decides which kind of read p takes: a part of a compressed object reads units; an
// uncompressed part, or a resume at a byte of stored records, a range; a resume at
// an inflate checkpoint inflates from it; anything else is read whole.
func (p Plan) kind() kind {
	h := p.Resume
	switch {
	case p.IsPart() && p.Codec != "":
		return newUnitsRead(p)
	case p.IsPart() || h.Known() && h.StoredOffsets:
		return newRangeRead(p)
	case h.Known() && h.Checkpoint != "":
		if cp, err := decode.DecodeCheckpoint(h.Checkpoint); err == nil {
			return inflateRead{cp: cp, resume: h, size: p.Size}
		}
	}
	return wholeRead{plan: p}
}
