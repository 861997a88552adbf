package s3io

import (
	"errors"
	"fmt"
	"math"
)

// Bit widths of a packed Position: 2^20 members per descriptor (Config.MaxSplitMembers is
// capped to fit) and 2^43 records per object, more than the 5 TiB S3 object limit holds
// even as one-byte records.
const (
	memberBits = 20
	recordBits = 43
)

// Position identifies one record of a split: the ordinal of its object among the
// descriptor's members, and the record's index among that object's records (counted from 0
// in framer order, skipped blank lines not counted). Together with the descriptor's ID it is
// a deterministic identity for the record.
type Position struct {
	Member int
	Record int64
}

// Less orders positions by member, then record.
func (p Position) Less(q Position) bool {
	return p.Member < q.Member || p.Member == q.Member && p.Record < q.Record
}

func (p Position) String() string { return fmt.Sprintf("member %d record %d", p.Member, p.Record) }

// Pack encodes p into one int64 that orders like p: the member in the high 20 bits, the
// record index in the low 43. It fails for a position outside those widths.
func (p Position) Pack() (int64, error) {
	if p.Member < 0 || p.Member >= 1<<memberBits || p.Record < 0 || p.Record >= 1<<recordBits {
		return 0, fmt.Errorf("s3io: %v does not fit a packed position (members < 2^%d, records < 2^%d)", p, memberBits, recordBits)
	}
	return int64(p.Member)<<recordBits | p.Record, nil
}

// UnpackPosition is the inverse of Position.Pack.
func UnpackPosition(v int64) Position {
	return Position{Member: int(v >> recordBits), Record: v & (1<<recordBits - 1)}
}

// Restriction is the half-open range [Start, End) of positions of one split descriptor that a
// reader owns. Record counts are unknown until objects are read, so an End of (m, 0) means
// "every record of members before m", and (m, r) with r > 0 additionally owns the first r
// records of member m.
type Restriction struct {
	Start, End Position
	// Sizes holds the stored size of each member the range touches, from Start.Member on.
	// The tracker weighs progress and split points in bytes with it, since CreateTracker sees
	// only the restriction, never the descriptor.
	Sizes []int64
}

// fullRestriction is the restriction of all of d's records.
func fullRestriction(d SplitDescriptor) Restriction {
	sizes := make([]int64, len(d.Members))
	for i, m := range d.Members {
		sizes[i] = m.Size
	}
	return Restriction{Start: Position{}, End: Position{Member: len(d.Members)}, Sizes: sizes}
}

// IsEmpty reports whether r owns no position.
func (r Restriction) IsEmpty() bool { return !r.Start.Less(r.End) }

// lastMember is the ordinal of the last member r touches (Start.Member-1 when none).
func (r Restriction) lastMember() int {
	if r.End.Record > 0 {
		return r.End.Member
	}
	return r.End.Member - 1
}

// size returns the member bytes r touches: its byte weight for progress and for runners
// deciding how to balance work. A member r owns only part of counts in full: record counts
// are not known before reading, and overestimating keeps a runner from starving a residual.
func (r Restriction) size() float64 {
	if r.IsEmpty() {
		return 0
	}
	var n int64
	for _, s := range r.Sizes {
		n += s
	}
	return float64(n)
}

// memberSize returns the stored size of member m, which r must touch.
func (r Restriction) memberSize(m int) int64 { return r.Sizes[m-r.Start.Member] }

// splitAt divides r at p, which must lie in (Start, End], into [Start, p) and [p, End).
func (r Restriction) splitAt(p Position) (primary, residual Restriction) {
	primary = Restriction{Start: r.Start, End: p}
	residual = Restriction{Start: p, End: r.End}
	primary.Sizes = r.Sizes[: primary.lastMember()-r.Start.Member+1 : primary.lastMember()-r.Start.Member+1]
	residual.Sizes = r.Sizes[p.Member-r.Start.Member:]
	return primary, residual
}

// valid reports whether r is well formed for a descriptor of n members.
func (r Restriction) valid(n int) error {
	switch {
	case r.Start.Member < 0 || r.Start.Record < 0 || r.End.Record < 0:
		return fmt.Errorf("s3io: restriction [%v, %v) has a negative position", r.Start, r.End)
	case r.End.Less(r.Start):
		return fmt.Errorf("s3io: restriction [%v, %v) ends before it starts", r.Start, r.End)
	case r.lastMember() >= n:
		return fmt.Errorf("s3io: restriction [%v, %v) reaches past the descriptor's %d members", r.Start, r.End, n)
	case !r.IsEmpty() && len(r.Sizes) != r.lastMember()-r.Start.Member+1:
		return fmt.Errorf("s3io: restriction [%v, %v) carries %d member sizes", r.Start, r.End, len(r.Sizes))
	}
	return nil
}

