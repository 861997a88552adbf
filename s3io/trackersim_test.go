package s3io

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// trackerSim is the one simulation harness of the tracker's property tests
// (TestTrackerProtocolProperty, TestTrackerByteClaimsProperty, FuzzTrackerSplits). It plays
// a runner and the reader of sdf.go over one descriptor: it processes the full restriction
// and then every residual split off, claiming as readFn.ProcessElement and readMember do,
// and before and after every claim it checks the tracker's progress and may split it at a
// random fraction, checking the primary and residual. At the end every record must have
// been emitted exactly once.
type trackerSim struct {
	t     testing.TB
	rng   *rand.Rand
	label string // names the case in failures

	members []Member
	counts  []int64 // records per member
	// offsets, when set, makes the reader claim records in runs of one that report bytes
	// (as readMember's runs do): offsets[m][r] is where record r of member m starts, and
	// offsets[m][counts[m]] is the member's size. Fractional splits then land inside members
	// and residuals carry resume hints, which must point at the true start of their record.
	// Without it the reader claims bare positions, which report no bytes: fractional splits
	// land on member boundaries and no residual carries a hint.
	offsets [][]int64
	// runs, with offsets, makes the reader claim as ReadBatches' batcher does: runs of 1 to
	// 8 records with one claimRun each, emitting the prefix granted.
	runs bool

	splitProb  float64 // the chance of a split at each step
	splitsLeft int     // splits the runner may still try
	fraction   func(rng *rand.Rand) float64

	emitted map[position]int
	queue   []restriction
	// Trackers run; residuals split off by checkpoints (fraction 0) and by fractional
	// splits, and of those the ones that start inside a member; resume hints followed;
	// checkpoints asked for before a tracker's first claim (each must be refused).
	trackers, checkpoints, fractional, inMember, hinted, refusedEarly int
}

// newPositionSim is a random case of TestTrackerProtocolProperty: up to 8 members of up to
// 6 records each, with weights unrelated to their records (some unknown, 0), claimed by
// position.
func newPositionSim(t testing.TB, seed uint64) *trackerSim {
	rng := rand.New(rand.NewPCG(seed, 0x7472))
	n := 1 + rng.IntN(8)
	s := &trackerSim{t: t, rng: rng, members: make([]Member, n), counts: make([]int64, n)}
	sizes := make([]int64, n)
	for i := range n {
		s.counts[i] = int64(rng.IntN(7))
		if rng.IntN(5) > 0 {
			sizes[i] = int64(rng.IntN(1000))
		}
		s.members[i] = Member{Key: fmt.Sprint(i), Size: sizes[i]}
	}
	s.splitProb = []float64{0, 0.05, 0.2, 0.5}[rng.IntN(4)]
	s.splitsLeft = 40
	s.fraction = func(rng *rand.Rand) float64 {
		switch rng.IntN(6) {
		case 0, 1:
			return 0
		case 2:
			return 1
		default:
			return rng.Float64()
		}
	}
	s.label = fmt.Sprintf("positions seed %d (counts %v sizes %v)", seed, s.counts, sizes)
	return s
}

// newByteSim is a random case of TestTrackerByteClaimsProperty: up to 5 members of up to 39
// records of 1 to 60 bytes each, claimed with the bytes read.
func newByteSim(t testing.TB, seed uint64) *trackerSim {
	rng := rand.New(rand.NewPCG(seed, 99))
	n := 1 + rng.IntN(5)
	s := &trackerSim{t: t, rng: rng, members: make([]Member, n), counts: make([]int64, n), offsets: make([][]int64, n)}
	for m := range n {
		off := int64(0)
		for range rng.IntN(40) {
			s.offsets[m] = append(s.offsets[m], off)
			off += 1 + rng.Int64N(60)
		}
		s.offsets[m] = append(s.offsets[m], off)
		s.counts[m] = int64(len(s.offsets[m]) - 1)
		s.members[m] = Member{Key: fmt.Sprint(m), Size: off}
	}
	s.splitProb = 0.25
	s.splitsLeft = 60
	s.fraction = func(rng *rand.Rand) float64 { return []float64{0, rng.Float64(), 0.5, 1}[rng.IntN(4)] }
	s.label = fmt.Sprintf("byte claims seed %d (offsets %v)", seed, s.offsets)
	return s
}

