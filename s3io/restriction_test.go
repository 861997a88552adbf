package s3io

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func rtPos(m int, r int64) position { return position{Member: m, Index: r} }

func TestPositionLess(t *testing.T) {
	cases := []struct {
		p, q position
		want bool
	}{
		{rtPos(0, 0), rtPos(0, 0), false},
		{rtPos(0, 0), rtPos(0, 1), true},
		{rtPos(0, 1), rtPos(0, 0), false},
		{rtPos(0, 5), rtPos(1, 0), true},
		{rtPos(1, 0), rtPos(0, 5), false},
		{rtPos(1, 0), rtPos(0, math.MaxInt64), false},
		{rtPos(0, math.MaxInt64), rtPos(1, 0), true},
		{rtPos(2, 3), rtPos(2, 3), false},
		{rtPos(2, 3), rtPos(2, 4), true},
		{rtPos(3, 0), rtPos(2, 4), false},
	}
	for _, c := range cases {
		if got := c.p.Less(c.q); got != c.want {
			t.Errorf("%v.Less(%v) = %v, want %v", c.p, c.q, got, c.want)
		}
	}
}

// rest3 is a three-member restriction with sizes 100, 200, 300.
func rtRest3() restriction {
	return restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: []int64{100, 200, 300}}
}

func TestTrackerClaimsInOrder(t *testing.T) {
	tr := newTracker(rtRest3())
	if tr.IsDone() {
		t.Fatal("IsDone before any claim")
	}
	for _, p := range []position{rtPos(0, 0), rtPos(0, 1), rtPos(0, 7), rtPos(1, 0), rtPos(2, 0), rtPos(2, 1000)} {
		if !tr.TryClaim(p) {
			t.Fatalf("TryClaim(%v) = false; err %v", p, tr.GetError())
		}
		if tr.IsDone() {
			t.Fatalf("IsDone after claiming %v, mid-restriction", p)
		}
	}
	if tr.TryClaim(rtPos(3, 0)) {
		t.Fatal("TryClaim(End) = true")
	}
	if err := tr.GetError(); err != nil {
		t.Fatalf("GetError after claiming End = %v, want nil", err)
	}
	if !tr.IsDone() {
		t.Fatal("IsDone = false after the End claim failed")
	}
	// Any further claim is misuse.
	if tr.TryClaim(rtPos(3, 1)) {
		t.Fatal("TryClaim after stop = true")
	}
	if tr.GetError() == nil {
		t.Fatal("claim after stop set no error")
	}
}

func TestTrackerClaimBeyondEnd(t *testing.T) {
	for _, p := range []position{rtPos(3, 0), rtPos(3, 5), rtPos(4, 0), rtPos(100, 100)} {
		tr := newTracker(rtRest3())
		if !tr.TryClaim(rtPos(0, 0)) {
			t.Fatal("first claim failed")
		}
		if tr.TryClaim(p) {
			t.Errorf("TryClaim(%v) beyond End = true", p)
		}
		if err := tr.GetError(); err != nil {
			t.Errorf("TryClaim(%v): GetError = %v, want nil", p, err)
		}
		if !tr.IsDone() {
			t.Errorf("TryClaim(%v): IsDone = false", p)
		}
	}
	// Mid-member end.
	tr := newTracker(restriction{Start: rtPos(1, 2), End: rtPos(2, 3), Sizes: []int64{5, 6}})
	for _, p := range []position{rtPos(1, 2), rtPos(1, 9), rtPos(2, 0), rtPos(2, 2)} {
		if !tr.TryClaim(p) {
			t.Fatalf("TryClaim(%v) = false", p)
		}
	}
	if !tr.IsDone() {
		t.Error("IsDone = false after claiming the last owned record (2,2) of [(1,2),(2,3))")
	}
	if tr.TryClaim(rtPos(2, 3)) {
		t.Error("TryClaim((2,3)) = true, End is (2,3)")
	}
	if tr.GetError() != nil || !tr.IsDone() {
		t.Errorf("after End claim: err %v, done %v", tr.GetError(), tr.IsDone())
	}
}

