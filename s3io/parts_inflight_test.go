package s3io

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
)

// settleGoroutines fails the test if goroutines of the library's listing, fetching or
// framing outlive their read.
func settleGoroutines(t *testing.T) {
	t.Helper()
	s3test.SettleGoroutines(t, "s3io/internal/fetch.(*Fetcher)", "s3io/internal/decode.(*Framing)",
		"s3io/internal/fetch.(*PinnedReader)", "s3io/internal/listing.")
}

// A checkpoint taken while later parts of the object are in flight hands the residual an
// exact resume point: its first GET starts on the byte after the last emitted record, and
// primary and residual together emit every record once.
func TestCheckpointWhilePartsInFlight(t *testing.T) {
	f := newResumeFixture(t, "parts.txt", 3000, identity, Config{PartBytes: 16 << 10, MaxRequestsInFlight: 8})
	var residual restriction
	primary := f.run(t, fullRestriction(f.desc), checkpointAfter(t, 1000, &residual))
	k := len(primary) // the end of the run of claims holding record 1000
	if k < 1000 || k >= 3000 {
		t.Fatalf("primary emitted %d records after a checkpoint at 1000", k)
	}
	primaryGets := len(f.srv.Requests("parts.txt"))
	rest := f.run(t, residual, nil)
	if got := append(primary, rest...); !slices.Equal(got, f.recs) {
		t.Fatalf("primary+residual gave %d records, want the object's %d in order", len(got), len(f.recs))
	}
	// The residual's parts are aligned on its resume point, the primary's on byte 0: the
	// residual's first part starts exactly after the last record the primary emitted.
	reqs := f.srv.Requests("parts.txt")
	want := fmt.Sprintf("bytes=%d-%d", f.ends[k-1], f.ends[k-1]+16<<10-1)
	if !slices.ContainsFunc(reqs, func(r s3test.Request) bool { return r.Range == want }) {
		t.Errorf("no GET with Range %q among %+v", want, reqs)
	}
	// The primary fetched ahead of its checkpoint, but not the whole object.
	if primaryGets < 2 || primaryGets >= len(reqs) {
		t.Errorf("primary made %d of %d GETs", primaryGets, len(reqs))
	}
	settleGoroutines(t)
}

// An object overwritten between two of its parts fails on the part after the overwrite with
// 412: it is quarantined as overwritten, after exactly the records of the parts before, and
// nothing of the new version is emitted.
func TestPartAfterOverwriteIsQuarantined(t *testing.T) {
	const part = 16 << 10
	f := newResumeFixture(t, "over.txt", 2000, identity, Config{PartBytes: part, MaxRequestsInFlight: 1})
	f.srv.SetFault("over.txt", "bytes=0-", 1, faultproxy.Fault{StallAfter: 1, Stall: 2 * time.Second})
	go func() {
		for len(f.srv.Requests("over.txt")) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		f.srv.Put(t, "resume", "over.txt", []byte("new version\n"))
	}()
	rt := f.fn.CreateTracker(fullRestriction(f.desc))
	var got []string
	var failures []Failure
	err := f.fn.process(context.Background(), rt, f.desc, func(_ int, _ int64, _ string, rec []byte) { got = append(got, string(rec)) },
		func(fl Failure) { failures = append(failures, fl) })
	if err != nil {
		t.Fatal(err)
	}
	inFirst := 0
	for inFirst < len(f.ends) && f.ends[inFirst] <= part {
		inFirst++
	}
	if !slices.Equal(got, f.recs[:inFirst]) {
		t.Errorf("emitted %d records, want the %d that end in the first part", len(got), inFirst)
	}
	if len(failures) != 1 || failures[0].Reason != ReasonOverwritten || failures[0].Index != int64(inFirst) || failures[0].ETag != f.desc.Members[0].ETag {
		t.Fatalf("failures = %+v, want one %q at record %d pinned to %s", failures, ReasonOverwritten, inFirst, f.desc.Members[0].ETag)
	}
	settleGoroutines(t)
}