// run processes the descriptor and checks that every record was emitted exactly once.
func (s *trackerSim) run() {
	s.t.Helper()
	s.emitted = map[position]int{}
	s.queue = []restriction{fullRestriction(SplitDescriptor{Members: s.members})}
	for len(s.queue) > 0 {
		r := s.queue[0]
		s.queue = s.queue[1:]
		s.process(r)
	}
	var want, got []position
	for m, c := range s.counts {
		for r := range c {
			want = append(want, position{Member: m, Index: r})
		}
	}
	for p, c := range s.emitted {
		for range c {
			got = append(got, p)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Less(got[j]) })
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) {
		s.t.Fatalf("%s: emitted %v, want each of %v exactly once", s.label, got, want)
	}
}

// maybeSplit splits tr at a random fraction with probability splitProb, checking the
// primary/residual invariants, and queues the residual.
func (s *trackerSim) maybeSplit(tr *tracker, unsplit *bool) {
	if s.splitsLeft <= 0 || s.rng.Float64() >= s.splitProb {
		return
	}
	s.splitsLeft--
	before := tr.GetRestriction().(restriction)
	f := s.fraction(s.rng)
	prim, res, err := tr.TrySplit(f)
	if err != nil {
		s.t.Fatalf("%s: TrySplit(%v): %v", s.label, f, err)
	}
	p := prim.(restriction)
	if !reflect.DeepEqual(p, tr.GetRestriction()) {
		s.t.Fatalf("%s: TrySplit primary %+v differs from GetRestriction %+v", s.label, p, tr.GetRestriction())
	}
	if err := p.valid(len(s.counts)); err != nil {
		s.t.Fatalf("%s: primary after TrySplit(%v) of %+v: %v", s.label, f, before, err)
	}
	if f == 0 && !tr.hasClaimed {
		if res != nil {
			s.t.Fatalf("%s: TrySplit(0) before the first claim of %+v gave residual %+v", s.label, before, res)
		}
		s.refusedEarly++
	}
	if res == nil {
		if !reflect.DeepEqual(p, before) {
			s.t.Fatalf("%s: TrySplit(%v) with no residual changed the restriction %+v to %+v", s.label, f, before, p)
		}
		return
	}
	*unsplit = false
	r := res.(restriction)
	if f == 0 {
		s.checkpoints++
	} else {
		s.fractional++
		if r.Start.Index > 0 {
			s.inMember++
		}
	}
	if err := r.valid(len(s.counts)); err != nil {
		s.t.Fatalf("%s: residual after TrySplit(%v) of %+v: %v", s.label, f, before, err)
	}
	if p.Start != before.Start || r.End != before.End || p.End != r.Start || r.IsEmpty() {
		s.t.Fatalf("%s: TrySplit(%v) of %+v gave %+v and %+v", s.label, f, before, p, r)
	}
	if s.offsets == nil && f > 0 && r.Start.Index != 0 {
		s.t.Fatalf("%s: TrySplit(%v) residual %+v starts mid-member, though no claim reported bytes", s.label, f, r)
	}
	if tr.hasClaimed && !tr.claimed.Less(p.End) {
		s.t.Fatalf("%s: TrySplit(%v) gave away claimed %v: primary %+v", s.label, f, tr.claimed, p)
	}
	if f == 0 && !tr.IsDone() {
		s.t.Fatalf("%s: IsDone = false after checkpoint, primary %+v", s.label, p)
	}
	s.queue = append(s.queue, r)
}

func (s *trackerSim) checkProgress(tr *tracker, unsplit bool, total float64, lastDone *float64) {
	done, rem := tr.GetProgress()
	if done < 0 || rem < 0 || math.IsNaN(done) || math.IsNaN(rem) {
		s.t.Fatalf("%s: GetProgress = %v, %v", s.label, done, rem)
	}
	if size := tr.GetRestriction().(restriction).size(); done+rem != size {
		s.t.Fatalf("%s: GetProgress = %v + %v, restriction size %v", s.label, done, rem, size)
	}
	if unsplit {
		if done+rem != total {
			s.t.Fatalf("%s: unsplit GetProgress = %v + %v, want total %v", s.label, done, rem, total)
		}
		if done < *lastDone {
			s.t.Fatalf("%s: progress went back from %v to %v", s.label, *lastDone, done)
		}
		*lastDone = done
	}
}

