package s3io

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTrackerByteClaimsProperty drives the tracker the way readMember does, with claims
// that report bytes (so fractional splits land inside members and residuals carry resume
// hints), splitting at random fractions and recursively processing every residual. Every
// position must be emitted exactly once, and every resume hint must point at the true start
// of the record it names.
func TestTrackerByteClaimsProperty(t *testing.T) {
	inMember, hinted := 0, 0
	for seed := uint64(0); seed < 3000; seed++ {
		i, h := checkByteClaims(t, seed)
		inMember += i
		hinted += h
	}
	if inMember < 100 || hinted < 100 {
		t.Fatalf("only %d in-member fractional splits and %d hinted resumes: the test lost its teeth", inMember, hinted)
	}
	t.Logf("%d in-member fractional splits, %d hinted resumes", inMember, hinted)
}

// FuzzTrackerSplits runs the same check on fuzzer-chosen seeds:
// go test -fuzz=FuzzTrackerSplits ./s3io
func FuzzTrackerSplits(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { checkByteClaims(t, seed) })
}

// checkByteClaims runs one random descriptor through the reader protocol, returning how
// many in-member fractional splits and hinted resumes it exercised.
func checkByteClaims(t *testing.T, seed uint64) (inMember, hinted int) {
	rng := rand.New(rand.NewPCG(seed, 99))
	n := 1 + rng.IntN(5)
	starts := make([][]int64, n) // starts[m][r]: offset of record r; last entry is the size
	members := make([]Member, n)
	for m := range n {
		off := int64(0)
		for range rng.IntN(40) {
			starts[m] = append(starts[m], off)
			off += 1 + rng.Int64N(60)
		}
		starts[m] = append(starts[m], off)
		members[m] = Member{Key: fmt.Sprint(m), Size: off}
	}
	emitted := map[position]int{}
	queue := []restriction{fullRestriction(SplitDescriptor{Members: members})}
	splits := 0
	for len(queue) > 0 {
		rest := queue[0]
		queue = queue[1:]
		if err := rest.valid(n); err != nil {
			t.Fatalf("seed %d: %+v: %v", seed, rest, err)
		}
		for _, s := range rest.Sizes {
			if s < 0 {
				t.Fatalf("seed %d: negative weight in %+v", seed, rest)
			}
		}
		tr := newTracker(rest)
		maybeSplit := func() {
			if splits > 60 || rng.IntN(4) != 0 {
				return
			}
			f := []float64{0, rng.Float64(), 0.5, 1}[rng.IntN(4)]
			_, res, err := tr.TrySplit(f)
			if err != nil {
				t.Fatalf("seed %d: TrySplit: %v", seed, err)
			}
			if res != nil {
				r := res.(restriction)
				if r.Start.Index > 0 && f > 0 {
					inMember++
				}
				splits++
				queue = append(queue, r)
			}
		}
	members:
		for m := rest.Start.Member; ; m++ {
			first, hint := int64(0), resumeHint{}
			if m == rest.Start.Member {
				first, hint = rest.Start.Index, rest.Resume
			}
			maybeSplit()
			if !tr.TryClaim(&readerClaim{position: position{Member: m, Index: first}, end: -1}) {
				break
			}
			recs := int64(len(starts[m]) - 1)
			idx, base := int64(0), int64(0)
			if hint.known() {
				hinted++
				if hint.Index > recs || starts[m][hint.Index] != hint.Offset || !hint.Seekable {
					t.Fatalf("seed %d: hint %+v for member %d, but record %d starts at %d", seed, hint, m, hint.Index, starts[m][min(hint.Index, recs)])
				}
				idx, base = hint.Index, hint.Offset
			}
			claim := &readerClaim{position: position{Member: m}, seekable: true}
			for ; idx < recs; idx++ {
				if idx < first {
					continue
				}
				if idx > first {
					// raw: what a reader with some read-ahead has received since it began.
					raw := min(starts[m][idx+1]+rng.Int64N(100), members[m].Size) - base
					claim.Index, claim.end, claim.raw = idx, starts[m][idx+1], raw
					maybeSplit()
					if !tr.TryClaim(claim) {
						break members
					}
				}
				emitted[position{Member: m, Index: idx}]++
			}
		}
		if !tr.IsDone() || tr.GetError() != nil {
			t.Fatalf("seed %d: tracker over %+v: done %v err %v", seed, rest, tr.IsDone(), tr.GetError())
		}
	}
	for m := range n {
		for r := range int64(len(starts[m]) - 1) {
			if c := emitted[position{Member: m, Index: r}]; c != 1 {
				t.Fatalf("seed %d: (%d,%d) emitted %d times", seed, m, r, c)
			}
			delete(emitted, position{Member: m, Index: r})
		}
	}
	if len(emitted) != 0 {
		t.Fatalf("seed %d: emitted positions that do not exist: %v", seed, emitted)
	}
	return inMember, hinted
}
