package s3io

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// aheadFixture is a reader over descriptors of a few line objects each, and the records each
// object holds.
type aheadFixture struct {
	srv  *s3test.Server
	fn   *reader
	recs map[string][]string // by key
}

func newAheadFixture(t *testing.T) *aheadFixture {
	t.Helper()
	f := &aheadFixture{srv: s3test.New(t), recs: map[string][]string{}}
	f.srv.CreateBucket(t, "ahead")
	cfg := Config{Bucket: "ahead", Endpoint: f.srv.URL, UsePathStyle: true, PartBytes: 64 << 10}
	f.fn = &reader{Cfg: cfg.WithDefaults()}
	if err := f.fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.fn.Teardown)
	return f
}

// descriptor stores members objects of ~200 KiB under name/ and returns their descriptor.
func (f *aheadFixture) descriptor(t *testing.T, name string, members int) SplitDescriptor {
	t.Helper()
	var ms []Member
	for i := 0; i < members; i++ {
		key := fmt.Sprintf("%s/obj-%d.txt", name, i)
		var b strings.Builder
		for j := 0; j < 4000; j++ {
			r := fmt.Sprintf("%s line %05d %s", key, j, strings.Repeat("y", j%80))
			b.WriteString(r + "\n")
			f.recs[key] = append(f.recs[key], r)
		}
		etag := f.srv.Put(t, "ahead", key, []byte(b.String()))
		ms = append(ms, Member{Key: key, Size: int64(b.Len()), ETag: etag})
	}
	return SplitDescriptor{ID: splitID("ahead", ms), Bucket: "ahead", Members: ms}
}

// announceAll passes ds through a lookaheadFn, as the step before the reader does, and
// checks that it passes each on once, in order.
func (f *aheadFixture) announceAll(t *testing.T, ds ...SplitDescriptor) {
	t.Helper()
	la := &lookaheadFn{Cfg: f.fn.Cfg}
	la.Setup()
	var out []string
	emit := func(_ beam.EventTime, d SplitDescriptor) { out = append(out, d.ID) }
	for _, d := range ds {
		la.ProcessElement(window.GlobalWindow{}, 0, d, emit)
	}
	if len(out) != len(ds)-lookaheadDepth {
		t.Errorf("lookaheadFn passed on %d of %d descriptors before its bundle ended, want all but %d", len(out), len(ds), lookaheadDepth)
	}
	la.FinishBundle(emit)
	var want []string
	for _, d := range ds {
		want = append(want, d.ID)
	}
	if !slices.Equal(out, want) {
		t.Errorf("lookaheadFn passed on %v, want %v", out, want)
	}
}

// otherInstance returns the fixture with a second reader instance of the same Config, as
// a runner that splits a bundle runs the new bundle on: same worker, same announcements.
func (f *aheadFixture) otherInstance(t *testing.T) *aheadFixture {
	t.Helper()
	g := *f
	g.fn = &reader{Cfg: f.fn.Cfg}
	if err := g.fn.Setup(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.fn.Teardown)
	return &g
}

// read processes rest of d, splitting after the k-th record when residual is set, and
// returns the records and failures.
func (f *aheadFixture) read(t *testing.T, d SplitDescriptor, rest restriction, k int, residual *restriction) ([]string, []Failure) {
	t.Helper()
	rt := f.fn.CreateTracker(rest)
	var got []string
	var failures []Failure
	var split func(*sdf.LockRTracker, int)
	if residual != nil {
		split = checkpointAfter(t, k, residual)
	}
	err := f.fn.process(context.Background(), rt, d, func(_ int, _ int64, _ string, rec []byte) {
		got = append(got, string(rec))
		if split != nil {
			split(rt, len(got))
		}
	}, func(fl Failure) { failures = append(failures, fl) })
	if err != nil {
		t.Fatalf("process %s: %v", d.ID, err)
	}
	return got, failures
}