func TestTrackerMisuse(t *testing.T) {
	cases := []struct {
		name   string
		rest   restriction
		claims []any // all but the last succeed
	}{
		{"before start", restriction{Start: rtPos(1, 3), End: rtPos(3, 0), Sizes: []int64{1, 1}}, []any{rtPos(1, 2)}},
		{"before start member", restriction{Start: rtPos(1, 0), End: rtPos(3, 0), Sizes: []int64{1, 1}}, []any{rtPos(0, 9)}},
		{"repeat", rtRest3(), []any{rtPos(0, 0), rtPos(0, 0)}},
		{"backwards", rtRest3(), []any{rtPos(0, 0), rtPos(1, 4), rtPos(1, 3)}},
		{"backwards member", rtRest3(), []any{rtPos(0, 0), rtPos(2, 0), rtPos(1, 9)}},
		{"wrong type", rtRest3(), []any{int64(0)}},
		{"pointer", rtRest3(), []any{rtPos(0, 0), &position{Member: 1}}},
		{"nil interface", rtRest3(), []any{nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(c.rest)
			last := len(c.claims) - 1
			for _, p := range c.claims[:last] {
				if !tr.TryClaim(p) {
					t.Fatalf("TryClaim(%v) = false: %v", p, tr.GetError())
				}
			}
			if tr.TryClaim(c.claims[last]) {
				t.Fatalf("TryClaim(%v) = true, want false", c.claims[last])
			}
			if tr.GetError() == nil {
				t.Fatalf("TryClaim(%v): GetError = nil, want an error", c.claims[last])
			}
			if tr.IsDone() {
				t.Error("IsDone = true on a tracker with an error")
			}
			// The tracker stays stopped.
			if tr.TryClaim(rtPos(2, 999)) {
				t.Error("TryClaim after misuse = true")
			}
			if _, res, err := tr.TrySplit(0); res != nil || err != nil {
				t.Errorf("TrySplit(0) after misuse = residual %v, err %v; want none", res, err)
			}
		})
	}
}

// TestTrackerClaimsPositionsOnly: TryClaim takes a position value; anything else, a
// pointer to one included, is a misuse that stops the reader and says what it got.
func TestTrackerClaimsPositionsOnly(t *testing.T) {
	tr := newTracker(rtRest3())
	if !tr.TryClaim(rtPos(0, 0)) {
		t.Fatalf("TryClaim((0,0)) = false: %v", tr.GetError())
	}
	if tr.TryClaim(&position{Member: 0, Index: 5}) {
		t.Fatal("TryClaim(*position) = true")
	}
	if err := tr.GetError(); err == nil || !strings.Contains(err.Error(), "*s3io.position") {
		t.Errorf("GetError = %v, want one naming *s3io.position", err)
	}
}

func TestTrackerEmptyRestriction(t *testing.T) {
	for _, r := range []restriction{
		{},
		{Start: rtPos(2, 0), End: rtPos(2, 0)},
		{Start: rtPos(2, 5), End: rtPos(2, 5), Sizes: []int64{10}},
		{Start: rtPos(2, 5), End: rtPos(2, 3), Sizes: []int64{10}},
	} {
		tr := newTracker(r)
		if !tr.IsDone() {
			t.Errorf("%+v: IsDone = false on an empty restriction", r)
		}
		if _, res, _ := tr.TrySplit(0); res != nil {
			t.Errorf("%+v: TrySplit(0) residual %v", r, res)
		}
		if _, res, _ := tr.TrySplit(0.5); res != nil {
			t.Errorf("%+v: TrySplit(0.5) residual %v", r, res)
		}
		if done, rem := tr.GetProgress(); done != 0 || rem != 0 {
			t.Errorf("%+v: GetProgress = %v, %v; want 0, 0", r, done, rem)
		}
	}
}

