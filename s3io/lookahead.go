package s3io

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// Looking ahead across restrictions. Beam hands a DoFn one element at a time and never shows
// it the next, and a runner that reads a bundle's restrictions one after another (prism
// does) would otherwise start each with a full request latency and an empty pipeline of
// parts. So a small step before the splittable DoFn, lookaheadFn, announces each descriptor's
// initial restrictions to the worker process as they pass, and a reader instance, once its
// current restriction's parts are queued, queues the first members of the restrictions
// announced next behind them (aheadFetches). Those fetches are entries of the worker's
// handover store (handover.go): whichever instance of the worker starts that restriction
// takes them over, the one that fetched them or another (a runner that splits a bundle
// between its elements gives the rest to a new bundle).
//
// It is correct under splits, checkpoints and retries because what is fetched ahead is named
// by content, not by restriction: a fetch is taken over only by a read of the same object,
// pinned to the same ETag, over the same byte range. A retried bundle or a restriction
// processed on another worker finds nothing to take and fetches for itself, as it would
// without the lookahead; and the fetches ahead are queued after the current restriction's,
// so they never hold back a part it waits for.

// lookaheadDepth is how many descriptors lookaheadFn holds back. When the runner fuses it
// with the reader (each descriptor read as it is emitted), holding one back is what lets
// the next be announced while the current one is read; when it does not (prism makes the
// reader a stage of its own), every descriptor is announced before the first is read.
const lookaheadDepth = 1

// maxAnnounced bounds the announcements a process keeps: the oldest go first.
const maxAnnounced = 256

// aheadTTL is how long a fetch handed over waits in the handover store for a read to take
// it before it is dropped, so that what went to another worker process (or a bundle that
// failed) does not hold the worker's memory. It runs from the handover, never while a read
// or an instance fetching ahead owns the fetch: a restriction that takes longer than the
// TTL (a member cut from a compressed object, on a loaded worker) is still followed by the one fetched for
// it. A variable so that tests can shorten it.
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
}

// announce adds a restriction to the process's announcements, in the order announced; they
// are guarded by the handover store's lock.
func announce(key string, d SplitDescriptor, rest restriction) {
	handovers.Lock()
	defer handovers.Unlock()
	if len(handovers.announced) >= maxAnnounced {
		handovers.announced = handovers.announced[1:]
	}
	handovers.announced = append(handovers.announced, &announced{key: key, d: d, rest: rest})
}

// announcements returns the process's announcements; handovers is locked.
func announcements() []*announced { return handovers.announced }

// fetchKey names a member's fetch by content: the bucket, the object pinned to its ETag, and
// the byte range. A fetch is taken over only by a read with the same key.
type fetchKey struct {
	bucket string
	obj    fetch.Object
	rng    fetch.Range
}

// aheadFetches are a reader instance's fetches ahead: entries of the worker's handover
// store (handover.go) that its fetcher issues for the restriction announced after its
// current one.
type aheadFetches struct {
	fn  *reader
	key string     // lookaheadKey of the instance's Config: the announcements it reads
	cur *announced // the announcement of the restriction being read, if it was announced
	// next, under handovers, is the announcement fetched for; nil once none is.
	next *announced
}

// aheadWant is a member a starting restriction wants fetched: the i-th of the restriction.
type aheadWant struct {
	i int
	fetchKey
	// m is the member, and first the index of the first record the restriction reads of
	// it; whole is set when that is the member's first record: a decoding started there
	// ahead of it serves.
	m       int
	first   int64
	whole   bool
	of      *fetch.ObjectFetch
	mr      *memberRead   // its decoding, when it was started ahead
	pending *pendingBatch // where mr stands, when a split stopped its read inside the member
	ahead   bool          // fetched ahead or handed over, taken over
}