// Tracker is the sdf.RTracker of a Restriction. The reader claims the first position of a
// member before opening it, and each later record's position before emitting that record;
// after the last member it claims (members, 0), which fails and ends the restriction.
type Tracker struct {
	rest       Restriction
	claimed    Position // last successful claim; meaningful when hasClaimed
	hasClaimed bool
	stopped    bool // a claim failed: the reader must stop
	err        error
}

// NewTracker returns a tracker over rest.
func NewTracker(rest Restriction) *Tracker { return &Tracker{rest: rest} }

// TryClaim claims pos, a Position or *Position, and reports whether the reader owns it.
// Positions must be claimed in increasing order. The tracker copies a *Position: the caller
// may reuse it.
func (t *Tracker) TryClaim(pos any) bool {
	if t.stopped {
		t.err = errors.New("s3io: claim after the tracker stopped the reader")
		return false
	}
	var p Position
	ok := true
	switch v := pos.(type) {
	case Position:
		p = v
	case *Position:
		if v == nil {
			ok = false
			break
		}
		p = *v // the reader reuses one *Position so that a claim costs no allocation
	default:
		ok = false
	}
	switch {
	case !ok:
		t.err = fmt.Errorf("s3io: claimed a %T, want a Position", pos)
	case p.Less(t.rest.Start):
		t.err = fmt.Errorf("s3io: claimed %v before the restriction's start %v", p, t.rest.Start)
	case t.hasClaimed && !t.claimed.Less(p):
		t.err = fmt.Errorf("s3io: claimed %v after %v; claims must increase", p, t.claimed)
	case !p.Less(t.rest.End):
		t.stopped = true
		return false
	default:
		t.claimed, t.hasClaimed = p, true
		return true
	}
	t.stopped = true
	return false
}

// GetError returns the misuse that stopped the tracker, if any.
func (t *Tracker) GetError() error { return t.err }

// IsDone reports whether the reader has nothing left to claim: the restriction is empty, a
// claim hit its end, or the last claim was the last record a split left it.
func (t *Tracker) IsDone() bool {
	if t.err != nil {
		return false
	}
	return t.rest.IsEmpty() || t.stopped || t.hasClaimed && !t.nextAfterClaimed().Less(t.rest.End)
}

func (t *Tracker) nextAfterClaimed() Position {
	return Position{Member: t.claimed.Member, Record: t.claimed.Record + 1}
}

// GetRestriction returns the current (possibly split) restriction.
func (t *Tracker) GetRestriction() any { return t.rest }

// IsBounded reports true: a split descriptor is finite.
func (t *Tracker) IsBounded() bool { return true }

// GetProgress reports progress in stored bytes: members before the one being read are done,
// the rest remain.
func (t *Tracker) GetProgress() (done, remaining float64) {
	total := t.rest.size()
	if !t.hasClaimed {
		return 0, total
	}
	for m := t.rest.Start.Member; m < t.claimed.Member; m++ {
		done += float64(t.rest.memberSize(m))
	}
	return done, math.Max(total-done, 0)
}

// TrySplit keeps the first part of the remaining work and returns the rest as a residual.
// fraction 0 (a checkpoint) splits right after the last claimed record. Otherwise the split
// lands on the first member boundary past the given fraction of the remaining bytes, so
// a residual starts at the beginning of an object; when no boundary is left there is no split.
// Claimed positions always stay in the primary.
func (t *Tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.stopped || t.IsDone() {
		return t.rest, nil, nil
	}
	fraction = math.Min(math.Max(fraction, 0), 1)

	// first is the first position nobody has claimed: every split point must be at or after it.
	first := t.rest.Start
	if t.hasClaimed {
		first = t.nextAfterClaimed()
	}
	var split Position
	if fraction == 0 {
		split = first
	} else {
		var remaining float64
		for m := first.Member; m <= t.rest.lastMember(); m++ {
			remaining += float64(t.rest.memberSize(m))
		}
		want := fraction * remaining
		var seen float64
		found := false
		for m := first.Member; m <= t.rest.lastMember(); m++ {
			seen += float64(t.rest.memberSize(m))
			b := Position{Member: m + 1}
			if !b.Less(t.rest.End) {
				break
			}
			if seen >= want {
				split, found = b, true
				break
			}
		}
		if !found {
			return t.rest, nil, nil
		}
	}
	if !split.Less(t.rest.End) {
		return t.rest, nil, nil
	}
	p, r := t.rest.splitAt(split)
	t.rest = p
	return p, r, nil
}
