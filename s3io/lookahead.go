package s3io

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// Looking ahead across restrictions. Beam hands a DoFn one element at a time and never shows
// it the next, and a runner that reads a bundle's restrictions one after another (prism
// does) would otherwise start each with a full request latency and an empty pipeline of
// parts. So a small step before the splittable DoFn, lookaheadFn, announces each descriptor's
// initial restrictions to the worker process as they pass, and a reader instance, once its
// current restriction's parts are queued, queues the first members of the restrictions
// announced next behind them (aheadFetches). When one of those restrictions starts on that
// instance, it takes the fetches over; when it starts on another instance of the same
// worker (a runner that splits a bundle between its elements gives it to a new bundle), that
// instance borrows them; whatever is not taken is dropped and counted in dropped_bytes.
//
// It is correct under splits, checkpoints and retries because what is fetched ahead is named
// by content, not by restriction: a fetch is taken over only by a read of the same object,
// pinned to the same ETag, over the same byte range. A residual that starts mid-object, a
// retried bundle, or a restriction processed on another worker simply finds nothing to take
// and fetches for itself, as it would without the lookahead; and the fetches ahead are
// queued after the current restriction's, so they never hold back a part it waits for.

// lookaheadDepth is how many descriptors lookaheadFn holds back. When the runner fuses it
// with the reader (each descriptor read as it is emitted), holding one back is what lets
// the next be announced while the current one is read; when it does not (prism makes the
// reader a stage of its own), every descriptor is announced before the first is read.
const lookaheadDepth = 1

// maxAnnounced bounds the announcements a process keeps: the oldest go first.
const maxAnnounced = 256

// aheadTTL is how long bytes fetched ahead wait for their restriction once their instance
// is idle (its last restriction ended) before they are dropped, so that an instance left
// idle (its bundle failed, or the runner sent the restriction elsewhere) does not hold the
// worker's memory. It runs from the end of the current restriction, not from the fetch:
// a restriction that takes longer than the TTL (a compressed segment on a loaded worker:
// one run with a second test process and busy loops on the two cores expired several) is
// still followed by the one fetched for it, which would otherwise fetch those bytes again.
// A variable so that tests can shorten it.
var aheadTTL = 30 * time.Second

// lookaheadFn announces the initial restrictions of the descriptors it passes on, holding
// back lookaheadDepth of them (in the global window only: anywhere else it passes them on at
// once, since a bundle's end would re-window them).
type lookaheadFn struct {
	Cfg Config

	key  string
	held []heldDescriptor
}

type heldDescriptor struct {
	ts beam.EventTime
	d  SplitDescriptor
}

func (fn *lookaheadFn) Setup() { fn.key = lookaheadKey(fn.Cfg) }

func (fn *lookaheadFn) ProcessElement(w beam.Window, ts beam.EventTime, d SplitDescriptor, emit func(beam.EventTime, SplitDescriptor)) {
	r := reader{Cfg: fn.Cfg}
	for _, rest := range r.SplitRestriction(d, r.CreateInitialRestriction(d)) {
		announce(fn.key, d, rest)
	}
	if _, global := w.(window.GlobalWindow); !global {
		emit(ts, d)
		return
	}
	fn.held = append(fn.held, heldDescriptor{ts, d})
	if len(fn.held) > lookaheadDepth {
		emit(fn.held[0].ts, fn.held[0].d)
		fn.held = append(fn.held[:0], fn.held[1:]...)
	}
}

func (fn *lookaheadFn) FinishBundle(emit func(beam.EventTime, SplitDescriptor)) {
	for _, h := range fn.held {
		emit(h.ts, h.d)
	}
	fn.held = fn.held[:0]
}

// lookaheadKey names the readers an announcement is for: those of the same Config, whose
// client reaches the same server with the same credentials.
func lookaheadKey(cfg Config) string {
	b, _ := json.Marshal(cfg)
	return string(b)
}