// want returns the records of d's members, in order, leaving out the keys in skip.
func (f *aheadFixture) want(d SplitDescriptor, skip ...string) []string {
	var w []string
	for _, m := range d.Members {
		if !slices.Contains(skip, m.Key) {
			w = append(w, f.recs[m.Key]...)
		}
	}
	return w
}

// requested waits until the server has seen a GET of key, or gives up after a while.
func (f *aheadFixture) requested(t *testing.T, key string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(f.srv.Requests(key)) == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%s was never requested", key)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// requestedOnce checks that the server saw no range of d's members requested twice.
func (f *aheadFixture) requestedOnce(t *testing.T, d SplitDescriptor) {
	t.Helper()
	for _, m := range d.Members {
		var ranges []string
		for _, r := range f.srv.Requests(m.Key) {
			ranges = append(ranges, r.Range)
		}
		sorted := slices.Clone(ranges)
		slices.Sort(sorted)
		if len(slices.Compact(sorted)) != len(ranges) {
			t.Errorf("%s: ranges %v, want each requested once", m.Key, ranges)
		}
	}
}

// settled checks that everything the instance fetched was counted and given back.
func (f *aheadFixture) settled(t *testing.T) {
	t.Helper()
	f.fn.finishBundle(context.Background())
	if st := f.fn.fetcher.Stats(); st != f.fn.reported {
		t.Errorf("fetcher transferred %+v, the metrics were told %+v", st, f.fn.reported)
	}
	if h := f.fn.fetcher.Budget().Held(); h != 0 {
		t.Errorf("%d bytes of parts still held after the bundle", h)
	}
	settleGoroutines(t)
}

// The restriction announced after the current one is fetched while the current one is
// read, and taken over when it starts: its ranges are each requested once, and it emits
// exactly its records.
func TestLookaheadFetchesTheNextRestriction(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2 := f.descriptor(t, "one", 2), f.descriptor(t, "two", 2)
	f.announceAll(t, d1, d2)
	got, _ := f.read(t, d1, fullRestriction(d1), 0, nil)
	if !slices.Equal(got, f.want(d1)) {
		t.Fatalf("first descriptor: %d records, want %d in order", len(got), len(f.want(d1)))
	}
	f.requested(t, d2.Members[0].Key) // before its restriction begins
	got, _ = f.read(t, d2, fullRestriction(d2), 0, nil)
	if !slices.Equal(got, f.want(d2)) {
		t.Fatalf("second descriptor: %d records, want %d in order", len(got), len(f.want(d2)))
	}
	f.requestedOnce(t, d2)
	if d := f.fn.fetcher.Stats().Dropped; d != 0 {
		t.Errorf("dropped %d bytes; nothing fetched ahead went unused", d)
	}
	f.settled(t)
}

// What was fetched ahead for a restriction that does not come next is handed over, and
// taken over when it comes later; a checkpoint, a residual that starts inside a member and
// a failed object each read exactly what they own; and at the bundle's end nothing is held
// and every byte was counted.
func TestLookaheadUnderSplitsAndFailures(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2, d3 := f.descriptor(t, "one", 3), f.descriptor(t, "two", 2), f.descriptor(t, "three", 1)
	f.announceAll(t, d1, d2, d3)
	f.srv.Delete(t, "ahead", d2.Members[1].Key) // deleted after planning

	// d1 is checkpointed mid-way through its first member: the members after it are
	// handed over, and d2, announced next, is fetched ahead.
	var residual restriction
	primary, _ := f.read(t, d1, fullRestriction(d1), 100, &residual)
	if len(primary) < 100 || len(primary) >= len(f.recs[d1.Members[0].Key]) {
		t.Fatalf("primary emitted %d records after a checkpoint at 100, want the run of claims holding it, inside the first member", len(primary))
	}
	f.requested(t, d2.Members[0].Key)
	// d3 comes instead of d2: what d2 fetched is handed over.
	got3, _ := f.read(t, d3, fullRestriction(d3), 0, nil)
	if !slices.Equal(got3, f.want(d3)) {
		t.Fatalf("d3: %d records, want %d", len(got3), len(f.want(d3)))
	}
	// The residual resumes inside d1's first member, and takes over its later members.
	rest1, _ := f.read(t, d1, residual, 0, nil)
	if got := append(primary, rest1...); !slices.Equal(got, f.want(d1)) {
		t.Fatalf("d1 primary+residual: %d records, want %d in order", len(got), len(f.want(d1)))
	}
	// d2 comes last: its deleted member is quarantined, the other read whole.
	got2, failures := f.read(t, d2, fullRestriction(d2), 0, nil)
	if !slices.Equal(got2, f.want(d2, d2.Members[1].Key)) {
		t.Fatalf("d2: %d records, want %d", len(got2), len(f.want(d2, d2.Members[1].Key)))
	}
	if len(failures) != 1 || failures[0].Key != d2.Members[1].Key || failures[0].Reason != ReasonDeleted {
		t.Errorf("failures %+v, want %s quarantined as deleted", failures, d2.Members[1].Key)
	}
	// Every member's bytes were received once: d1's later members and d2's first were
	// taken over, however far their fetches had come.
	for _, d := range []SplitDescriptor{d1, d3} {
		f.fetchedOnce(t, d.Members...)
	}
	f.fetchedOnce(t, d2.Members[0])
	if st := f.fn.fetcher.Stats(); st.Dropped != 0 {
		t.Errorf("stats %+v: nothing fetched ahead or handed over should be dropped", st)
	}
	f.settled(t)
}

// fetchedOnce checks that the server sent each of ms's bytes once.
func (f *aheadFixture) fetchedOnce(t *testing.T, ms ...Member) {
	t.Helper()
	for _, m := range ms {
		if n := s3test.BodyBytes(f.srv.Requests(m.Key)); n != m.Size {
			t.Errorf("%s: %d bytes sent for %d stored: %+v", m.Key, n, m.Size, f.srv.Requests(m.Key))
		}
	}
}

// handedFrom returns the store's entries held by fn's fetcher: owned (fetched ahead by it)
// and unowned (handed over).
func handedFrom(fn *reader) (owned, unowned []*handed) {
	handovers.Lock()
	defer handovers.Unlock()
	for _, h := range handovers.list {
		switch {
		case h.owner == &fn.ahead:
			owned = append(owned, h)
		case h.from == fn:
			unowned = append(unowned, h)
		}
	}
	return owned, unowned
}

// What is handed over and never taken expires, so that the worker's memory is not held by
// restrictions that went elsewhere; it is counted as dropped.
func TestHandedOverExpires(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2 := f.descriptor(t, "one", 1), f.descriptor(t, "two", 1)
	f.announceAll(t, d1, d2)
	f.read(t, d1, fullRestriction(d1), 0, nil)
	f.requested(t, d2.Members[0].Key)
	if owned, _ := handedFrom(f.fn); len(owned) != 1 {
		t.Fatalf("%d fetches ahead after d1, want d2's one member", len(owned))
	}
	f.fn.finishBundle(context.Background()) // d2 never comes: handed over
	_, unowned := handedFrom(f.fn)
	if len(unowned) != 1 {
		t.Fatalf("%d entries handed over after the bundle, want d2's one member", len(unowned))
	}
	handovers.Lock()
	unowned[0].timer.Reset(time.Millisecond)
	handovers.Unlock()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, left := handedFrom(f.fn); len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the entry handed over did not expire")
		}
	}
	if st := f.fn.fetcher.Stats(); st.Dropped+st.Cancelled == 0 {
		t.Errorf("stats %+v: the expired fetch was counted neither as dropped nor as cancelled", st)
	}
	f.settled(t)
}

