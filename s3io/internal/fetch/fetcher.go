package fetch

import (
	"context"
	"sync"
	"sync/atomic"
)

// A Fetcher keeps a reader's GETs in flight: real S3 answers each request after tens of
// milliseconds and sends ~90 MB/s per connection, so one request at a time reads small
// objects at a few MB/s and large ones at one connection's speed. The fetcher walks the
// objects it is given in order and cuts each into parts of Settings.PartBytes, fetching as
// many parts (of one object, or of the objects ahead) at once as
// Settings.MaxRequestsInFlight and its Pool allow. Parts are pinned ranged GETs, each
// resuming from its own next byte when its body breaks; an object's parts are handed to
// its reader strictly in order.
//
// Parts are issued in object and offset order, so the pool can never deadlock: the part
// the reader of the current object waits for was always issued before any part held by a
// later object.
type Fetcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	gets   *Gets
	pool   *Pool         // bounds the fetched bytes not yet consumed by a reader
	reqs   chan struct{} // one token per request in flight

	mu     sync.Mutex
	queue  []*ObjectFetch // objects with parts left to issue, in order
	wake   chan struct{}
	wg     sync.WaitGroup
	issued int // parts issued (scheduler only)

	gotten, resumes, received, cancelled, dropped, rangeIgnored atomic.Int64
}

// ObjectFetch is one object's byte range being fetched in parts: [from, planEnd) is fetched
// ahead; bytes after planEnd are read on demand.
type ObjectFetch struct {
	f       *Fetcher
	obj     Object
	from    int64
	planEnd int64
	tail    int64 // the request size past planEnd
	ctx     context.Context
	cancel  context.CancelFunc
	// parts carries the parts in order as they are issued; it is closed after the last one,
	// or when the object is dropped.
	parts chan *part
	next  int64 // offset of the next part to issue (scheduler only)
	// taken is set, under Fetcher.mu, when the scheduler or a drop claims the object: from
	// then on that side alone closes parts.
	taken bool
	// streamed objects are not fetched ahead: their reader streams them with one GET.
	streamed bool
}

// part is one ranged GET of an object, buffered whole.
type part struct {
	off  int64
	buf  []byte
	done chan struct{}
	err  error
}

// NewFetcher starts the scheduler of one reader's GETs, made with gets, their parts held
// in pool. Close must be called.
func NewFetcher(ctx context.Context, gets *Gets, pool *Pool) *Fetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &Fetcher{
		ctx: ctx, cancel: cancel, gets: gets, pool: pool,
		reqs: make(chan struct{}, gets.set.MaxRequestsInFlight),
		wake: make(chan struct{}, 1),
	}
	f.wg.Add(1)
	go f.schedule()
	return f
}

// Range is what to fetch of an object: [From, PlanEnd) in parts, fetched ahead; what the
// reader asks for past PlanEnd, up to the object's end, in requests of TailWindow bytes
// (0: one request to the end).
type Range struct {
	From, PlanEnd int64
	TailWindow    int64
}

// Add queues r of o for fetching, after every object added before.
func (f *Fetcher) Add(o Object, r Range) *ObjectFetch {
	ctx, cancel := context.WithCancel(f.ctx)
	partBytes := f.gets.set.PartBytes
	n := int64(1)
	if r.PlanEnd > r.From {
		n = (r.PlanEnd-r.From+partBytes-1)/partBytes + int64(len(rampParts))
	}
	of := &ObjectFetch{f: f, obj: o, from: r.From, planEnd: r.PlanEnd, tail: r.TailWindow, ctx: ctx, cancel: cancel,
		parts: make(chan *part, n), next: r.From}
	if f.gets.set.VerifyChecksums && r.From == 0 && r.PlanEnd == o.Size && o.Size > partBytes {
		// S3 checksums cover whole objects, so a checksummed read cannot be cut into parts.
		of.streamed, of.planEnd = true, 0
	}
	f.mu.Lock()
	f.queue = append(f.queue, of)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	return of
}

// schedule issues the queued objects' parts in order, each once the pool and a request
// slot allow it.
func (f *Fetcher) schedule() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		var of *ObjectFetch
		if len(f.queue) > 0 {
			of = f.queue[0]
			f.queue = f.queue[1:]
			of.taken = true
		}
		f.mu.Unlock()
		if of == nil {
			select {
			case <-f.wake:
				continue
			case <-f.ctx.Done():
				return
			}
		}
		if !f.issue(of) && f.ctx.Err() != nil {
			return
		}
	}
}