// announced is a restriction a lookaheadFn passed on in this process.
type announced struct {
	key     string
	d       SplitDescriptor
	rest    restriction
	claimed bool // a reader fetches ahead for it, or has started it
	// holder is the instance that fetches ahead for it, if one did: another instance that
	// starts it borrows those fetches (aheadFetches.borrow).
	holder *aheadFetches
}

var announcements struct {
	sync.Mutex
	list []*announced // in the order announced
}

func announce(key string, d SplitDescriptor, rest restriction) {
	announcements.Lock()
	defer announcements.Unlock()
	if len(announcements.list) >= maxAnnounced {
		announcements.list = announcements.list[1:]
	}
	announcements.list = append(announcements.list, &announced{key: key, d: d, rest: rest})
}

// fetchKey names a member's fetch by content: the bucket, the object pinned to its ETag, and
// the byte range. A fetch ahead is taken over only by a read with the same key.
type fetchKey struct {
	bucket string
	obj    fetch.Object
	rng    fetch.Range
}

// aheadFetch is an object fetched for a restriction that has not started, and, for the
// first member of a compressed object's segment, decoded too (see decodedAhead).
type aheadFetch struct {
	fetchKey
	of *fetch.ObjectFetch
	mr *memberRead // its decoding, started ahead (decodeFirst); nil if not
	// timer expires it; set, and armed, once its instance is idle (aheadFetches.idle), and
	// disarmed when the instance starts its next restriction.
	timer *time.Timer
	// arms, under aheadFetches.mu, counts its armings and disarmings: a firing timer drops
	// it only if none came since its own, so that a timer that fired as its instance
	// started a restriction drops nothing, even once the instance is idle again.
	arms int
	// an and m are the restriction and member af is the first member of, when that member is
	// decoded ahead once the current restriction frees its window (decodedAhead).
	an *announced
	m  int
}

// drop frees what af holds: its decoding, which holds its fetch, or its fetch.
func (af *aheadFetch) drop() {
	af.stop()
	if af.mr != nil {
		af.mr.finish(context.Background())
		return
	}
	af.of.Drop()
}

// stop disarms af's timer, if it has one; the caller holds aheadFetches.mu or owns af.
func (af *aheadFetch) stop() {
	af.arms++
	if af.timer != nil {
		af.timer.Stop()
	}
}

// aheadFetches are a reader instance's fetches ahead, in the order they were queued.
type aheadFetches struct {
	key string
	cur *announced // the announcement of the restriction being read, if it was announced
	// next, under mu, is the announcement list is fetched for; nil once list is empty or
	// was given up.
	next *announced
	// report adds what the instance's fetcher transferred to the metrics; lenders, under mu,
	// are the reports of the instances whose fetches the current restriction borrowed: the
	// lender's bundle may have ended, and its instance may never report again, before the
	// borrowed parts have all arrived, so the borrower reports them when its restriction ends.
	report  func(context.Context)
	lenders []func(context.Context)

	mu   sync.Mutex
	list []*aheadFetch
}

// aheadWant is a member a starting restriction wants fetched: the i-th of the restriction.
type aheadWant struct {
	i int
	fetchKey
	of    *fetch.ObjectFetch
	mr    *memberRead // its decoding, when it was started ahead
	ahead bool        // fetched ahead, taken over
}

