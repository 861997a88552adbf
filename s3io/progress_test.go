package s3io

import (
	"slices"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
)

// fakeClock is a clock and timers that move only when the test says so.
type fakeClock struct {
	t      time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *fakeClock) now() time.Time { return c.t }

func (c *fakeClock) after(d time.Duration, f func()) func() bool {
	tm := &fakeTimer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

// advance moves the clock by d, firing the timers due on the way, in order.
func (c *fakeClock) advance(d time.Duration) {
	end := c.t.Add(d)
	for {
		var next *fakeTimer
		for _, tm := range c.timers {
			if !tm.stopped && !tm.at.After(end) && (next == nil || tm.at.Before(next.at)) {
				next = tm
			}
		}
		if next == nil {
			break
		}
		next.stopped = true
		c.t = next.at
		next.f()
	}
	c.t = end
}

// progressFixture is a reporter on a fake clock, whose lines and fetched bytes the test
// holds.
type progressFixture struct {
	clock   *fakeClock
	r       *progressReporter
	lines   []string
	fetched int64
}

func newProgressFixture() *progressFixture {
	f := &progressFixture{clock: &fakeClock{t: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)}}
	f.r = newProgressReporter(f.clock.now, f.clock.after, func(l string) { f.lines = append(f.lines, l) }, func() int64 { return f.fetched })
	return f
}

// takeLines returns the lines logged since the last call.
func (f *progressFixture) takeLines() []string {
	l := f.lines
	f.lines = nil
	return l
}

func (f *progressFixture) expect(t *testing.T, want ...string) {
	t.Helper()
	if got := f.takeLines(); !slices.Equal(got, want) {
		t.Fatalf("lines:\n%q\nwant:\n%q", got, want)
	}
}

// The reporter logs a line every interval while the worker reads and one once it has read
// nothing for the quiet period, each counting from the session's start, with the plan's
// totals and the ETA of what it is reading.
func TestProgressLines(t *testing.T) {
	f := newProgressFixture()
	r := f.r
	const mb = 1_000_000
	d := SplitDescriptor{ID: "a", Bucket: "logs", PlanObjects: 4, PlanBytes: 1000 * mb}
	rt := sdf.NewLockRTracker(newTracker(restriction{Start: rtPos(0, 0), End: rtPos(3, 0), Sizes: []int64{100 * mb, 200 * mb, 300 * mb}}))
	a := r.begin(30*time.Second, d, rt)

	// Member 0 read, member 1 begun.
	rt.TryClaim(rtPos(0, 0))
	rt.TryClaim(rtPos(1, 0))
	a.objectDone()
	r.records.Add(5000)
	r.decompressed.Add(400 * mb)
	f.fetched = 150 * mb
	f.clock.advance(29 * time.Second)
	f.expect(t)
	f.clock.advance(time.Second)
	f.expect(t, "s3io: worker progress: 1 objects done, 150000000 stored bytes fetched, 400000000 bytes decompressed, 5000 records, 0 failures; "+
		"5.0 MB/s over the last 30s, 5.0 MB/s over 30s; "+
		"plan: 1 of 4 objects and 100000000 of 1000000000 stored bytes read here (10.0 %); "+
		"eta 1m40s for the restriction it is reading (500000000 stored bytes left at 5.0 MB/s)")

	// A second read, of a descriptor without plan totals (ReadContinuously's), with a
	// shorter interval: the next line comes at that interval, and counts both.
	rt2 := sdf.NewLockRTracker(newTracker(restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{50 * mb}}))
	b := r.begin(10*time.Second, SplitDescriptor{ID: "w", Bucket: "logs"}, rt2)
	rt.TryClaim(rtPos(2, 0))
	a.objectDone()
	r.failures.Add(1)
	f.fetched += 210 * mb
	f.clock.advance(30 * time.Second)
	f.expect(t, "s3io: worker progress: 2 objects done, 360000000 stored bytes fetched, 400000000 bytes decompressed, 5000 records, 1 failures; "+
		"7.0 MB/s over the last 30s, 6.0 MB/s over 1m0s; "+
		"plan: 2 of 4 objects and 300000000 of 1000000000 stored bytes read here (30.0 %); "+
		"eta 50s for the 2 restrictions it is reading (350000000 stored bytes left at 7.0 MB/s)")

	// Both end, the first read to its end: what it held is read. A read that begins
	// within the quiet period continues the session.
	rt.TryClaim(rtPos(3, 0))
	a.end(true)
	b.end(true)
	f.clock.advance(time.Second)
	c := r.begin(30*time.Second, d, rt2)
	f.fetched += 50 * mb
	r.records.Add(7)
	c.objectDone()
	c.end(true)
	f.clock.advance(time.Second)
	f.expect(t)
	// Nothing for the quiet period: the last line, and the session ends.
	f.clock.advance(time.Second)
	f.expect(t, "s3io: worker progress, reads ended: 3 objects done, 410000000 stored bytes fetched, 400000000 bytes decompressed, 5007 records, 1 failures; "+
		"16.7 MB/s over the last 3s, 6.5 MB/s over 1m3s; "+
		"plan: 3 of 4 objects and 650000000 of 1000000000 stored bytes read here (65.0 %)")
	f.clock.advance(time.Hour)
	f.expect(t)

	// The next read begins a new session, whose figures count from its start.
	rt3 := sdf.NewLockRTracker(newTracker(restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{10 * mb}}))
	e := r.begin(20*time.Second, SplitDescriptor{ID: "b", Bucket: "logs", PlanObjects: 1, PlanBytes: 10 * mb}, rt3)
	rt3.TryClaim(rtPos(0, 0))
	f.clock.advance(20 * time.Second)
	f.expect(t, "s3io: worker progress: 0 objects done, 0 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
		"0.0 MB/s over the last 20s, 0.0 MB/s over 20s; "+
		"plan: 0 of 1 objects and 0 of 10000000 stored bytes read here (0.0 %); "+
		"no eta for the restriction it is reading (10000000 stored bytes left): nothing fetched over the last 20s")
	f.fetched += 10 * mb
	e.objectDone()
	e.end(true)
	f.clock.advance(progressQuiet)
	f.expect(t, "s3io: worker progress, reads ended: 1 objects done, 10000000 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
		"5.0 MB/s over the last 2s, 0.5 MB/s over 22s; "+
		"plan: 1 of 1 objects and 10000000 of 10000000 stored bytes read here (100.0 %)")
}

