package s3io

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/member"
	"github.com/spate-io/beam-s3/s3io/internal/worker"
)

// The handover store. A runner moves a reader's work elsewhere whenever it likes: a dynamic
// split hands the members after the split point to a residual, a checkpoint hands over the
// rest of the restriction, a bundle ends while its instance has fetched ahead for a
// restriction that another bundle reads. Bytes are money (each GET, and each byte carried
// out of S3's region), so what an instance fetched, and decoded, for members it no longer
// reads is not dropped: it goes into the worker process's handover store, named by content
// (fetchKey), and whichever instance of the worker starts one of those members next takes
// it over: the parts fetched or in flight are read from it, and that instance's fetcher
// issues the rest (fetch.Fetcher.Adopt). An object being fetched ahead waits in the store
// too, held by the instance whose fetcher issues it (aheadFetches), so that another
// instance that starts its restriction (prism gives a bundle's later elements to a new
// bundle when a stage seems to stall) takes it from there.
//
// What waits unowned is bounded: by time (aheadTTL from when it was handed over) and by
// memory (maxHandedFraction of the worker's part pool, the oldest dropped first). A member
// that goes to another worker process cannot be handed over; its bytes are fetched again
// there, and dropped here when their time is up (docs/design.md, "Fetches handed over").

// maxHandedFraction is the share of the worker's part pool (Config.WorkerBufferBytes) that
// fetches waiting unowned may hold: the rest stays free for the reads in progress.
const maxHandedFraction = 2

// handKey names a member's fetch in the store: the readers it can serve (their Config, and
// whether they recycle the framer's slabs, which a decoding started ahead has fixed) and its
// content.
type handKey struct {
	readers string
	recycle bool
	fetchKey
}

// handed is a member's fetch, and its decoding from the member's first record if one was
// started, that no restriction's read owns.
type handed struct {
	key handKey
	of  *fetch.ObjectFetch
	mr  *memberRead
	// owner is the instance whose fetcher issues it for the restriction announced after its
	// current one, and rd the restriction's read that owns the member; both nil once handed
	// over (frozen), when it waits for any instance.
	owner *aheadFetches
	rd    *restrictionRead
	// id and m name the member an entry rd owns: another read takes it only for the same
	// member of the same descriptor, which a split gave it.
	id string
	m  int
	// pending, for a member read that a split stopped inside it, is where its decoding
	// stands: the batch it was emitting and the first record the residual owns.
	pending *pendingBatch
	// from is the instance whose fetcher holds it: its Teardown drops what it still holds.
	from *reader
	// an names the restriction m is the first member of, when that member is decoded
	// ahead (decodeFirst).
	an *announced
	// timer drops it once it has waited aheadTTL unowned; arm counts its armings, so that a
	// timer that fires as it is taken drops nothing.
	timer *time.Timer
	arm   int
}

// handovers is the worker process's handover store, and the announcements (lookahead.go)
// that say what to fetch ahead; one lock guards both.
var handovers handoverStore

type handoverStore struct {
	sync.Mutex
	list      []*handed // in the order added, oldest first
	announced []*announced
}

// add puts h in the store; handovers is locked.
func (s *handoverStore) add(h *handed) { s.list = append(s.list, h) }

// remove takes h out of the store if it is there; handovers is locked.
func (s *handoverStore) remove(h *handed) bool {
	i := slices.Index(s.list, h)
	if i < 0 {
		return false
	}
	s.list = slices.Delete(s.list, i, i+1)
	h.arm++
	if h.timer != nil {
		h.timer.Stop()
	}
	return true
}

// takeFor takes out of the store, for each want of a's read of descriptor id, the first
// entry that serves it, and the entries a fetches ahead that no want takes.
func (s *handoverStore) takeFor(a *aheadFetches, id string, wants []aheadWant) (got, mine []*handed) {
	got = make([]*handed, len(wants))
	s.Lock()
	defer s.Unlock()
	for k, w := range wants {
		key := a.handKey(w.fetchKey)
		for _, h := range s.list {
			if h.serves(key, id, w) {
				s.remove(h)
				h.rd = nil
				got[k] = h
				break
			}
		}
	}
	return got, s.takeOwned(a)
}

// serves reports whether h can be taken for want w, named key, of a read of descriptor id.
func (h *handed) serves(key handKey, id string, w aheadWant) bool {
	if h.pending != nil {
		// A member read stopped inside it: only the residual that starts at its record.
		return w.i == 0 && h.id == id && h.m == w.m && h.pending.idx == w.first &&
			h.key.readers == key.readers && h.key.recycle == key.recycle && h.key.bucket == key.bucket && h.key.obj == key.obj
	}
	switch {
	case h.key != key:
		return false
	case h.rd != nil && (h.id != id || h.m != w.m):
		return false // another read's, for a member it may still read
	case h.mr != nil && !w.whole:
		return false // decoded from the member's first record, and w starts inside it
	}
	return true
}

// owned takes out of the store the entries a fetches ahead.
func (s *handoverStore) owned(a *aheadFetches) []*handed {
	s.Lock()
	defer s.Unlock()
	return s.takeOwned(a)
}