// take returns the wants of the restriction of descriptor id beginning at start with their
// fetches: those fetched ahead for the same bytes by this instance or, borrowed, by another
// one, taken over in order, and the rest queued now. What it passes over is dropped, and so
// is every fetch ahead left once one want is queued anew: it would sit in the queue before
// that want's parts.
func (a *aheadFetches) take(id string, start position, wants []aheadWant, gets func(string) *fetch.Gets, f *fetch.Fetcher) []aheadWant {
	borrowed, lender := a.borrow(id, start)
	a.mu.Lock()
	if len(borrowed) > 0 {
		a.list = append(borrowed, a.list...)
		a.lenders = append(a.lenders, lender)
	}
	var drop []*aheadFetch
	i, taken := 0, 0
	for ; taken < len(wants); taken++ {
		w := &wants[taken]
		j := i
		for j < len(a.list) && a.list[j].fetchKey != w.fetchKey {
			j++
		}
		if j == len(a.list) {
			break
		}
		drop = append(drop, a.list[i:j]...)
		af := a.list[j]
		af.stop()
		w.of, w.mr, w.ahead, i = af.of, af.mr, true, j+1
	}
	if taken < len(wants) {
		drop = append(drop, a.list[i:]...)
		a.list = a.list[:0]
	} else {
		a.list = append(a.list[:0], a.list[i:]...)
	}
	if len(a.list) == 0 || a.next != nil && a.next.d.ID == id && a.next.rest.Start == start {
		a.next = nil // what is left, if anything, was for the restriction starting now
	}
	for _, af := range a.list {
		af.stop() // the instance is busy again: what it still holds waits for its next restriction
	}
	a.mu.Unlock()
	for _, af := range drop {
		af.drop()
	}
	for k := range wants {
		if wants[k].of == nil {
			wants[k].of = f.Add(gets(wants[k].bucket), wants[k].obj, wants[k].rng)
		}
	}
	return wants
}

// started marks the announcement of the restriction beginning at start of descriptor id as
// claimed, so that no reader fetches ahead for it, and remembers it as the instance's
// current one.
func (a *aheadFetches) started(id string, start position) {
	announcements.Lock()
	defer announcements.Unlock()
	a.cur = nil
	for _, an := range announcements.list {
		if an.key == a.key && an.d.ID == id && an.rest.Start == start {
			an.claimed, an.holder, a.cur = true, nil, an
		}
	}
}

// fetchNext queues, behind everything queued, every member of the restriction announced
// right after the instance's current one, if no reader has claimed it, and claims it. One
// restriction ahead is enough to keep the pipeline of parts full across the boundary; the
// budget bounds how much of it is fetched before it starts.
//
// Only that one: if another reader has claimed it, a runner split the bundle there (prism
// does, between elements, when a stage seems to stall), and what follows belongs to the
// bundle split away, whose own instance reads it in order. Looking further, an instance
// claimed the last restriction of the other bundle, fetched and decoded most of it ahead,
// and dropped it when its own bundle ended, while the other instance read it again (CI:
// a pbzip2 object's last 16.3 MB segment fetched twice, 6.57 MB of it dropped unread). A
// residual (a current restriction that was not announced) fetches nothing ahead either: a
// runner schedules a residual in a bundle of its own.
func (a *aheadFetches) fetchNext(f *fetch.Fetcher, gets func(string) *fetch.Gets) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.list) > 0 || a.cur == nil {
		return // still fetching ahead for the next one, or a residual
	}
	announcements.Lock()
	defer announcements.Unlock()
	i := slices.Index(announcements.list, a.cur)
	if i < 0 {
		return // forgotten: maxAnnounced newer ones came since
	}
	for _, an := range announcements.list[i+1:] {
		if an.key != a.key {
			continue
		}
		if an.claimed {
			return
		}
		an.claimed, an.holder, a.next = true, a, an
		for _, w := range memberFetches(an.d, an.rest) {
			af := &aheadFetch{fetchKey: w.fetchKey}
			af.of = f.Add(gets(af.bucket), af.obj, af.rng)
			if m := an.rest.Start.Member + w.i; w.i == 0 && decodedAhead(an.d.Members[m]) {
				af.an, af.m = an, m
			}
			a.list = append(a.list, af)
		}
		return
	}
}

// idle arms the expiry of every fetch ahead: the instance's restriction has ended, and
// until the next one starts (take) nothing else will take them.
func (a *aheadFetches) idle() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, af := range a.list {
		af.stop()
		af.arms++
		arm := af.arms
		af.timer = time.AfterFunc(aheadTTL, func() { a.expire(af, arm) })
	}
}

