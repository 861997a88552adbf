package s3io

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// A fetcher keeps a reader's GETs in flight: real S3 answers each request after tens of
// milliseconds and sends ~90 MB/s per connection, so one request at a time reads small
// objects at a few MB/s and large ones at one connection's speed. The fetcher walks the
// restriction's members in order and cuts each into parts of Config.PartBytes, fetching as
// many parts (of one object, or of the objects ahead) at once as Config.MaxRequestsInFlight
// and the bytes budget allow. Parts are pinned ranged GETs, each resuming from its own next
// byte when its body breaks; an object's parts are handed to its decoder strictly in order.
//
// Parts are issued in member and offset order, so the bytes budget can never deadlock: the
// part the decoder of the current member waits for was always issued before any part held
// by a later member.
type fetcher struct {
	ctx    context.Context
	cancel context.CancelFunc
	pinned *pinnedGets
	cfg    *Config

	raw  *budget       // fetched bytes not yet consumed by a decoder
	reqs chan struct{} // one token per request in flight

	mu     sync.Mutex
	queue  []*objectFetch // objects with parts left to issue, in member order
	wake   chan struct{}
	wg     sync.WaitGroup
	issued int // parts issued (scheduler only)

	gets, resumes, rawBytes, cancelled, droppedBytes atomic.Int64
	maxInFlight                                      atomic.Int64
	inFlight                                         atomic.Int64
}

// Part buffers come in power-of-two size classes from minPartClass up, each with a free
// list shared by every reader of the worker: a restriction's read reuses the buffers an
// earlier one released instead of leaving them to the garbage collector, and parts of
// small objects do not take a full part's memory.
const minPartClass = 64 << 10

var partPools struct {
	sync.Mutex
	byClass map[int64]chan []byte
}

// partClass is the capacity of the buffer a part of n bytes is read into.
func partClass(n int64) int64 {
	if n <= 0 {
		return 0
	}
	c := int64(minPartClass)
	for c < n {
		c *= 2
	}
	return c
}

// freeList returns the free list of class c, creating it to hold up to limit/c buffers.
func freeList(c, limit int64) chan []byte {
	partPools.Lock()
	defer partPools.Unlock()
	if l, ok := partPools.byClass[c]; ok {
		return l
	}
	if partPools.byClass == nil {
		partPools.byClass = map[int64]chan []byte{}
	}
	l := make(chan []byte, max(limit/c, 1))
	partPools.byClass[c] = l
	return l
}

// getPart returns a buffer of n bytes, of capacity partClass(n).
func (f *fetcher) getPart(n int64) []byte {
	c := partClass(n)
	if c == 0 {
		return nil
	}
	select {
	case b := <-freeList(c, f.cfg.fetchBudget()):
		return b[:n]
	default:
		return allocPart(int(c))[:n]
	}
}

// putPart returns b to its class's free list, or frees it when the list is full.
func (f *fetcher) putPart(b []byte) {
	if cap(b) == 0 {
		return
	}
	select {
	case freeList(int64(cap(b)), f.cfg.fetchBudget()) <- b[:cap(b)]:
	default:
		freePart(b[:cap(b)])
	}
}