func TestTrackerCheckpointAfterClaim(t *testing.T) {
	tr := newTracker(rtRest3())
	for _, p := range []position{rtPos(0, 0), rtPos(1, 0), rtPos(1, 1), rtPos(1, 2)} {
		if !tr.TryClaim(p) {
			t.Fatalf("TryClaim(%v) failed", p)
		}
	}
	prim, res, err := tr.TrySplit(0)
	if err != nil {
		t.Fatal(err)
	}
	// Plain Position claims report no bytes read, so the primary keeps none of member 1's
	// weight and the residual all of it.
	wantP := restriction{Start: rtPos(0, 0), End: rtPos(1, 3), Sizes: []int64{100, 0}}
	wantR := restriction{Start: rtPos(1, 3), End: rtPos(3, 0), Sizes: []int64{200, 300}}
	if !reflect.DeepEqual(prim, wantP) {
		t.Errorf("primary = %+v, want %+v", prim, wantP)
	}
	if !reflect.DeepEqual(res, wantR) {
		t.Errorf("residual = %+v, want %+v", res, wantR)
	}
	if !reflect.DeepEqual(tr.GetRestriction(), wantP) {
		t.Errorf("GetRestriction = %+v, want the primary", tr.GetRestriction())
	}
	if !tr.IsDone() {
		t.Error("IsDone = false right after a checkpoint")
	}
	if tr.TryClaim(rtPos(1, 3)) {
		t.Error("claimed (1,3) after it went to the residual")
	}
	if tr.GetError() != nil {
		t.Errorf("GetError = %v", tr.GetError())
	}
	if _, res, _ := tr.TrySplit(0); res != nil {
		t.Errorf("second TrySplit(0) gave residual %+v", res)
	}
	for _, r := range []restriction{wantP, wantR} {
		if err := r.valid(3); err != nil {
			t.Errorf("valid: %v", err)
		}
	}
}

func TestTrackerCheckpointAfterMemberClaimMidStart(t *testing.T) {
	// A residual starting mid-member, checkpointed right after its first claim.
	tr := newTracker(restriction{Start: rtPos(1, 4), End: rtPos(3, 0), Sizes: []int64{200, 300}})
	if !tr.TryClaim(rtPos(1, 4)) {
		t.Fatal("claim failed")
	}
	prim, res, _ := tr.TrySplit(0)
	if want := (restriction{Start: rtPos(1, 4), End: rtPos(1, 5), Sizes: []int64{0}}); !reflect.DeepEqual(prim, want) {
		t.Errorf("primary = %+v, want %+v", prim, want)
	}
	if want := (restriction{Start: rtPos(1, 5), End: rtPos(3, 0), Sizes: []int64{200, 300}}); !reflect.DeepEqual(res, want) {
		t.Errorf("residual = %+v, want %+v", res, want)
	}
	if !tr.IsDone() {
		t.Error("IsDone = false")
	}
}

// A checkpoint before the first claim is refused (apache/beam#32044): it would hand the
// whole restriction back, and a runner that checkpoints each bundle after a few seconds
// could do that forever. The tracker is left as it was, the reader claims as if nothing had
// happened, and the next checkpoint lands after its claim.
func TestTrackerCheckpointBeforeClaim(t *testing.T) {
	for _, r := range []restriction{
		rtRest3(),
		{Start: rtPos(1, 4), End: rtPos(2, 2), Sizes: []int64{7, 8}},
		{Start: rtPos(1, 4), End: rtPos(1, 9), Sizes: []int64{7}, Resume: resumeHint{Index: 2, Offset: 30}},
	} {
		tr := newTracker(r)
		for range 3 { // refused as often as it is asked
			prim, res, err := tr.TrySplit(0)
			if err != nil || res != nil {
				t.Fatalf("%+v: TrySplit(0) before any claim = residual %+v, err %v; want it refused", r, res, err)
			}
			if !reflect.DeepEqual(prim, r) || !reflect.DeepEqual(tr.GetRestriction(), r) {
				t.Fatalf("%+v: refused TrySplit(0) left primary %+v, restriction %+v", r, prim, tr.GetRestriction())
			}
		}
		if tr.IsDone() {
			t.Errorf("%+v: IsDone after a refused checkpoint", r)
		}
		if done, rem := tr.GetProgress(); done != 0 || rem != r.size() {
			t.Errorf("%+v: GetProgress = %v, %v after a refused checkpoint; want 0, %v", r, done, rem, r.size())
		}
		if !tr.TryClaim(r.Start) {
			t.Fatalf("%+v: TryClaim(Start) after a refused checkpoint failed: %v", r, tr.GetError())
		}
		prim, res, err := tr.TrySplit(0)
		if err != nil || res == nil {
			t.Fatalf("%+v: TrySplit(0) after the first claim = residual %v, err %v; want a checkpoint", r, res, err)
		}
		next := rtPos(r.Start.Member, r.Start.Index+1)
		if p, q := prim.(restriction), res.(restriction); p.Start != r.Start || p.End != next || q.Start != next || q.End != r.End {
			t.Errorf("%+v: checkpoint after the first claim = %+v / %+v; want it after %v", r, p, q, r.Start)
		}
		if !tr.IsDone() {
			t.Errorf("%+v: IsDone = false after the checkpoint", r)
		}
		if err := prim.(restriction).valid(3); err != nil {
			t.Errorf("primary invalid: %v", err)
		}
	}
}

