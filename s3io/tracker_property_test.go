package s3io

import "testing"

// TestTrackerByteClaimsProperty drives the tracker the way readMember does, with claims
// that report bytes (so fractional splits land inside members and residuals carry resume
// hints), splitting at random fractions and recursively processing every residual (the
// harness is trackerSim, trackersim_test.go). Every position must be emitted exactly once,
// and every resume hint must point at the true start of the record it names.
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

// TestTrackerRunClaimsProperty is TestTrackerByteClaimsProperty with the reader claiming
// runs of records at once (claimRun), as ReadBatches does: splits between framing a run and
// claiming it must cut the run at the split, never lose or repeat a record, and leave the
// residual a resume hint at its first record.
func TestTrackerRunClaimsProperty(t *testing.T) {
	inMember, hinted := 0, 0
	for seed := uint64(0); seed < 3000; seed++ {
		s := newRunSim(t, seed)
		s.run()
		inMember += s.inMember
		hinted += s.hinted
	}
	if inMember < 100 || hinted < 100 {
		t.Fatalf("only %d in-member fractional splits and %d hinted resumes: the test lost its teeth", inMember, hinted)
	}
	t.Logf("%d in-member fractional splits, %d hinted resumes", inMember, hinted)
}

// FuzzTrackerSplits runs the same check, and TestTrackerProtocolProperty's, on
// fuzzer-chosen seeds: go test -fuzz=FuzzTrackerSplits ./s3io
func FuzzTrackerSplits(f *testing.F) {
	for _, s := range []uint64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkByteClaims(t, seed)
		newPositionSim(t, seed).run()
		newRunSim(t, seed).run()
	})
}

// checkByteClaims runs one random descriptor through the reader protocol with byte claims,
// returning how many in-member fractional splits and hinted resumes it exercised.
func checkByteClaims(t testing.TB, seed uint64) (inMember, hinted int) {
	t.Helper()
	s := newByteSim(t, seed)
	s.run()
	return s.inMember, s.hinted
}