// issue starts every part of of, in order; it reports false if of was dropped first.
func (f *Fetcher) issue(of *ObjectFetch) bool {
	defer close(of.parts)
	if of.streamed {
		return true
	}
	for first := true; first || of.next < of.planEnd; first = false {
		n := min(f.partSize(), max(of.planEnd-of.next, 0))
		buf, ok := f.pool.get(of.ctx, n)
		if !ok {
			return false
		}
		select {
		case f.reqs <- struct{}{}:
		case <-of.ctx.Done():
			f.pool.put(buf)
			return false
		}
		p := &part{off: of.next, done: make(chan struct{}), buf: buf}
		of.next += n
		f.issued++
		of.parts <- p // never blocks: the channel holds every part of the object
		f.wg.Add(1)
		go f.fetch(of, p)
	}
	return true
}

// rampParts are the sizes of a reader's first parts. The decoder waits for the first part
// whole, and on prism restrictions are read one after the other: a small first part
// shortens the wait that begins every restriction from a request's latency plus a full
// part's transfer to little more than the latency.
var rampParts = [...]int64{256 << 10, 1 << 20}

func (f *Fetcher) partSize() int64 {
	if f.issued < len(rampParts) {
		return min(rampParts[f.issued], f.gets.set.PartBytes)
	}
	return f.gets.set.PartBytes
}

// fetch reads one part into its buffer.
func (f *Fetcher) fetch(of *ObjectFetch, p *part) {
	defer f.wg.Done()
	r := f.gets.Open(of.ctx, of.obj, p.off, p.off+int64(len(p.buf)))
	p.err = r.readFull(p.buf)
	r.Close()
	<-f.reqs
	f.account(r)
	if p.err != nil && of.ctx.Err() != nil {
		f.cancelled.Add(1)
	}
	close(p.done)
}

// account adds what r transferred to the fetcher's counts.
func (f *Fetcher) account(r *PinnedReader) {
	f.gotten.Add(int64(r.gets))
	f.resumes.Add(int64(r.resumes))
	f.received.Add(r.received)
	f.rangeIgnored.Add(int64(r.rangeIgnored))
}

// Stats returns what the fetcher's requests transferred so far.
func (f *Fetcher) Stats() Stats {
	return Stats{Gets: f.gotten.Load(), Resumes: f.resumes.Load(), Received: f.received.Load(),
		Cancelled: f.cancelled.Load(), Dropped: f.dropped.Load(), RangeIgnored: f.rangeIgnored.Load()}
}

// releasePart returns p's buffer to the pool. A part is released once, by the goroutine
// that reads its object or by a drop, never both.
func (f *Fetcher) releasePart(p *part) {
	f.pool.put(p.buf)
	p.buf = nil
}

// Cancel ends of's requests; its reader then fails. It does not wait for them to end.
func (of *ObjectFetch) Cancel() { of.cancel() }

// Drop cancels of's requests and frees every part not yet consumed: the object failed, was
// read to its end, or was split away. It waits for the parts in flight to end.
func (of *ObjectFetch) Drop() {
	of.cancel()
	f := of.f
	f.mu.Lock()
	if !of.taken {
		// Never reached by the scheduler: take it out of the queue unissued.
		of.taken = true
		for i, q := range f.queue {
			if q == of {
				f.queue = append(f.queue[:i:i], f.queue[i+1:]...)
				break
			}
		}
		close(of.parts)
	}
	f.mu.Unlock()
	for p := range of.parts {
		<-p.done
		if p.err == nil {
			f.dropped.Add(int64(len(p.buf)))
		}
		f.releasePart(p)
	}
}

// Close ends every request and waits for the fetcher's goroutines.
func (f *Fetcher) Close() {
	f.cancel()
	f.mu.Lock()
	queued := f.queue
	f.queue = nil
	f.mu.Unlock()
	for _, of := range queued {
		of.cancel()
	}
	f.wg.Wait()
}

// ReadRange reads the bytes [from, to) of of's object with one pinned GET outside the
// part plan, counted with the fetcher's requests and cancelled with the object: a zip's
// central directory, read from the tail before the entries stream from the front.
func (of *ObjectFetch) ReadRange(from, to int64) ([]byte, error) {
	r := of.f.gets.Open(of.ctx, of.obj, from, to)
	defer of.f.account(r)
	defer r.Close()
	buf := make([]byte, to-from)
	if err := r.readFull(buf); err != nil {
		return nil, err
	}
	return buf, nil
}