// A fractional split before the first claim is taken, as prism asks for one (0.5) when a
// bundle looks stalled: it hands back only what lies past a member boundary after the
// first member, never the whole restriction, so the reader still has work when it claims.
func TestTrackerFractionalSplitBeforeClaim(t *testing.T) {
	r := rtRest3() // 100, 200, 300
	tr := newTracker(r)
	if _, res, _ := tr.TrySplit(0); res != nil {
		t.Fatalf("TrySplit(0) before any claim gave residual %+v", res)
	}
	prim, res, err := tr.TrySplit(0.5)
	if err != nil || res == nil {
		t.Fatalf("TrySplit(0.5) before any claim = residual %v, err %v; want a split", res, err)
	}
	wantP := restriction{Start: rtPos(0, 0), End: rtPos(2, 0), Sizes: []int64{100, 200}}
	wantR := restriction{Start: rtPos(2, 0), End: rtPos(3, 0), Sizes: []int64{300}}
	if !reflect.DeepEqual(prim, wantP) || !reflect.DeepEqual(res, wantR) {
		t.Fatalf("TrySplit(0.5) = %+v / %+v, want %+v / %+v", prim, res, wantP, wantR)
	}
	// Any fraction above 0, however small, keeps the first member in the primary.
	for _, f := range []float64{1e-300, 1e-9, 0.01} {
		prim, res, _ := newTracker(r).TrySplit(f)
		if res == nil || prim.(restriction).End != rtPos(1, 0) {
			t.Errorf("TrySplit(%v) before any claim = %+v / %+v; want the first member kept", f, prim, res)
		}
	}
	// One member, nothing claimed: no boundary to split at, and no estimate of a record's
	// bytes to split inside it.
	one := restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{100}}
	if _, res, _ := newTracker(one).TrySplit(0.5); res != nil {
		t.Errorf("TrySplit(0.5) of one unread member gave residual %+v", res)
	}
	if !tr.TryClaim(rtPos(0, 0)) || !tr.TryClaim(rtPos(1, 0)) {
		t.Fatalf("claims in the primary failed: %v", tr.GetError())
	}
	if tr.TryClaim(rtPos(2, 0)) || !tr.IsDone() || tr.GetError() != nil {
		t.Errorf("claimed into the residual, or did not stop cleanly: %v", tr.GetError())
	}
}

func TestTrackerSplitDoneOrStopped(t *testing.T) {
	// Stopped by hitting End.
	tr := newTracker(rtRest3())
	tr.TryClaim(rtPos(0, 0))
	tr.TryClaim(rtPos(3, 0))
	for _, f := range []float64{0, 0.3, 1} {
		if prim, res, err := tr.TrySplit(f); res != nil || err != nil || !reflect.DeepEqual(prim, rtRest3()) {
			t.Errorf("stopped TrySplit(%v) = %+v, %+v, %v", f, prim, res, err)
		}
	}
	// Done by claiming the last record of a checkpointed primary.
	tr = newTracker(restriction{Start: rtPos(0, 0), End: rtPos(0, 2), Sizes: []int64{5}})
	tr.TryClaim(rtPos(0, 0))
	tr.TryClaim(rtPos(0, 1))
	if !tr.IsDone() {
		t.Fatal("not done after claiming the last owned record")
	}
	for _, f := range []float64{0, 0.5, 1} {
		if _, res, err := tr.TrySplit(f); res != nil || err != nil {
			t.Errorf("done TrySplit(%v) residual %+v, err %v", f, res, err)
		}
	}
}