// A fetch ahead waits for as long as its instance reads the restriction before it: only
// what is handed over expires. Before, the TTL ran from the fetch, and a restriction slower
// than it (a bzip2 segment on a loaded worker) dropped the next one's bytes, which were
// then fetched again.
func TestLookaheadWaitsForABusyInstance(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2 := f.descriptor(t, "one", 1), f.descriptor(t, "two", 1)
	f.announceAll(t, d1, d2)
	defer func(ttl time.Duration) { aheadTTL = ttl }(aheadTTL)
	aheadTTL = time.Millisecond
	var got []string
	err := f.fn.process(context.Background(), f.fn.CreateTracker(fullRestriction(d1)), d1, func(_ int, _ int64, _ string, rec []byte) {
		if len(got) == 0 {
			f.requested(t, d2.Members[0].Key)
			time.Sleep(100 * time.Millisecond)
		}
		got = append(got, string(rec))
	}, func(fl Failure) { t.Errorf("failure %+v", fl) })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, f.want(d1)) {
		t.Fatalf("d1: %d records, want %d in order", len(got), len(f.want(d1)))
	}
	time.Sleep(50 * time.Millisecond) // many TTLs
	if owned, _ := handedFrom(f.fn); len(owned) != 1 {
		t.Fatalf("%d fetches ahead after d1, want d2's one member, kept while d1 was read", len(owned))
	}
	got2, _ := f.read(t, d2, fullRestriction(d2), 0, nil)
	if !slices.Equal(got2, f.want(d2)) {
		t.Fatalf("d2: %d records, want %d in order", len(got2), len(f.want(d2)))
	}
	if st := f.fn.fetcher.Stats(); st.Dropped != 0 || st.Cancelled != 0 || st.Received != d1.Members[0].Size+d2.Members[0].Size {
		t.Errorf("stats %+v: want d2's fetch ahead taken over, nothing dropped, each object's %d and %d bytes received once", st, d1.Members[0].Size, d2.Members[0].Size)
	}
	f.settled(t)
}

