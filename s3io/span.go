package s3io

import (
	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// segmentSlack and segmentWindow size the ranged GETs of a segment: its own range plus
// segmentSlack in the planned parts, then segmentWindow at a time for a record that
// straddles the segment's end by more.
const (
	segmentSlack  = 64 << 10
	segmentWindow = 1 << 20
)

// unitSlack is segmentSlack for a compressed object's segment, and unitWindow its tail
// window: the next unit's first record takes its first block to decode, a few KiB of a
// gzip member, up to 128 KiB of stored bytes of a zstd frame (~30 KiB at the ratio logs
// compress by).
const (
	unitSlack  = 64 << 10
	unitWindow = 128 << 10
)

// readSpan is where the read of one member starts and ends: which bytes are fetched, how
// the first record is found, and where framing stops. spanOf decides it once, for both the
// fetch of the member's bytes and their framing.
type readSpan struct {
	hint    resumeHint // where to resume, if the restriction starts inside this member
	from    int64      // the first byte to fetch
	planEnd int64      // where the planned bytes end: the object's size, or a segment's end plus slack
	// seekable is true when the read begins inside the stored bytes, which are then known to
	// be the records themselves (uncompressed): a resume at a seekable hint, or a segment.
	// Record offsets are then object offsets.
	seekable bool
	// skipPartial is true when the read begins on the byte before a segment's range: if that
	// byte ends a line, the first record starts at the segment's start; otherwise the record
	// in progress belongs to the previous segment.
	skipPartial bool
	// stopAt, for a segment, is its end: framing stops at the first record that starts
	// there or later, which the next segment owns. 0 for a whole object.
	stopAt int64
	// units, for a segment of a compressed object (Member.Codec), is the stored length of its
	// own units from from: the read decodes them, then the next units up to the end of the
	// record in progress (decode.OpenUnits), and skipPartial applies to the decoded bytes.
	units int64
	// tailWindow is what each request past planEnd covers.
	tailWindow int64
	// inflate is the hint's inflate checkpoint, decoded: a gzip read resumes there.
	inflate *decode.Checkpoint
}

// spanOf decides where reading member begins, hint being the restriction's resume hint
// when member is the restriction's first: a seekable resume hint into it starts there; a
// segment starts on the byte before its range, to see whether a record begins on its first
// byte, and plans its own range plus segmentSlack for the record that straddles its end; a
// compressed object's segment starts at its first unit and plans unitSlack for the start
// of the next unit; anything else is read from byte 0 and decoded.
func spanOf(member Member, hint resumeHint) readSpan {
	segStart, segEnd := member.span()
	s := readSpan{hint: hint, planEnd: member.Size, tailWindow: segmentWindow}
	switch {
	case member.isSegment() && member.Codec != "":
		// A small segment plans less slack, and asks for less at a time past it, so that
		// what it fetches past its end stays a fraction of its own bytes.
		own := segEnd - segStart
		s.from, s.planEnd, s.units = segStart, min(segEnd+min(unitSlack, own/8), member.Size), own
		s.tailWindow = min(unitWindow, max(own/4, 16<<10))
		s.skipPartial = segStart > 0 && !s.hint.known()
		if s.hint.known() && s.hint.Inflate != "" {
			// A unit start inside the segment that its read passed (decode.ParallelUnits):
			// decode from there, not from the segment's first unit.
			if cp, err := decode.DecodeCheckpoint(s.hint.Inflate); err == nil && cp.Member && cp.Stored > segStart && cp.Stored < segEnd {
				s.from, s.units, s.inflate = cp.Stored, segEnd-cp.Stored, &cp
			}
		}
		return s // a resume hint into decoded bytes is never seekable
	case member.isSegment():
		s.from, s.planEnd = max(segStart-1, 0), min(segEnd+segmentSlack, member.Size)
		s.seekable, s.skipPartial, s.stopAt = true, segStart > 0, segEnd
	}
	if s.hint.known() && s.hint.Seekable {
		s.from, s.seekable, s.skipPartial = s.hint.Offset, true, false
	}
	if s.hint.known() && s.hint.Inflate != "" {
		if cp, err := decode.DecodeCheckpoint(s.hint.Inflate); err == nil {
			s.from, s.inflate = cp.Stored, &cp // an inflate checkpoint: read from its stored byte
		}
	}
	s.planEnd = max(s.planEnd, s.from)
	return s
}

// fetchRange is what the fetcher fetches of the member: the planned bytes ahead, and past
// them (only a segment's last record can reach there) tailWindow at a time.
func (s readSpan) fetchRange() fetch.Range {
	return fetch.Range{From: s.from, PlanEnd: s.planEnd, TailWindow: s.tailWindow}
}