func TestTrackerFractionalSplits(t *testing.T) {
	sizes := []int64{100, 200, 300, 400} // total 1000
	full := restriction{Start: rtPos(0, 0), End: rtPos(4, 0), Sizes: sizes}
	cases := []struct {
		name     string
		rest     restriction
		claims   []position
		fraction float64
		wantP    restriction
		wantR    *restriction // nil: no split
	}{
		{"tiny before claims", full, nil, 1e-9,
			restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: sizes[:1]},
			&restriction{Start: rtPos(1, 0), End: rtPos(4, 0), Sizes: sizes[1:]}},
		{"exactly first member", full, nil, 0.1,
			restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: sizes[:1]},
			&restriction{Start: rtPos(1, 0), End: rtPos(4, 0), Sizes: sizes[1:]}},
		{"just past first member", full, nil, 0.1001,
			restriction{Start: rtPos(0, 0), End: rtPos(2, 0), Sizes: sizes[:2]},
			&restriction{Start: rtPos(2, 0), End: rtPos(4, 0), Sizes: sizes[2:]}},
		{"half", full, nil, 0.5,
			restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: sizes[:3]},
			&restriction{Start: rtPos(3, 0), End: rtPos(4, 0), Sizes: sizes[3:]}},
		{"0.6 lands on boundary 3", full, nil, 0.6,
			restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: sizes[:3]},
			&restriction{Start: rtPos(3, 0), End: rtPos(4, 0), Sizes: sizes[3:]}},
		{"past last boundary", full, nil, 0.61, full, nil},
		{"one", full, nil, 1, full, nil},
		{"above one clamps", full, nil, 7, full, nil},
		// Remaining work after claiming in member 1 is members 1..3 (900 bytes): 0.5 of it is
		// 450, reached after member 2 (200+300 = 500).
		{"after claims", full, []position{rtPos(0, 0), rtPos(1, 0), rtPos(1, 5)}, 0.5,
			restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: sizes[:3]},
			&restriction{Start: rtPos(3, 0), End: rtPos(4, 0), Sizes: sizes[3:]}},
		{"after claims small", full, []position{rtPos(0, 0), rtPos(1, 0), rtPos(1, 5)}, 0.2,
			restriction{Start: rtPos(0, 0), End: rtPos(2, 0), Sizes: sizes[:2]},
			&restriction{Start: rtPos(2, 0), End: rtPos(4, 0), Sizes: sizes[2:]}},
		{"in last member", full, []position{rtPos(0, 0), rtPos(3, 0)}, 0.01, full, nil},
		{"negative clamps to checkpoint", full, []position{rtPos(0, 0), rtPos(0, 1)}, -3,
			restriction{Start: rtPos(0, 0), End: rtPos(0, 2), Sizes: []int64{0}},
			&restriction{Start: rtPos(0, 2), End: rtPos(4, 0), Sizes: sizes}},
		// End mid-member: the boundary before the partially owned member is a split point.
		{"partial last member", restriction{Start: rtPos(1, 2), End: rtPos(3, 4), Sizes: []int64{10, 10, 80}}, nil, 0.05,
			restriction{Start: rtPos(1, 2), End: rtPos(2, 0), Sizes: []int64{10}},
			&restriction{Start: rtPos(2, 0), End: rtPos(3, 4), Sizes: []int64{10, 80}}},
		{"partial last member boundary", restriction{Start: rtPos(1, 2), End: rtPos(3, 4), Sizes: []int64{10, 10, 80}}, nil, 0.15,
			restriction{Start: rtPos(1, 2), End: rtPos(3, 0), Sizes: []int64{10, 10}},
			&restriction{Start: rtPos(3, 0), End: rtPos(3, 4), Sizes: []int64{80}}},
		{"partial last member late", restriction{Start: rtPos(1, 2), End: rtPos(3, 4), Sizes: []int64{10, 10, 80}}, nil, 0.9,
			restriction{Start: rtPos(1, 2), End: rtPos(3, 4), Sizes: []int64{10, 10, 80}}, nil},
		{"zero sizes", restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: []int64{0, 0, 0}}, nil, 0.5,
			restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{0}},
			&restriction{Start: rtPos(1, 0), End: rtPos(3, 0), Sizes: []int64{0, 0}}},
		{"single member", restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{50}}, nil, 0.5,
			restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{50}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(c.rest)
			for _, p := range c.claims {
				if !tr.TryClaim(p) {
					t.Fatalf("TryClaim(%v) failed: %v", p, tr.GetError())
				}
			}
			prim, res, err := tr.TrySplit(c.fraction)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(prim, c.wantP) {
				t.Errorf("primary = %+v, want %+v", prim, c.wantP)
			}
			if !reflect.DeepEqual(tr.GetRestriction(), c.wantP) {
				t.Errorf("GetRestriction = %+v, want %+v", tr.GetRestriction(), c.wantP)
			}
			if c.wantR == nil {
				if res != nil {
					t.Errorf("residual = %+v, want none", res)
				}
				return
			}
			r, ok := res.(restriction)
			if !ok {
				t.Fatalf("residual = %#v, want %+v", res, *c.wantR)
			}
			if !reflect.DeepEqual(r, *c.wantR) {
				t.Errorf("residual = %+v, want %+v", r, *c.wantR)
			}
			if c.fraction > 0 {
				if r.Start.Index != 0 {
					t.Errorf("fractional split residual starts mid-member at %v", r.Start)
				}
				if tr.IsDone() {
					t.Error("IsDone after a fractional split that left work in the primary")
				}
			}
		})
	}
}