// A read that fails (the bundle will be retried) leaves its restriction's bytes unread; a
// session whose reads ask for no lines logs none, and the stretch that ends with nothing
// new since its last line logs no last line.
func TestProgressLinesOff(t *testing.T) {
	f := newProgressFixture()
	r := f.r
	rt := sdf.NewLockRTracker(newTracker(restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{100}}))
	d := SplitDescriptor{ID: "a", Bucket: "logs", PlanObjects: 1, PlanBytes: 100}
	a := r.begin(-1, d, rt)
	r.records.Add(3)
	f.fetched = 100
	f.clock.advance(time.Hour)
	a.end(false)
	f.clock.advance(time.Hour)
	f.expect(t)

	a = r.begin(time.Minute, d, rt)
	f.clock.advance(time.Minute)
	if got := f.takeLines(); len(got) != 1 {
		t.Fatalf("lines %q, want one", got)
	}
	a.end(false)
	f.clock.advance(time.Hour)
	f.expect(t)

	a = r.begin(time.Minute, d, rt)
	f.fetched += 100
	a.end(false)
	f.clock.advance(time.Hour)
	f.expect(t, "s3io: worker progress, reads ended: 0 objects done, 100 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
		"0.0 MB/s over the last 2s, 0.0 MB/s over 2s; "+
		"plan: 0 of 1 objects and 0 of 100 stored bytes read here (0.0 %)")
}

// ReadContinuously's descriptors carry no plan totals: its lines say nothing of a plan.
func TestProgressLinesWithoutAPlan(t *testing.T) {
	f := newProgressFixture()
	rt := sdf.NewLockRTracker(newTracker(restriction{Start: rtPos(0, 0), End: rtPos(1, 0), Sizes: []int64{4_000_000}}))
	a := f.r.begin(time.Second, SplitDescriptor{ID: "w", Bucket: "logs", Members: []Member{{Key: "k", Size: 4_000_000}}}, rt)
	rt.TryClaim(rtPos(0, 0))
	f.fetched = 2_000_000
	f.clock.advance(time.Second)
	f.expect(t, "s3io: worker progress: 0 objects done, 2000000 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
		"2.0 MB/s over the last 1s, 2.0 MB/s over 1s; "+
		"eta 2s for the restriction it is reading (4000000 stored bytes left at 2.0 MB/s)")
	a.objectDone()
	a.end(true)
	// The tick that falls between reads logs what changed since the last line (an object
	// done); the session's end still logs its own line.
	f.clock.advance(progressQuiet)
	f.expect(t, "s3io: worker progress: 1 objects done, 2000000 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
		"0.0 MB/s over the last 1s, 1.0 MB/s over 2s",
		"s3io: worker progress, reads ended: 1 objects done, 2000000 stored bytes fetched, 0 bytes decompressed, 0 records, 0 failures; "+
			"0.0 MB/s over the last 1s, 0.7 MB/s over 3s")
}