// takeOwned takes out of the store the entries a fetches ahead: a fetches ahead for no
// announcement any more. handovers is locked.
func (s *handoverStore) takeOwned(a *aheadFetches) []*handed {
	a.next = nil
	return s.takeWhere(func(h *handed) bool { return h.owner == a })
}

// takeWhere takes out of the store, in order, the entries keep reports; handovers is locked.
func (s *handoverStore) takeWhere(keep func(*handed) bool) []*handed {
	var out []*handed
	for _, h := range slices.Clone(s.list) {
		if keep(h) {
			s.remove(h)
			out = append(out, h)
		}
	}
	return out
}

// handKey is the store's name for a's reads of k.
func (a *aheadFetches) handKey(k fetchKey) handKey {
	return handKey{readers: a.key, recycle: a.fn.copiesRecords, fetchKey: k}
}

// handOver puts h in the store unowned: its fetcher stops issuing its parts (the instance
// that takes it issues the rest), and it is dropped after aheadTTL, or sooner when the
// store's bytes pass maxHandedFraction of the pool. A fetch that has fetched nothing yet and
// has no decoding is dropped at once: it is worth nothing to another instance.
func handOver(h *handed) {
	h.of.Freeze()
	h.owner = nil
	if h.mr == nil && h.of.Fetched() == 0 {
		h.of.Drop()
		return
	}
	limit := h.from.Cfg.WorkerBufferBytes / maxHandedFraction
	handovers.Lock()
	handovers.add(h)
	h.arm++
	arm := h.arm
	h.timer = time.AfterFunc(aheadTTL, func() { h.expire(arm) })
	var evict []*handed
	total := int64(0)
	for i := len(handovers.list) - 1; i >= 0; i-- {
		x := handovers.list[i]
		if x.owner != nil {
			continue
		}
		total += x.of.Fetched()
		if total > limit && x != h {
			evict = append(evict, x)
		}
	}
	for _, x := range evict {
		handovers.remove(x)
	}
	handovers.Unlock()
	for _, x := range evict {
		x.drop()
	}
}

// expire drops h if it is still in the store unowned since the arming arm.
func (h *handed) expire(arm int) {
	handovers.Lock()
	ok := h.arm == arm && handovers.remove(h)
	handovers.Unlock()
	if ok {
		h.drop()
	}
}

// drop frees what h holds: its decoding, which holds its fetch, or its fetch.
func (h *handed) drop() {
	if h.mr != nil {
		h.mr.finish(context.Background())
		return
	}
	h.of.Drop()
}

// dropFrom drops what the store holds of fn's fetcher: fn is being torn down.
func dropFrom(fn *reader) {
	handovers.Lock()
	out := handovers.takeWhere(func(h *handed) bool { return h.from == fn })
	handovers.Unlock()
	for _, h := range out {
		h.drop()
	}
}

// handOverRead puts h, a member's fetch and its decoding if it began at the member's first
// record, in the store unowned: the restriction being read no longer owns the member (a
// split took it, or the read ended before it).
func (rd *restrictionRead) handOverRead(h *handed) {
	h.rd = nil
	if h.mr != nil && h.pending == nil && h.m == rd.start.Member && (rd.start.Index > 0 || rd.hint.Known()) {
		h.mr.finish(context.Background()) // it began inside the member: no other read starts there
		return
	}
	handOver(h)
}

// pendingBatch is where a member's decoding stands when a split stops its read inside it:
// b, the batch being emitted, whose record at is idx, the residual's first.
type pendingBatch struct {
	b   *member.Batch
	at  int
	idx int64
}

// handOverInside puts mr, the read of member m stopped by a split at record idx (the
// record at of batch b), in the store: the residual that starts at idx emits from there,
// with neither a GET nor a decode again.
func (rd *restrictionRead) handOverInside(mr *memberRead, b *member.Batch, at int, idx int64) {
	k := rd.fn.ahead.handKey(fetchKey{bucket: rd.d.Bucket, obj: rd.d.Members[mr.m].object()})
	handOver(&handed{key: k, of: mr.of, mr: mr, from: rd.fn, id: rd.d.ID, m: mr.m, pending: &pendingBatch{b, at, idx}})
}

// fetchers are the worker's reader instances by lookahead key: each reports what all of
// them transferred (reportFetches).
var fetchers worker.Set[string, *reader]

func registerFetcher(fn *reader)   { fetchers.Add(fn.ahead.key, fn) }
func unregisterFetcher(fn *reader) { fetchers.Remove(fn.ahead.key, fn) }

// fetchersOf returns the worker's instances of lookahead key key.
func fetchersOf(key string) []*reader { return fetchers.Of(key) }

// takeReport returns what fn's fetcher transferred since the last call.
func (fn *reader) takeReport() fetch.Stats {
	fn.reportMu.Lock()
	defer fn.reportMu.Unlock()
	all := fn.fetcher.Stats()
	st := all.Since(fn.reported)
	fn.reported = all
	return st
}