// expire drops af if no restriction has taken it and its instance has stayed idle since
// the arming arm.
func (a *aheadFetches) expire(af *aheadFetch, arm int) {
	a.mu.Lock()
	found := false
	for i, x := range a.list {
		if x == af && af.arms == arm {
			a.list = append(a.list[:i:i], a.list[i+1:]...)
			found = true
			break
		}
	}
	a.mu.Unlock()
	if found {
		af.drop()
	}
}

// dropAll drops every fetch ahead.
func (a *aheadFetches) dropAll() {
	a.mu.Lock()
	list := a.list
	a.list, a.next = nil, nil
	a.mu.Unlock()
	for _, af := range list {
		af.drop()
	}
}

// borrow takes from another instance of the worker what it fetched ahead for the
// restriction of descriptor id beginning at start, which this instance is starting: a
// runner that splits a bundle between its elements (prism does, when a stage seems to
// stall) gives the restriction an instance fetched ahead for to another instance, which
// would otherwise fetch its bytes again while the first one holds them until its bundle
// ends. The fetches stay with the lending instance's fetcher, which reads and accounts for
// them as before; they are bound to the borrower's context when taken (newRestrictionRead).
func (a *aheadFetches) borrow(id string, start position) ([]*aheadFetch, func(context.Context)) {
	announcements.Lock()
	var o *aheadFetches
	var an *announced
	for _, x := range announcements.list {
		if x.key == a.key && x.d.ID == id && x.rest.Start == start && x.holder != nil && x.holder != a {
			o, an, x.holder = x.holder, x, nil
			break
		}
	}
	announcements.Unlock()
	if o == nil {
		return nil, nil
	}
	// The lender's lock is taken with no other held: the lender takes its own, then the
	// announcements' (fetchNext).
	o.mu.Lock()
	if o.next != an {
		o.mu.Unlock()
		return nil, nil // given up, or already dropped
	}
	list := o.list
	o.list, o.next = nil, nil
	for _, af := range list {
		af.stop()
	}
	o.mu.Unlock()
	// Only the fetches the lender's scheduler has reached are worth borrowing: the parts of
	// one it has not would wait behind the lender's current restriction, so it is dropped
	// (it has fetched nothing) and fetched anew by this instance. The lender's scheduler
	// reaches its queue in order, so those it has reached come first.
	n := 0
	for n < len(list) && list[n].of.Started() {
		n++
	}
	for _, af := range list[n:] {
		af.drop()
	}
	return list[:n], o.report
}

// lent returns, and forgets, the reports of the instances the restriction ending now
// borrowed from.
func (a *aheadFetches) lent() []func(context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lenders
	a.lenders = nil
	return l
}

// decodeFirst starts decoding the first member of the restriction fetched ahead, with
// start, if it is a compressed object's segment (decodedAhead) not yet started. The reader
// calls it when it opens its restriction's last member, which leaves the window of the
// member decoded ahead (decodeAhead) free.
func (a *aheadFetches) decodeFirst(start func(SplitDescriptor, int, readSpan, *fetch.ObjectFetch) *memberRead) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.list) == 0 || a.list[0].an == nil || a.list[0].mr != nil {
		return
	}
	af := a.list[0]
	af.mr = start(af.an.d, af.m, memberSpan(af.an.d, af.an.rest.Start, af.an.rest.Resume, af.m), af.of)
}

// decodedAhead reports whether the first member of a restriction announced next is decoded
// while the current one is read: a compressed object's segment, whose decoding, not the
// fetch, bounds its read. A runner that reads a bundle's restrictions one after the other
// (prism) would otherwise decode a large gzip object's segments on one core, one after the
// other; decoded ahead, on credit beyond its window (Credit), the next segment decodes on the
// second core while the current one is emitted. Its window is the one the current
// restriction leaves unused once it reads its last member (decodeFirst), so that no more
// than decodeAhead members are decoded ahead of the one being emitted.
func decodedAhead(m Member) bool { return m.Codec != "" && m.isSegment() }

// withLookahead puts lookaheadFn before the reader of descriptors.
func withLookahead(s beam.Scope, cfg Config, descriptors beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("lookahead"), &lookaheadFn{Cfg: cfg}, descriptors)
}