// A restriction one instance fetched ahead for, which the runner gives to another instance
// of the worker (prism splits a bundle between its elements when a stage seems to stall),
// is taken over by that instance: each byte is received once, its records are exact, and
// neither instance drops a byte.
func TestLookaheadHandsOverToAnotherInstance(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2 := f.descriptor(t, "one", 1), f.descriptor(t, "two", 2)
	f.announceAll(t, d1, d2)
	g := f.otherInstance(t)
	if got, _ := f.read(t, d1, fullRestriction(d1), 0, nil); !slices.Equal(got, f.want(d1)) {
		t.Fatalf("d1: %d records, want %d in order", len(got), len(f.want(d1)))
	}
	f.requested(t, d2.Members[0].Key) // fetched ahead by the first instance
	if got, _ := g.read(t, d2, fullRestriction(d2), 0, nil); !slices.Equal(got, f.want(d2)) {
		t.Fatalf("d2 on the second instance: %d records, want %d in order", len(got), len(f.want(d2)))
	}
	f.fetchedOnce(t, d2.Members...)
	// The taker counted what the first instance's fetcher transferred for it: that
	// instance's bundle may be over, and it may never report again.
	f.fn.reportMu.Lock()
	st, rep := f.fn.fetcher.Stats(), f.fn.reported
	f.fn.reportMu.Unlock()
	if st != rep {
		t.Errorf("the first instance's fetcher transferred %+v, the metrics were told %+v", st, rep)
	}
	f.settled(t)
	g.settled(t)
	a, b := f.fn.fetcher.Stats(), g.fn.fetcher.Stats()
	if a.Dropped != 0 || b.Dropped != 0 || a.Received+b.Received != d1.Members[0].Size+d2.Members[0].Size+d2.Members[1].Size {
		t.Errorf("stats %+v and %+v: want every object's bytes received once, none dropped", a, b)
	}
}

