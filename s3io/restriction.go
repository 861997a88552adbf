package s3io

import (
	"errors"
	"fmt"
	"math"

	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// position identifies one record of a split: the ordinal of its object among the
// descriptor's members, and the record's index among that object's records (counted from 0
// in framer order, skipped blank lines not counted). Together with the descriptor's ID it is
// a deterministic identity for the record.
type position struct {
	Member int
	Index  int64
}

// Less orders positions by member, then record.
func (p position) Less(q position) bool {
	return p.Member < q.Member || p.Member == q.Member && p.Index < q.Index
}

// String renders p for errors and logs.
func (p position) String() string { return fmt.Sprintf("member %d record %d", p.Member, p.Index) }

// restriction is the half-open range [Start, End) of positions of one split descriptor that a
// reader owns. Record counts are unknown until objects are read, so an End of (m, 0) means
// "every record of members before m", and (m, r) with r > 0 additionally owns the first r
// records of member m. Its fields, and those of position and resumeHint, are exported
// because Beam encodes a restriction with a schema coder built from exported fields; the
// types are not, since only the runner and this package handle them.
type restriction struct {
	Start, End position
	// Sizes holds the byte weight the range owns of each member it touches, from
	// Start.Member on: stored bytes, less what a split gave away of a member shared with
	// another restriction. Progress, split points and RestrictionSize are weighed with it,
	// since CreateTracker sees only the restriction, never the descriptor.
	Sizes []int64
	// Resume, when Resume.Offset > 0, says where reading Start.Member may begin instead of at
	// the member's start.
	Resume resumeHint
}

// resumeHint is where the read of a restriction's first member resumes (member.Resume).
type resumeHint = member.Resume

// fullRestriction is the restriction of all of d's records.
func fullRestriction(d SplitDescriptor) restriction {
	sizes := make([]int64, len(d.Members))
	for i, m := range d.Members {
		sizes[i] = m.weight()
	}
	return restriction{Start: position{}, End: position{Member: len(d.Members)}, Sizes: sizes}
}

// IsEmpty reports whether r owns no position.
func (r restriction) IsEmpty() bool { return !r.Start.Less(r.End) }

// lastMember is the ordinal of the last member r touches (Start.Member-1 when none).
func (r restriction) lastMember() int {
	if r.End.Index > 0 {
		return r.End.Member
	}
	return r.End.Member - 1
}

// size returns r's byte weight: what a runner balances and RestrictionSize reports.
func (r restriction) size() float64 {
	if r.IsEmpty() {
		return 0
	}
	var n int64
	for _, s := range r.Sizes {
		n += s
	}
	return float64(n)
}

// weight returns the byte weight r owns of member m, which r must touch.
func (r restriction) weight(m int) int64 { return r.Sizes[m-r.Start.Member] }

// memberBoundaries splits r at member boundaries into pieces of about target bytes each, for
// runners that only split restrictions up front: as many pieces as target fits in r's weight
// (rounded), of about equal weight, each member in the piece its middle falls in. Even
// pieces, not pieces of target and a remainder: a runner that reads a bundle's restrictions
// one after another (prism) begins each with what was fetched ahead for it while the one
// before was read, and a remainder of one small member leaves no time to fetch ahead for the
// next (traced through a 30 ms network: 0.1–0.2 s of waiting after each).
func (r restriction) memberBoundaries(target int64) []restriction {
	n := math.Round(r.size() / float64(target))
	if n <= 1 {
		return []restriction{r}
	}
	piece := r.size() / n
	var out []restriction
	rest := r
	acc, k := 0.0, 1.0
	for m := r.Start.Member; m < r.lastMember(); m++ {
		acc += float64(r.weight(m))
		if mid := acc + float64(r.weight(m+1))/2; mid > k*piece {
			p, res := rest.splitAt(position{Member: m + 1}, -1, resumeHint{})
			out = append(out, p)
			rest, k = res, math.Ceil(mid/piece) // the piece mid falls in
		}
	}
	return append(out, rest)
}

// splitAt divides r at p, which must lie in (Start, End], into [Start, p) and [p, End).
// When p is inside a member, primaryShare is the weight of that member the primary keeps
// and hint is where the residual may resume reading it.
func (r restriction) splitAt(p position, primaryShare int64, hint resumeHint) (primary, residual restriction) {
	primary = restriction{Start: r.Start, End: p, Resume: r.Resume}
	residual = restriction{Start: p, End: r.End}
	n := primary.lastMember() - r.Start.Member + 1
	primary.Sizes = append([]int64(nil), r.Sizes[:n]...)
	residual.Sizes = append([]int64(nil), r.Sizes[p.Member-r.Start.Member:]...)
	if p.Index > 0 {
		whole := r.weight(p.Member)
		share := min(max(primaryShare, 0), whole)
		primary.Sizes[n-1] = share
		residual.Sizes[0] = whole - share
		if hint.Known() && hint.Index <= p.Index {
			residual.Resume = hint
		}
	}
	return primary, residual
}

// valid reports whether r is well formed for a descriptor of n members.
func (r restriction) valid(n int) error {
	switch {
	case r.Start.Member < 0 || r.Start.Index < 0 || r.End.Index < 0:
		return fmt.Errorf("s3io: restriction [%v, %v) has a negative position", r.Start, r.End)
	case r.End.Less(r.Start):
		return fmt.Errorf("s3io: restriction [%v, %v) ends before it starts", r.Start, r.End)
	case r.lastMember() >= n:
		return fmt.Errorf("s3io: restriction [%v, %v) reaches past the descriptor's %d members", r.Start, r.End, n)
	case !r.IsEmpty() && len(r.Sizes) != r.lastMember()-r.Start.Member+1:
		return fmt.Errorf("s3io: restriction [%v, %v) carries %d member sizes", r.Start, r.End, len(r.Sizes))
	case r.Resume.Known() && r.Resume.Index > r.Start.Index:
		return fmt.Errorf("s3io: restriction [%v, %v) resumes at record %d, past its start", r.Start, r.End, r.Resume.Index)
	}
	return nil
}

// tracker is the sdf.RTracker of a restriction. The reader claims the first position of a
// member before opening it, and each later record's position before emitting that record;
// after the last member it claims (members, 0), which fails and ends the restriction. It
// refuses a checkpoint before its first claim (TrySplit says why).
type tracker struct {
	rest       restriction
	claimed    position // last successful claim; meaningful when hasClaimed
	hasClaimed bool
	stopped    bool // a claim failed: the reader must stop
	err        error

	// What is known of the member being read (claimed.Member).
	storedRead  int64      // stored bytes of it the reader had taken at its last claim
	firstRecord int64      // the first record claimed in it, for bytes-per-record estimates
	hint        resumeHint // where a residual inside it may resume
	// log is the resume points of its read, which refine a hint into it.
	log *member.Log

	// splits says where the tracker may split; the zero value anywhere.
	splits splitPoints
}

// splitPoints says where a tracker may split a restriction.
type splitPoints int

const (
	// anyPosition: at member boundaries, and at records inside a member being read.
	anyPosition splitPoints = iota
	// objectBoundaries: at member boundaries only, so that every object is read whole by one
	// reader (Config.VerifyChecksums: an object's checksum needs all of its bytes). A
	// checkpoint then lands at the end of the member being read.
	objectBoundaries
)

// newTracker returns a tracker over rest that splits at any position.
func newTracker(rest restriction) *tracker { return &tracker{rest: rest} }

// TryClaim claims pos, a position, and reports whether the reader owns it: the reader
// claims a member's first position with it before opening the member, and its records in
// runs (claimRun), which carry what a resume hint needs. Positions must be claimed in
// increasing order.
func (t *tracker) TryClaim(pos any) bool {
	if t.stopped {
		t.err = errors.New("s3io: claim after the tracker stopped the reader")
		return false
	}
	p, ok := pos.(position)
	if !ok {
		t.err = fmt.Errorf("s3io: claimed a %T, want a position", pos)
	}
	if !ok || !t.admits(p) {
		t.stopped = true
		return false
	}
	t.record(p, p, 0, -1, false, nil)
	return true
}

// admits reports whether the reader may claim p, the first position of a claim: it must
// follow the last claim and lie inside the restriction. A misuse sets t.err.
func (t *tracker) admits(p position) bool {
	switch {
	case p.Less(t.rest.Start):
		t.err = fmt.Errorf("s3io: claimed %v before the restriction's start %v", p, t.rest.Start)
	case t.hasClaimed && !t.claimed.Less(p):
		t.err = fmt.Errorf("s3io: claimed %v after %v; claims must increase", p, t.claimed)
	case !p.Less(t.rest.End):
	default:
		return true
	}
	return false
}

// record notes a claim from first to last (one member's records), the stored bytes the
// decoder had taken at last, and last's end offset (-1: no resume hint).
func (t *tracker) record(first, last position, stored, end int64, storedOffsets bool, log *member.Log) {
	if !t.hasClaimed || first.Member != t.claimed.Member {
		t.firstRecord, t.storedRead, t.hint, t.log = first.Index, 0, resumeHint{}, nil
		if first.Member == t.rest.Start.Member {
			t.hint = t.rest.Resume
		}
	}
	t.claimed, t.hasClaimed = last, true
	t.storedRead = max(t.storedRead, stored)
	if log != nil {
		t.log = log
	}
	if end >= 0 {
		t.hint = resumeHint{Index: last.Index + 1, Offset: end, StoredOffsets: storedOffsets}
	}
}

// runClaim is what the batched reader claims for consecutive records of one member at
// once: records From, From+1, …, From+len(Ends)-1, with each one's end offset and the stored
// bytes the decoder had taken when it was framed.
type runClaim struct {
	Member int
	From   int64
	// Ends[i] is the decompressed-stream offset just past record From+i; Stored[i] the
	// member's stored bytes taken when it was framed. Both have one entry per record.
	Ends, Stored []int64
	// Hint is false for a framer that cannot resume at a byte offset: the run then leaves
	// the tracker's resume hint as it was, as TryClaim does.
	Hint bool
	// StoredOffsets is true when Ends are also byte offsets in the object (it is read
	// uncompressed).
	StoredOffsets bool
	Log           *member.Log
}

// claimRun claims the longest prefix of c's records that lies before the restriction's
// current end, in one step, and returns its length; 0 means the run's first record is past
// the end, and the tracker stops the reader as a failed TryClaim does. A run cut short also
// stops it: the record after the granted prefix belongs to a residual. The resume hint and
// the bytes read are those of the last record granted, exactly as if each granted record
// had been claimed with TryClaim. Under the LockRTracker's mutex (claimRunLocked) no split
// can fall between deciding the prefix and recording the claim, so a split point inside
// the run always lands after the granted records, never before them: what is emitted is
// exactly what the primary owns.
func (t *tracker) claimRun(c *runClaim) int {
	if t.stopped {
		t.err = errors.New("s3io: claim after the tracker stopped the reader")
		return 0
	}
	n := len(c.Ends)
	from := position{Member: c.Member, Index: c.From}
	if n == 0 || len(c.Stored) != n {
		t.err = fmt.Errorf("s3io: claimed a run of %d records with %d sizes", n, len(c.Stored))
	}
	if t.err != nil || !t.admits(from) {
		t.stopped = true
		return 0
	}
	granted := n
	if t.rest.End.Member == c.Member {
		granted = int(min(int64(n), t.rest.End.Index-c.From))
	}
	last := granted - 1
	end := int64(-1)
	if c.Hint {
		end = c.Ends[last]
	}
	t.record(from, position{Member: c.Member, Index: c.From + int64(last)}, c.Stored[last], end, c.StoredOffsets, c.Log)
	t.stopped = granted < n
	return granted
}

// GetError returns the misuse that stopped the tracker, if any.
func (t *tracker) GetError() error { return t.err }

// IsDone reports whether the reader has nothing left to claim: the restriction is empty, a
// claim hit its end, or the last claim was the last record a split left it.
func (t *tracker) IsDone() bool {
	if t.err != nil {
		return false
	}
	return t.rest.IsEmpty() || t.stopped || t.hasClaimed && !t.nextAfterClaimed().Less(t.rest.End)
}

func (t *tracker) nextAfterClaimed() position {
	return position{Member: t.claimed.Member, Index: t.claimed.Index + 1}
}

// GetRestriction returns the current (possibly split) restriction.
func (t *tracker) GetRestriction() any { return t.rest }

// IsBounded reports true: a split descriptor is finite.
func (t *tracker) IsBounded() bool { return true }

// consumed returns the weight of the current member already read.
func (t *tracker) consumed() int64 { return min(t.storedRead, t.rest.weight(t.claimed.Member)) }

// GetProgress reports progress in stored bytes: members before the one being read, and what
// has been received of that one, are done; the rest remains.
func (t *tracker) GetProgress() (done, remaining float64) {
	total := t.rest.size()
	if !t.hasClaimed || t.rest.IsEmpty() {
		return 0, total
	}
	var d int64
	for m := t.rest.Start.Member; m < t.claimed.Member; m++ {
		d += t.rest.weight(m)
	}
	done = float64(d + t.consumed())
	return done, math.Max(total-done, 0)
}

// TrySplit keeps about the first fraction of the remaining bytes as the primary and returns
// the rest as the residual. Split points are, in order of preference: a member boundary
// (when members other than the current one remain, the first boundary past the fraction);
// else a record of the current member, estimated from the bytes per record read so far.
// fraction 0 (a checkpoint) splits right after the last claimed record. The residual carries
// a resume hint when the split point is inside a member that is being read. Claimed
// positions always stay in the primary, and a failed split changes nothing.
//
// A checkpoint before the first claim is refused, as Beam Java's harness refuses it
// (apache/beam#32044): its primary would be empty and its residual the whole restriction,
// so a runner that checkpoints every bundle after a few seconds (Dataflow streaming) could
// hand the same restriction back again and again without a record read. Refused, the reader
// goes on to its first claim, and the runner's next checkpoint lands after it. A fractional
// split before the first claim is still taken (prism asks for 0.5 when a bundle looks
// stalled): it splits at a member boundary after the first member, so the primary keeps
// work and the residual is only part of the restriction.
func (t *tracker) TrySplit(fraction float64) (primary, residual any, err error) {
	if t.stopped || t.IsDone() {
		return t.rest, nil, nil
	}
	fraction = math.Min(math.Max(fraction, 0), 1)
	last := t.rest.lastMember()

	var split position
	share := int64(-1)
	hint := resumeHint{}
	switch {
	case !t.hasClaimed && fraction == 0:
		return t.rest, nil, nil
	case !t.hasClaimed:
		var total int64
		for m := t.rest.Start.Member; m <= last; m++ {
			total += t.rest.weight(m)
		}
		b, ok := t.boundary(t.rest.Start.Member, t.rest.weight(t.rest.Start.Member), fraction*float64(total))
		if !ok {
			return t.rest, nil, nil
		}
		split = b
	case fraction == 0 && t.splits == objectBoundaries:
		split = position{Member: t.claimed.Member + 1}
	case fraction == 0:
		split = t.nextAfterClaimed()
		share, hint = t.consumed(), t.log.Refine(t.hint)
	default:
		cur := t.claimed.Member
		curLeft := t.rest.weight(cur) - t.consumed()
		remaining := curLeft
		for m := cur + 1; m <= last; m++ {
			remaining += t.rest.weight(m)
		}
		want := fraction * float64(remaining)
		if b, ok := t.boundary(cur, curLeft, want); ok {
			split = b
			break
		}
		if (position{Member: cur + 1}).Less(t.rest.End) || t.splits == objectBoundaries {
			return t.rest, nil, nil // the split point lies in a member nobody has read yet, or inside one read whole
		}
		// The current member is the last with work left: split inside it.
		records := t.claimed.Index - t.firstRecord + 1
		if t.storedRead <= 0 || records <= 0 {
			return t.rest, nil, nil // nothing read yet to estimate a record's size from
		}
		perRecord := float64(t.storedRead) / float64(records)
		ahead := int64(math.Ceil(want / perRecord))
		split = position{Member: cur, Index: t.claimed.Index + 1 + ahead}
		share, hint = t.consumed()+int64(float64(ahead)*perRecord), t.log.Refine(t.hint)
	}
	if !split.Less(t.rest.End) || t.hasClaimed && !t.claimed.Less(split) {
		return t.rest, nil, nil
	}
	p, r := t.rest.splitAt(split, share, hint)
	t.rest = p
	return p, r, nil
}

// boundary returns the first member boundary after member from, and before End, with at
// least want bytes between the read position and it (the first member's remaining bytes
// are firstLeft; later members count whole). It reports false when there is none: the
// split point then lies inside the current member, or in a later one nobody has read.
func (t *tracker) boundary(from int, firstLeft int64, want float64) (position, bool) {
	acc := float64(firstLeft)
	for m := from + 1; ; m++ {
		b := position{Member: m}
		if !b.Less(t.rest.End) {
			return position{}, false
		}
		if acc >= want {
			return b, true
		}
		acc += float64(t.rest.weight(m))
	}
}
