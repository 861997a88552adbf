package s3io

import (
	"context"
	"encoding/json"
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
// instance, it takes the fetches over; whatever it does not take is dropped and counted in
// dropped_bytes.
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

// aheadTTL is how long bytes fetched ahead wait for their restriction before they are
// dropped, so that an instance left idle (its bundle failed, or the runner sent the
// restriction elsewhere) does not hold the worker's memory.
const aheadTTL = 30 * time.Second

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
	of    *fetch.ObjectFetch
	mr    *memberRead // its decoding, started ahead (decodeFirst); nil if not
	timer *time.Timer
	// an and m are the restriction and member af is the first member of, when that member is
	// decoded ahead once the current restriction frees its window (decodedAhead).
	an *announced
	m  int
}

// drop frees what af holds: its decoding, which holds its fetch, or its fetch.
func (af *aheadFetch) drop() {
	af.timer.Stop()
	if af.mr != nil {
		af.mr.finish(context.Background())
		return
	}
	af.of.Drop()
}

// aheadFetches are a reader instance's fetches ahead, in the order they were queued.
type aheadFetches struct {
	key string
	cur *announced // the announcement of the restriction being read, if it was announced

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

// take returns wants with their fetches: those fetched ahead for the same bytes, taken over
// in order, and the rest queued now. What it passes over is dropped, and so is every fetch
// ahead left once one want is queued anew: it would sit in the queue before that want's
// parts.
func (a *aheadFetches) take(wants []aheadWant, gets func(string) *fetch.Gets, f *fetch.Fetcher) []aheadWant {
	a.mu.Lock()
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
		af.timer.Stop()
		w.of, w.mr, w.ahead, i = af.of, af.mr, true, j+1
	}
	if taken < len(wants) {
		drop = append(drop, a.list[i:]...)
		a.list = a.list[:0]
	} else {
		a.list = append(a.list[:0], a.list[i:]...)
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
			an.claimed, a.cur = true, an
		}
	}
}

// fetchNext queues, behind everything queued, every member of the restriction announced
// next after the instance's current one (or the earliest announced, if the current one was
// not announced: a residual) that no reader has claimed, and claims it. One restriction
// ahead is enough to keep the pipeline of parts full across the boundary; the budget bounds
// how much of it is fetched before it starts.
func (a *aheadFetches) fetchNext(f *fetch.Fetcher, gets func(string) *fetch.Gets) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.list) > 0 {
		return // still fetching ahead for the next one
	}
	announcements.Lock()
	defer announcements.Unlock()
	list := announcements.list
	for i, an := range list {
		if an == a.cur {
			list = list[i+1:]
			break
		}
	}
	for _, an := range list {
		if an.claimed || an.key != a.key {
			continue
		}
		an.claimed = true
		for _, w := range memberFetches(an.d, an.rest) {
			af := &aheadFetch{fetchKey: w.fetchKey}
			af.of = f.Add(gets(af.bucket), af.obj, af.rng)
			if m := an.rest.Start.Member + w.i; w.i == 0 && decodedAhead(an.d.Members[m]) {
				af.an, af.m = an, m
			}
			af.timer = time.AfterFunc(aheadTTL, func() { a.expire(af) })
			a.list = append(a.list, af)
		}
		return
	}
}

// expire drops af if no restriction has taken it.
func (a *aheadFetches) expire(af *aheadFetch) {
	a.mu.Lock()
	found := false
	for i, x := range a.list {
		if x == af {
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
	a.list = nil
	a.mu.Unlock()
	for _, af := range list {
		af.drop()
	}
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