// An instance fetches ahead only the restriction announced right after its own: when
// another instance started that one, a runner split the bundle there, and the restrictions
// after it are that instance's to read, not to be fetched twice.
func TestLookaheadStopsAtASplitBundle(t *testing.T) {
	f := newAheadFixture(t)
	d1, d2, d3, d4 := f.descriptor(t, "one", 1), f.descriptor(t, "two", 1), f.descriptor(t, "three", 1), f.descriptor(t, "four", 1)
	f.announceAll(t, d1, d2, d3, d4)
	g := f.otherInstance(t)
	// The bundle was split before d2: the second instance reads d2, and fetches d3 ahead.
	if got, _ := g.read(t, d2, fullRestriction(d2), 0, nil); !slices.Equal(got, f.want(d2)) {
		t.Fatalf("d2: %d records, want %d in order", len(got), len(f.want(d2)))
	}
	f.requested(t, d3.Members[0].Key)
	// The first instance reads d1, the last of its bundle: it fetches nothing ahead.
	if got, _ := f.read(t, d1, fullRestriction(d1), 0, nil); !slices.Equal(got, f.want(d1)) {
		t.Fatalf("d1: %d records, want %d in order", len(got), len(f.want(d1)))
	}
	if st := f.fn.fetcher.Stats(); st.Received != d1.Members[0].Size || len(f.srv.Requests(d4.Members[0].Key)) != 0 {
		t.Errorf("the first instance received %d bytes for d1's %d, and d4 was requested %d times: want nothing fetched ahead past the split", st.Received, d1.Members[0].Size, len(f.srv.Requests(d4.Members[0].Key)))
	}
	for _, d := range []SplitDescriptor{d3, d4} {
		if got, _ := g.read(t, d, fullRestriction(d), 0, nil); !slices.Equal(got, f.want(d)) {
			t.Fatalf("%s: %d records, want %d in order", d.Members[0].Key, len(got), len(f.want(d)))
		}
		f.requestedOnce(t, d)
	}
	f.settled(t)
	g.settled(t)
}

// On prism, the step before the reader announces every descriptor before the reader's stage
// begins: each restriction after the first finds its members fetched ahead, and the records
// are exactly the objects'.
func TestReadFetchesAheadOnPrism(t *testing.T) {
	f := newAheadFixture(t)
	var want []string
	for i := 0; i < 6; i++ {
		want = append(want, f.want(f.descriptor(t, fmt.Sprintf("d%d", i), 2))...)
	}
	cfg := f.fn.Cfg
	cfg.SplitTargetBytes = 300 << 10 // about two objects per descriptor
	p, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, Read(s, cfg)), want)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatal(err)
	}
	c := s3test.Counters(pr, MetricsNamespace)
	if c["splits_planned"] < 3 || c["members_fetched_ahead"] < 2 {
		t.Errorf("counters %v: want several descriptors, and members fetched ahead of their restrictions", c)
	}
}

// forgetHandovers drops everything in the worker's handover store, as a residual read on
// another worker process finds it.
func forgetHandovers() {
	handovers.Lock()
	list := handovers.takeWhere(func(*handed) bool { return true })
	handovers.Unlock()
	for _, h := range list {
		h.drop()
	}
}

