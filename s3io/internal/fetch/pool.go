package fetch

import (
	"context"
	"errors"
	"sync"

	"github.com/spate-io/beam-s3/s3io/internal/worker"
)

// MinPartClass is the smallest buffer a part is read into: parts come in power-of-two size
// classes from here up, so that the part of a small object does not take a full part's
// memory, and a buffer released by one part can serve any later part of its class.
const MinPartClass = 64 << 10

// Pool holds the part buffers of a worker process's readers (WorkerPool: one per
// WorkerBufferBytes), as transfermanager's pool holds its slices:
// it is both the bound on their memory and their free list. Every buffer counts at its
// capacity, handed out or idle, so a reader's parts never take more than the limit, and a
// restriction's read reuses the buffers an earlier one released instead of leaving them to
// the garbage collector (they live outside the Go heap where the platform allows). One
// buffer larger than the whole limit is let through when nothing else is handed out, so
// that one oversized part cannot stall the read.
type Pool struct {
	mu sync.Mutex
	// room counts the capacity of the buffers handed out, and the bytes reserved, against
	// the limit, and wakes the parts waiting for a buffer.
	room room
	idle int64              // capacity of the buffers in free
	free map[int64][][]byte // idle buffers by capacity

	// observe, when set (by tests), is told the bytes held after every change.
	observe func(held int64)
}

// NewPool returns a pool of at most limit bytes of buffers. Close frees what it keeps.
func NewPool(limit int64) *Pool {
	return &Pool{room: newRoom(limit), free: map[int64][][]byte{}}
}

// partClass is the capacity of the buffer a part of n bytes is read into.
func partClass(n int64) int64 {
	if n <= 0 {
		return 0
	}
	c := int64(MinPartClass)
	for c < n {
		c *= 2
	}
	return c
}

// get waits until a buffer for n bytes fits the limit and returns it, n bytes long; it
// reports false if ctx ends first.
func (p *Pool) get(ctx context.Context, n int64) ([]byte, bool) { return p.acquire(ctx, n, false) }

// getRamp is get for one of a large object's first, small parts (rampParts), which may be
// lent an idle buffer much larger than its class (see take).
func (p *Pool) getRamp(ctx context.Context, n int64) ([]byte, bool) { return p.acquire(ctx, n, true) }

func (p *Pool) acquire(ctx context.Context, n int64, lend bool) ([]byte, bool) {
	c := partClass(n)
	for {
		p.mu.Lock()
		if p.room.fits(c) {
			b := p.take(c, lend)
			p.mu.Unlock()
			if b == nil && c > 0 {
				b = allocPart(int(c))
			}
			return b[:n], true
		}
		freed := p.room.wait()
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// take counts a buffer of capacity c as held and returns an idle one of that class, or a
// larger idle one lent (much larger if lend), or nil after making room for a new one by
// freeing idle buffers of other classes. p.mu is held.
func (p *Pool) take(c int64, lend bool) []byte {
	if l := p.free[c]; len(l) > 0 {
		return p.takeIdle(c)
	}
	if c > 0 && p.room.used+p.idle+c > p.room.limit {
		// Mapping a buffer would free an idle one first. A reader's first parts after an
		// idle spell are small (rampParts) while the idle buffers are full-size: freeing a
		// full-size buffer for a small one, then mapping it again for the object's next,
		// full part, faults every page of both in anew (~120 mappings and ~470 MB of page
		// faults per GiB read when each object started that way). An idle buffer up to
		// maxLendFactor times larger serves instead, counted at its capacity as it was
		// while idle, so the pool maps no more than before. The same holds when parts
		// change class as the budget moves (4 and 8 MiB). Only ramp parts are lent buffers
		// much larger than they need: small objects' parts would keep taking full-size
		// buffers, and fewer of them would fit.
		factor := int64(maxLendOther)
		if lend {
			factor = maxLendFactor
		}
		best := int64(0)
		for class, l := range p.free {
			if class > c && class <= c*factor && len(l) > 0 && (best == 0 || class < best) {
				best = class
			}
		}
		if best > 0 {
			return p.takeIdle(best)
		}
	}
	p.room.take(c)
	p.notify()
	p.trimIdle()
	return nil
}

// maxLendFactor bounds how much larger than its class an idle buffer lent to a ramp part
// may be: enough for the first, 256 KiB part to take a full 8 MiB part's buffer; any other
// part may be lent one up to maxLendOther times larger.
const (
	maxLendFactor = 32
	maxLendOther  = 4
)

// takeIdle hands out an idle buffer of class c, counted as held. p.mu is held.
func (p *Pool) takeIdle(c int64) []byte {
	l := p.free[c]
	b := l[len(l)-1]
	p.free[c] = l[:len(l)-1]
	p.idle -= c
	p.room.take(c)
	p.notify()
	return b
}

// trimIdle frees idle buffers until what is held and idle fits the limit. p.mu is held.
func (p *Pool) trimIdle() {
	for class, l := range p.free {
		for len(l) > 0 && p.room.used+p.idle > p.room.limit {
			freePart(l[len(l)-1])
			l = l[:len(l)-1]
			p.idle -= class
		}
		p.free[class] = l
	}
}

// put takes back a buffer get returned.
func (p *Pool) put(b []byte) {
	c := int64(cap(b))
	if c == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.room.give(c) {
		panic(errors.New("s3io: part pool took back more than it handed out"))
	}
	p.notify()
	if p.room.used+p.idle+c <= p.room.limit {
		p.free[c] = append(p.free[c], b[:c])
		p.idle += c
	} else {
		freePart(b[:c]) // an oversized buffer, let through alone
	}
}

func (p *Pool) notify() {
	if p.observe != nil {
		p.observe(p.room.used)
	}
}

// Close frees the idle buffers; the pool's reads must have released every buffer before.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c, l := range p.free {
		for _, b := range l {
			freePart(b)
		}
		delete(p.free, c)
	}
	p.idle = 0
}

// Reserve takes n bytes of the limit for something other than a part (decoded records a
// slow decoder holds ahead), if they are free and leave keep bytes free for parts: the
// reader of the current object must always find room for its next part, whatever later
// objects hold (keep must exceed a part and n). It never waits; when the room is not free,
// the next parts leave n bytes for the next Reserve instead of taking them.
func (p *Pool) Reserve(n, keep int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.room.refuses(n, keep) {
		return false
	}
	p.room.reserve(n)
	p.notify()
	p.trimIdle()
	return true
}

// Release gives back n bytes Reserve took.
func (p *Pool) Release(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.room.give(n) {
		panic(errors.New("s3io: part pool released more than was reserved"))
	}
	p.notify()
}

// workerPools are the pools readers in this process share, by limit: a worker's concurrent
// readers (Beam runs a DoFn instance per bundle thread) fetch within one memory cap.
var workerPools worker.Shared[int64, *Pool]

// WorkerPool returns the process's pool of limit bytes, made on first use, and the function
// that gives it back: the last reader to give it back frees its idle buffers.
func WorkerPool(limit int64) (*Pool, func()) {
	return workerPools.Acquire(limit, func() *Pool { return NewPool(limit) }, (*Pool).Close)
}