// objectFetch is one member's byte range being fetched in parts: [from, planEnd) is
// fetched ahead; bytes after planEnd (only a segment's last record can reach there) are read
// on demand.
type objectFetch struct {
	f       *fetcher
	member  Member
	from    int64
	planEnd int64
	ctx     context.Context
	cancel  context.CancelFunc
	// parts carries the parts in order as they are issued; it is closed after the last one,
	// or when the object is dropped.
	parts chan *part
	next  int64 // offset of the next part to issue (scheduler only)
	// taken is set, under fetcher.mu, when the scheduler or a drop claims the object: from
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

// newFetcher starts the scheduler of one restriction's reads. close must be called.
func newFetcher(ctx context.Context, client *s3.Client, cfg *Config, bucket string) *fetcher {
	ctx, cancel := context.WithCancel(ctx)
	f := &fetcher{
		ctx: ctx, cancel: cancel, pinned: newPinnedGets(client, cfg, bucket), cfg: cfg,
		raw:  newBudget(cfg.fetchBudget()),
		reqs: make(chan struct{}, cfg.MaxRequestsInFlight),
		wake: make(chan struct{}, 1),
	}
	f.wg.Add(1)
	go f.schedule()
	return f
}

// add queues member m's bytes [from, planEnd) for fetching, after every member added before.
func (f *fetcher) add(member Member, from, planEnd int64) *objectFetch {
	ctx, cancel := context.WithCancel(f.ctx)
	n := int64(1)
	if planEnd > from {
		n = (planEnd-from+f.cfg.PartBytes-1)/f.cfg.PartBytes + int64(len(rampParts))
	}
	of := &objectFetch{f: f, member: member, from: from, planEnd: planEnd, ctx: ctx, cancel: cancel,
		parts: make(chan *part, n), next: from}
	if f.cfg.VerifyChecksums && from == 0 && planEnd == member.Size && member.Size > f.cfg.PartBytes {
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

// schedule issues the queued objects' parts in order, each once the budget and a request
// slot allow it.
func (f *fetcher) schedule() {
	defer f.wg.Done()
	for {
		f.mu.Lock()
		var of *objectFetch
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
func (f *fetcher) issue(of *objectFetch) bool {
	defer close(of.parts)
	if of.streamed {
		return true
	}
	for first := true; first || of.next < of.planEnd; first = false {
		n := min(f.partSize(), max(of.planEnd-of.next, 0))
		// The budget counts the memory a part takes: its buffer's whole capacity.
		if !f.raw.acquire(of.ctx, partClass(n)) {
			return false
		}
		select {
		case f.reqs <- struct{}{}:
		case <-of.ctx.Done():
			f.raw.release(partClass(n))
			return false
		}
		p := &part{off: of.next, done: make(chan struct{}), buf: f.getPart(n)}
		of.next += n
		f.issued++
		of.parts <- p // never blocks: the channel holds every part of the object
		f.wg.Add(1)
		go f.fetch(of, p)
	}
	return true
}

// rampParts are the sizes of a restriction's first parts. The decoder waits for the first
// part whole, and on prism restrictions are read one after the other: a small first part
// shortens the wait that begins every restriction from a request's latency plus a full
// part's transfer to little more than the latency.
var rampParts = [...]int64{256 << 10, 1 << 20}

func (f *fetcher) partSize() int64 {
	if f.issued < len(rampParts) {
		return min(rampParts[f.issued], f.cfg.PartBytes)
	}
	return f.cfg.PartBytes
}

// fetch reads one part into its buffer.
func (f *fetcher) fetch(of *objectFetch, p *part) {
	defer f.wg.Done()
	in := f.inFlight.Add(1)
	for {
		m := f.maxInFlight.Load()
		if in <= m || f.maxInFlight.CompareAndSwap(m, in) {
			break
		}
	}
	r := f.pinned.open(of.ctx, of.member, p.off, p.off+int64(len(p.buf)))
	p.err = r.readFull(p.buf)
	r.Close()
	f.inFlight.Add(-1)
	<-f.reqs
	f.account(r)
	if p.err != nil && of.ctx.Err() != nil {
		f.cancelled.Add(1)
	}
	close(p.done)
}

// account adds what r transferred to the fetcher's counts.
func (f *fetcher) account(r *pinnedReader) {
	f.gets.Add(int64(r.gets))
	f.resumes.Add(int64(r.resumes))
	f.rawBytes.Add(r.raw)
}

// releasePart returns p's bytes to the budget and its buffer to the pool. A part is
// released once, by the goroutine that reads its object or by a drop, never both.
func (f *fetcher) releasePart(p *part) {
	f.raw.release(int64(cap(p.buf)))
	f.putPart(p.buf)
	p.buf = nil
}

// drop cancels of's requests and frees every part not yet consumed: the object failed, was
// read to its end, or was split away. It waits for the parts in flight to end.
func (of *objectFetch) drop() {
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
			f.droppedBytes.Add(int64(len(p.buf)))
		}
		f.releasePart(p)
	}
}

// close ends every request and waits for the fetcher's goroutines.
func (f *fetcher) close() {
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

// stream returns the bytes of of in order, from of.from to the object's end.
func (of *objectFetch) stream() *objectStream { return &objectStream{of: of, pos: of.from} }

// objectStream is an io.Reader over one object's fetched parts. It is read by one goroutine.
type objectStream struct {
	of     *objectFetch
	cur    *part
	curOff int
	pos    int64 // object offset of the next byte Read returns
	done   bool  // the planned parts are all consumed
	tail   *pinnedReader
}

func (s *objectStream) Read(p []byte) (int, error) {
	for {
		if s.cur != nil {
			if s.curOff < len(s.cur.buf) {
				n := copy(p, s.cur.buf[s.curOff:])
				s.curOff += n
				s.pos += int64(n)
				return n, nil
			}
			s.of.f.releasePart(s.cur)
			s.cur = nil
		}
		if s.done {
			return s.readTail(p)
		}
		var pt *part
		var ok bool
		select {
		case pt, ok = <-s.of.parts:
		case <-s.of.ctx.Done():
			return 0, &sourceReadError{offset: s.pos, attempts: 1, err: s.of.ctx.Err()}
		}
		if !ok {
			s.done = true
			continue
		}
		<-pt.done
		if pt.err != nil {
			s.of.f.releasePart(pt)
			return 0, pt.err
		}
		s.cur, s.curOff = pt, 0
	}
}

// readTail streams what the planned parts do not cover: a streamed object whole, or past a
// segment's planned range in segmentWindow requests (only a segment's last record can
// straddle its planned end).
func (s *objectStream) readTail(p []byte) (int, error) {
	if s.tail == nil {
		of := s.of
		if !of.streamed && (s.pos >= of.member.Size || of.planEnd >= of.member.Size) {
			return 0, io.EOF
		}
		if of.streamed {
			s.tail = of.f.pinned.open(of.ctx, of.member, s.pos, of.member.Size)
		} else {
			s.tail = of.f.pinned.openWindowed(of.ctx, of.member, s.pos, of.member.Size, min(s.pos+segmentWindow, of.member.Size), segmentWindow)
		}
	}
	n, err := s.tail.Read(p)
	s.pos += int64(n)
	return n, err
}

// consumed returns how many bytes Read has returned.
func (s *objectStream) consumed() int64 { return s.pos - s.of.from }

// close releases what the stream holds and drops the object's remaining parts.
func (s *objectStream) close() {
	if s.cur != nil {
		s.of.f.releasePart(s.cur)
		s.cur = nil
	}
	s.of.drop()
	if s.tail != nil {
		s.tail.Close()
		s.of.f.account(s.tail)
		s.tail = nil
	}
}

// budget bounds a reader's buffered bytes. An acquisition larger than the whole budget is
// let through when nothing else is held, so that one oversized part cannot stall the read.
type budget struct {
	limit int64
	mu    sync.Mutex
	used  int64
	peak  int64
	freed chan struct{}
}

func newBudget(limit int64) *budget { return &budget{limit: limit, freed: make(chan struct{}, 1)} }

// acquire waits until n bytes fit, and reports false if ctx ends first.
func (b *budget) acquire(ctx context.Context, n int64) bool {
	for {
		b.mu.Lock()
		if b.used+n <= b.limit || b.used == 0 {
			b.used += n
			b.peak = max(b.peak, b.used)
			b.mu.Unlock()
			return true
		}
		b.mu.Unlock()
		select {
		case <-b.freed:
		case <-ctx.Done():
			return false
		}
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	if b.used < 0 {
		b.mu.Unlock()
		panic(errors.New("s3io: buffer budget released more than it acquired"))
	}
	b.mu.Unlock()
	select {
	case b.freed <- struct{}{}:
	default:
	}
}

// inUse returns the bytes held now and at most so far.
func (b *budget) inUse() (used, peak int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.peak
}