func TestTrackerProgress(t *testing.T) {
	tr := newTracker(rtRest3())
	type pr struct{ done, rem float64 }
	check := func(want pr) {
		t.Helper()
		d, r := tr.GetProgress()
		if d != want.done || r != want.rem {
			t.Errorf("GetProgress = %v, %v; want %v, %v", d, r, want.done, want.rem)
		}
	}
	check(pr{0, 600})
	tr.TryClaim(rtPos(0, 0))
	check(pr{0, 600})
	tr.TryClaim(rtPos(0, 9))
	check(pr{0, 600})
	tr.TryClaim(rtPos(1, 0))
	check(pr{100, 500})
	tr.TryClaim(rtPos(2, 3))
	check(pr{300, 300})
	// After a checkpoint the primary owns members 0..2 only up to (2,4), and nothing of
	// member 2 remains for it.
	tr.TrySplit(0)
	check(pr{300, 0})

	tr = newTracker(restriction{Start: rtPos(2, 5), End: rtPos(4, 1), Sizes: []int64{10, 20, 30}})
	check(pr{0, 60})
	tr.TryClaim(rtPos(3, 0))
	check(pr{10, 50})
	tr.TryClaim(rtPos(4, 0))
	check(pr{30, 30})
}

func TestRestrictionValid(t *testing.T) {
	cases := []struct {
		r  restriction
		n  int
		ok bool
	}{
		{rtRest3(), 3, true},
		{rtRest3(), 2, false},
		{restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: []int64{1, 2}}, 3, false},
		{restriction{Start: rtPos(1, 2), End: rtPos(2, 1), Sizes: []int64{1, 2}}, 3, true},
		{restriction{Start: rtPos(1, 2), End: rtPos(2, 1), Sizes: []int64{1, 2}}, 2, false},
		{restriction{Start: rtPos(1, 2), End: rtPos(1, 1), Sizes: []int64{1}}, 3, false},
		{restriction{Start: rtPos(-1, 0), End: rtPos(1, 0), Sizes: []int64{1, 2}}, 3, false},
		{restriction{Start: rtPos(0, -1), End: rtPos(1, 0), Sizes: []int64{1}}, 3, false},
		{restriction{Start: rtPos(0, 0), End: rtPos(1, -1), Sizes: []int64{1}}, 3, false},
		{restriction{Start: rtPos(2, 0), End: rtPos(2, 0)}, 3, true},
		{restriction{Start: rtPos(0, 0), End: rtPos(0, 0)}, 0, true},
		{fullRestriction(SplitDescriptor{Members: []Member{{Size: 4}, {Size: 5}}}), 2, true},
	}
	for _, c := range cases {
		if err := c.r.valid(c.n); (err == nil) != c.ok {
			t.Errorf("%+v.valid(%d) = %v, want ok=%v", c.r, c.n, err, c.ok)
		}
	}
	fr := fullRestriction(SplitDescriptor{Members: []Member{{Size: 4}, {Size: 5}}})
	if want := (restriction{Start: rtPos(0, 0), End: rtPos(2, 0), Sizes: []int64{4, 5}}); !reflect.DeepEqual(fr, want) {
		t.Errorf("fullRestriction = %+v, want %+v", fr, want)
	}
	if fr.size() != 9 {
		t.Errorf("size = %v, want 9", fr.size())
	}
}