// take returns the wants of the restriction of descriptor id beginning at start with their
// fetches: those the worker's instances fetched for the same bytes, taken over from the
// handover store, and the rest queued now. The fetcher issues parts in the order of its
// queue, and the reader reads the wants in order, so the wants' fetches are queued in their
// order: one still in this instance's queue is taken in place only while nothing was queued
// for an earlier want; any other is handed over (frozen) and adopted at the queue's end.
// The instance's fetches ahead that no want takes are handed over too: they would sit in
// the queue before the wants' parts.
func (a *aheadFetches) take(id string, start position, wants []aheadWant, gets func(string) *fetch.Gets, f *fetch.Fetcher) []aheadWant {
	got, mine := handovers.takeFor(a, id, wants)
	for _, h := range mine {
		handOver(h)
	}
	queued := false
	for k := range wants {
		w, h := &wants[k], got[k]
		switch {
		case h == nil:
			w.of = f.Add(gets(w.bucket), w.obj, w.rng)
			queued = true
			continue
		case h.owner == a && !queued:
			// Still in this instance's queue, in order.
		default:
			// Another instance's or another read's, or handed over, or this instance's
			// behind a part queued now.
			h.of.Freeze()
			f.Adopt(gets(w.bucket), h.of)
			queued = true
		}
		w.of, w.mr, w.pending, w.ahead = h.of, h.mr, h.pending, true
		if h.mr != nil {
			h.mr.fn = a.fn // its decoders go back to this instance
		}
	}
	return wants
}

// started claims the announcement of the restriction beginning at start of descriptor id,
// so that no reader fetches ahead for it, and remembers it as the instance's current one.
func (a *aheadFetches) started(id string, start position) {
	handovers.Lock()
	defer handovers.Unlock()
	a.cur = nil
	for _, an := range announcements() {
		if an.key == a.key && an.d.ID == id && an.rest.Start == start {
			an.claimed, a.cur = true, an
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
// bundle split away, whose own instance reads it in order. A residual (a current
// restriction that was not announced) fetches nothing ahead either: a runner schedules a
// residual in a bundle of its own.
func (a *aheadFetches) fetchNext(f *fetch.Fetcher, gets func(string) *fetch.Gets) {
	handovers.Lock()
	defer handovers.Unlock()
	if a.next != nil || a.cur == nil {
		return // still fetching ahead for the next one, or a residual
	}
	list := announcements()
	i := slices.Index(list, a.cur)
	if i < 0 {
		return // forgotten: maxAnnounced newer ones came since
	}
	for _, an := range list[i+1:] {
		if an.key != a.key {
			continue
		}
		if an.claimed {
			return
		}
		an.claimed, a.next = true, an
		for _, w := range memberFetches(an.d, an.rest) {
			h := &handed{key: a.handKey(w.fetchKey), owner: a, from: a.fn}
			h.of = f.Add(gets(w.bucket), w.obj, w.rng)
			if m := an.rest.Start.Member + w.i; w.i == 0 && decodedEarly(an.d.Members[m]) {
				h.an, h.m = an, m
			}
			handovers.add(h)
		}
		return
	}
}

// handOverAll hands over every fetch ahead of the instance: its bundle is over, and the
// restriction it fetched for will start on whichever instance the runner gives it to.
func (a *aheadFetches) handOverAll() {
	for _, h := range handovers.owned(a) {
		handOver(h)
	}
}

// decodeFirst starts decoding the first member of the restriction fetched ahead, with
// start, if it is cut from a compressed object (decodedEarly) and not yet started. The reader
// calls it when it opens its restriction's last member, which leaves the window of the
// member decoded ahead (decodeDepth) free.
func (a *aheadFetches) decodeFirst(start func(int, member.Plan, *fetch.ObjectFetch) *memberRead) {
	handovers.Lock()
	defer handovers.Unlock()
	for _, h := range handovers.list {
		if h.owner != a {
			continue
		}
		if h.an != nil && h.mr == nil {
			h.mr = start(h.m, memberPlan(h.an.d, h.an.rest.Start, h.an.rest.Resume, h.m), h.of)
		}
		return // only the first
	}
}

// decodedEarly reports whether the first member of a restriction announced next is decoded
// while the current one is read: a member cut from a compressed object, whose decoding, not
// the fetch, bounds its read. A runner that reads a bundle's restrictions one after the
// other (prism) would otherwise decode the members cut from a large gzip object on one
// core, one after the other; decoded ahead, on credit beyond its window (Credit), the next
// one decodes on the
// second core while the current one is emitted. Its window is the one the current
// restriction leaves unused once it reads its last member (decodeFirst), so that no more
// than decodeDepth members are decoded ahead of the one being emitted.
func decodedEarly(m Member) bool { return m.Codec != "" && !m.whole() }

// withLookahead puts lookaheadFn before the reader of descriptors.
func withLookahead(s beam.Scope, cfg Config, descriptors beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("lookahead"), &lookaheadFn{Cfg: cfg}, descriptors)
}