// process runs the reader protocol of readFn.ProcessElement / readMember over rest.
func (s *trackerSim) process(rest restriction) {
	n := len(s.counts)
	if err := rest.valid(n); err != nil {
		s.t.Fatalf("%s: restriction %+v: %v", s.label, rest, err)
	}
	for _, w := range rest.Sizes {
		if w < 0 {
			s.t.Fatalf("%s: negative weight in %+v", s.label, rest)
		}
	}
	s.trackers++
	tr := newTracker(rest)
	unsplit, total, lastDone := true, rest.size(), 0.0
	step := func() {
		s.checkProgress(tr, unsplit, total, &lastDone)
		s.maybeSplit(tr, &unsplit)
		s.checkProgress(tr, unsplit, total, &lastDone)
	}
	finish := func() {
		if err := tr.GetError(); err != nil {
			s.t.Fatalf("%s: tracker over %+v: GetError = %v", s.label, rest, err)
		}
		if !tr.IsDone() {
			s.t.Fatalf("%s: tracker over %+v now %+v: IsDone = false at the end", s.label, rest, tr.GetRestriction())
		}
		// A done tracker never splits.
		if _, res, _ := tr.TrySplit(s.fraction(s.rng)); res != nil {
			s.t.Fatalf("%s: done tracker split off %+v", s.label, res)
		}
	}
	for m := rest.Start.Member; ; m++ {
		first, hint := int64(0), resumeHint{}
		if m == rest.Start.Member {
			first, hint = rest.Start.Index, rest.Resume
		}
		step()
		if !tr.TryClaim(position{Member: m, Index: first}) {
			finish()
			return
		}
		if m >= n {
			s.t.Fatalf("%s: claimed member %d of %d", s.label, m, n)
		}
		// Like readMember, reuse one claim for the records of a member. With byte claims, a
		// resume hint lets the reader start at its record instead of the member's start.
		idx, base := int64(0), int64(0)
		if hint.Known() {
			s.hinted++
			if s.offsets == nil {
				s.t.Fatalf("%s: hint %+v for member %d, though no claim reported bytes", s.label, hint, m)
			}
			if hint.Index > s.counts[m] || s.offsets[m][hint.Index] != hint.Offset || !hint.StoredOffsets {
				s.t.Fatalf("%s: hint %+v for member %d, but record %d starts at %d", s.label, hint, m, hint.Index, s.offsets[m][min(hint.Index, s.counts[m])])
			}
			idx, base = hint.Index, hint.Offset
		}
		if s.runs {
			if !s.claimRuns(tr, m, idx, first, base, step) {
				finish()
				return
			}
			continue
		}
		// One record at a time: a position, or with byte claims a run of one record, which
		// claims as a record claimed alone would.
		claim := func(idx int64) bool { return tr.TryClaim(position{Member: m, Index: idx}) }
		if s.offsets != nil {
			raw := int64(0) // what the reader has received since it began, with some read-ahead
			claim = func(idx int64) bool {
				raw = max(raw, min(s.offsets[m][idx+1]+s.rng.Int64N(100), s.members[m].Size)-base)
				return tr.claimRun(&runClaim{Member: m, From: idx, Ends: []int64{s.offsets[m][idx+1]}, Stored: []int64{raw}, Hint: true, StoredOffsets: true}) == 1
			}
		}
		for ; idx < s.counts[m]; idx++ {
			if idx < first {
				continue
			}
			if idx > first {
				step()
				if !claim(idx) {
					finish()
					return
				}
			}
			step()
			s.emitted[position{Member: m, Index: idx}]++
		}
	}
}

// newRunSim is a random case of TestTrackerRunClaimsProperty: newByteSim's descriptors, read
// in runs claimed with claimRun.
func newRunSim(t testing.TB, seed uint64) *trackerSim {
	s := newByteSim(t, seed)
	s.runs = true
	s.label = "runs: " + s.label
	return s
}

// claimRuns reads member m from record idx on (first is claimed) in runs, as the batcher
// does; it reports false when a run was cut short and the reader must stop.
func (s *trackerSim) claimRuns(tr *tracker, m int, idx, first, base int64, step func()) bool {
	owned := first
	raw := int64(0)
	for idx = max(idx, first); idx < s.counts[m]; {
		n := min(int64(1+s.rng.IntN(8)), s.counts[m]-idx)
		ends, stored := make([]int64, n), make([]int64, n)
		for i := range n {
			ends[i] = s.offsets[m][idx+i+1]
			raw = max(raw, min(ends[i]+s.rng.Int64N(100), s.members[m].Size)-base)
			stored[i] = raw
		}
		skip := min(max(owned-idx+1, 0), n)
		granted := skip
		step() // a split between framing the run and claiming it
		if skip < n {
			granted += int64(tr.claimRun(&runClaim{Member: m, From: idx + skip, Ends: ends[skip:], Stored: stored[skip:], Hint: true, StoredOffsets: true}))
		}
		for i := range granted {
			s.emitted[position{Member: m, Index: idx + i}]++
		}
		if granted > 0 {
			owned = idx + granted - 1
		}
		step()
		if granted < n {
			return false
		}
		idx += n
	}
	return true
}