// TestTrackerProtocolProperty runs the reader protocol of sdf.go, claiming bare positions,
// under random splits and checkpoints (the harness is trackerSim, trackersim_test.go).
func TestTrackerProtocolProperty(t *testing.T) {
	const seeds = 2000
	totalTrackers, checkpoints, fractional, refused := 0, 0, 0, 0
	for seed := uint64(0); seed < seeds; seed++ {
		s := newPositionSim(t, seed)
		s.run()
		totalTrackers += s.trackers
		checkpoints += s.checkpoints
		fractional += s.fractional
		refused += s.refusedEarly
	}
	// The test must exercise both kinds of split, and checkpoints before a first claim.
	if checkpoints < 500 || fractional < 500 || refused < 100 || totalTrackers != seeds+checkpoints+fractional {
		t.Fatalf("%d trackers, %d checkpoint and %d fractional residuals, %d checkpoints refused before a first claim, over %d seeds", totalTrackers, checkpoints, fractional, refused, seeds)
	}
	t.Logf("%d trackers, %d checkpoint and %d fractional residuals, %d checkpoints refused before a first claim, over %d seeds", totalTrackers, checkpoints, fractional, refused, seeds)
}

// memberBoundaries cuts a restriction into pieces of about equal weight, as many as the
// target fits (rounded), each member where its middle falls: never a target-sized run of
// pieces and a small remainder.
func TestMemberBoundariesEven(t *testing.T) {
	sizes := func(ws ...int64) restriction {
		return restriction{Start: position{}, End: position{Member: len(ws)}, Sizes: ws}
	}
	counts := func(rs []restriction) []int {
		var out []int
		for _, r := range rs {
			out = append(out, r.lastMember()-r.Start.Member+1)
		}
		return out
	}
	repeat := func(w int64, n int) restriction {
		ws := make([]int64, n)
		for i := range ws {
			ws[i] = w
		}
		return sizes(ws...)
	}
	for _, tc := range []struct {
		name   string
		r      restriction
		target int64
		want   []int
	}{
		// 16 members just under 16 MiB: greedy cuts at 64 MiB made 5, 5, 5, 1.
		{"sixteen objects just under a quarter of the target", repeat(63, 16), 256, []int{4, 4, 4, 4}},
		{"twenty small objects, 1.1 targets: whole", repeat(36, 20), 640, []int{20}},
		{"twenty small objects, 2.2 targets", repeat(36, 20), 320, []int{10, 10}},
		{"a large member in the middle", sizes(10, 10, 100, 10, 10, 10, 10, 10, 10, 10), 60, []int{2, 2, 6}},
		{"a member larger than two pieces", sizes(10, 300, 10, 10), 100, []int{1, 1, 2}},
	} {
		got := tc.r.memberBoundaries(tc.target)
		if c := counts(got); !slices.Equal(c, tc.want) {
			t.Errorf("%s: pieces of %v members, want %v", tc.name, c, tc.want)
		}
		// The pieces tile the restriction.
		at := tc.r.Start
		for _, p := range got {
			if p.Start != at {
				t.Errorf("%s: a piece starts at %v, want %v", tc.name, p.Start, at)
			}
			at = p.End
		}
		if at != tc.r.End {
			t.Errorf("%s: the pieces end at %v, want %v", tc.name, at, tc.r.End)
		}
	}
}

// TestTrackerSplitsAtObjectBoundaries: a tracker that reads objects whole
// (Config.VerifyChecksums) checkpoints at the end of the member being read and never splits
// inside one, fraction or not.
func TestTrackerSplitsAtObjectBoundaries(t *testing.T) {
	tr := newTracker(rtRest3())
	tr.splits = objectBoundaries
	for _, p := range []position{rtPos(0, 0), rtPos(1, 0), rtPos(1, 1), rtPos(1, 2)} {
		if !tr.TryClaim(p) {
			t.Fatalf("TryClaim(%v) failed", p)
		}
	}
	prim, res, err := tr.TrySplit(0)
	if err != nil {
		t.Fatal(err)
	}
	wantP := restriction{Start: rtPos(0, 0), End: rtPos(2, 0), Sizes: []int64{100, 200}}
	wantR := restriction{Start: rtPos(2, 0), End: rtPos(3, 0), Sizes: []int64{300}}
	if !reflect.DeepEqual(prim, wantP) || !reflect.DeepEqual(res, wantR) {
		t.Fatalf("checkpoint: primary %+v, residual %+v; want %+v, %+v", prim, res, wantP, wantR)
	}
	// The primary's last member is the one being read: no split inside it, at any fraction.
	for _, f := range []float64{0, 0.1, 0.5, 0.9} {
		if _, res, err := tr.TrySplit(f); err != nil || res != nil {
			t.Fatalf("TrySplit(%v) inside the member read whole: residual %+v, err %v", f, res, err)
		}
	}
	if !tr.TryClaim(rtPos(1, 50)) {
		t.Fatal("the member being read was cut short")
	}
}