// A split inside any member of a restriction (its first, a middle one, its last, a segment
// of a larger object, a gzip object) or between two of them hands the residual, read by
// another instance of the worker, what the primary had fetched and decoded for it: the two
// together emit the unsplit read's records, receive no byte of an object twice, and no
// more bytes than the unsplit read plans to fetch (the read of either may end before a
// part past a segment's last record is sent, or after: a part takes its budget room when
// its answer arrives, and one still waiting when its object is dropped is never read).
func TestSplitAnywhereFetchesOnce(t *testing.T) {
	f := newAheadFixture(t)
	g := f.otherInstance(t)
	plain := f.descriptor(t, "split", 3)
	var b strings.Builder
	var recs []string
	for i := range 3000 {
		r := fmt.Sprintf(`{"src":"gz","i":%d,"r":%q}`, i, strings.Repeat("q", i%70))
		b.WriteString(r + "\n")
		recs = append(recs, r)
	}
	text := b.String()
	etag := f.srv.Put(t, "ahead", "split/gz.ndjson.gz", s3test.Gzip(text))
	gz := Member{Key: "split/gz.ndjson.gz", ETag: etag, Size: int64(len(s3test.Gzip(text)))}
	f.recs[gz.Key] = recs
	seg := plain.Members[2] // its records starting in [60000, 150000)
	seg.Start, seg.End = 60000, 150000
	members := []Member{plain.Members[0], gz, plain.Members[1], seg}
	d := SplitDescriptor{ID: splitID("ahead", members), Bucket: "ahead", Members: members}

	sent := func() map[string]int64 {
		out := map[string]int64{}
		for _, r := range f.srv.Requests("") {
			out[r.Key] += r.Bytes
		}
		return out
	}
	// twice returns a byte of an object that the GETs after the first skip of the server's
	// log received more than once, if any.
	twice := func(skip int) (string, int64, bool) {
		got := map[string][][2]int64{}
		for _, r := range f.srv.Requests("")[skip:] {
			from, _, ok := parseRange(r.Range)
			if !ok {
				from = 0
			}
			for _, iv := range got[r.Key] {
				if lo, hi := max(iv[0], from), min(iv[1], from+r.Bytes); lo < hi {
					return r.Key, lo, true
				}
			}
			got[r.Key] = append(got[r.Key], [2]int64{from, from + r.Bytes})
		}
		return "", 0, false
	}
	// What the unsplit read plans to fetch of each object: its members' fetch ranges.
	planned := map[string]int64{}
	for _, w := range memberFetches(d, fullRestriction(d)) {
		planned[w.obj.Key] += w.rng.PlanEnd - w.rng.From
	}
	before := sent()
	all, _ := f.read(t, d, fullRestriction(d), 0, nil)
	f.fn.finishBundle(context.Background())
	forgetHandovers()
	f.srv.Settle(t) // what the server writes for requests given up on belongs to this read
	once := map[string]int64{}
	for k, n := range sent() {
		once[k] = n - before[k]
	}
	// Where the members' records begin in the read.
	var starts []int
	n := 0
	for _, m := range members {
		starts = append(starts, n)
		for _, r := range all[n:] {
			if !strings.Contains(r, strings.TrimSuffix(strings.TrimPrefix(m.Key, "split/"), ".ndjson.gz")) {
				break
			}
			n++
		}
	}
	cases := map[string]int{
		"inside the first member":    100,
		"inside the gzip member":     starts[1] + 1000,
		"inside a middle member":     starts[2] + 50,
		"at a member's first record": starts[2],
		"inside the last segment":    starts[3] + 30,
	}
	for name, k := range cases {
		t.Run(name, func(t *testing.T) {
			before, skip := sent(), len(f.srv.Requests(""))
			var residual restriction
			primary, _ := f.read(t, d, fullRestriction(d), k, &residual)
			rest, _ := g.read(t, d, residual, 0, nil)
			if got := append(primary, rest...); !slices.Equal(got, all) {
				t.Fatalf("primary (%d) and residual (%d) records differ from the unsplit read's %d", len(primary), len(rest), len(all))
			}
			f.fn.finishBundle(context.Background())
			g.fn.finishBundle(context.Background())
			forgetHandovers()
			f.srv.Settle(t)
			for key, n := range sent() {
				if n-before[key] > max(once[key], planned[key]) {
					t.Errorf("%s: %d bytes sent, the unsplit read received %d and planned %d: %+v", key, n-before[key], once[key], planned[key], f.srv.Requests(key))
				}
			}
			if key, at, ok := twice(skip); ok {
				t.Errorf("%s: byte %d received twice: %+v", key, at, f.srv.Requests(key))
			}
			for i, x := range []*aheadFixture{f, g} {
				if h := x.fn.fetcher.Budget().Held(); h != 0 {
					t.Errorf("instance %d: %d bytes of parts still held after the bundle", i, h)
				}
			}
		})
	}
	f.settled(t)
	g.settled(t)
}
