package fetch

import (
	"context"
	"errors"
	"sync"
)

// A Budget is one reader's share of the worker's part Pool: the bytes its fetched parts,
// and the decoded records a slow decoder holds on credit, may take. A part takes its room
// when its answer arrives, not when it is requested: a request waits tens of milliseconds
// for its first byte, and a buffer held through that wait is memory that holds nothing, so
// parts are requested while they are promised room (up to as many bytes again as the
// limit) and admitted into it, in request order, once their bytes are about to flow.
//
// Its limit follows the bandwidth-delay product instead of a fixed guess: it grows while the reader waits for
// parts that the budget kept from being requested (the decoder waits on the network), and
// shrinks while every part is ready before the reader wants it (the decoder waits on the
// emitter, and the bytes held ahead are memory for nothing). It stays between the bounds
// NewBudget is given, and the pool bounds the sum of every reader's.
type Budget struct {
	pool *Pool

	mu sync.Mutex
	// room counts the part classes admitted plus the bytes reserved against the limit, and
	// wakes the scheduler and the part whose turn it is to be admitted, which may both be
	// waiting for room.
	room     room
	promised int64 // part classes requested and not yet admitted
	min, max int64
	blocked  bool // the scheduler or a part waited for room since the limit last grew
	ready    int  // parts in a row that were ready when the reader took them

	// observe, when set (by tests), is told the bytes held and the limit after every change.
	observe func(held, limit int64)
}

// Budget limits move by these steps: up by a quarter when waiting shows the network needs
// more bytes in flight, down by an eighth after readyToShrink parts in a row were ready, so
// that a read settles just above what its bandwidth-delay product needs.
const (
	growDiv       = 4
	shrinkDiv     = 8
	readyToShrink = 64
)

// NewBudget returns a share of pool starting at initial bytes, moving between lo and hi.
func NewBudget(pool *Pool, initial, lo, hi int64) *Budget {
	lo = min(lo, hi)
	return &Budget{pool: pool, room: newRoom(min(max(initial, lo), hi)), min: lo, max: hi}
}

// Limit returns the bytes the budget currently admits.
func (b *Budget) Limit() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.room.limit
}

// Held returns the bytes admitted or reserved.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.room.used
}

func (b *Budget) notify() {
	if b.observe != nil {
		b.observe(b.room.used, b.room.limit)
	}
}

// promise waits until a part of class c may be requested: what is admitted and promised,
// with c, fits the limit and as many bytes again for parts waiting for their answer (or
// nothing is admitted or promised, so that one part larger than the limit cannot stall the
// read); it counts c promised and reports false if ctx ends first.
func (b *Budget) promise(ctx context.Context, c int64) bool {
	for {
		b.mu.Lock()
		r := &b.room
		if r.used+b.promised+c+r.demand <= 2*r.limit || r.used+b.promised == 0 {
			b.promised += c
			b.mu.Unlock()
			return true
		}
		b.blocked = true
		freed := r.wait()
		b.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// admit moves c promised bytes to held if they fit the limit (or nothing is held), and
// otherwise returns the channel that is closed when room is next freed.
func (b *Budget) admit(c int64) (bool, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.room.fits(c) {
		b.promised -= c
		b.room.take(c)
		b.notify()
		return true, nil
	}
	b.blocked = true
	return false, b.room.wait()
}

// count adds promised and held (either may be negative) to what the budget counts, without
// waiting for room: a part given up before its answer, one whose object moves between
// budgets (Freeze, Adopt), one admitted into a budget that did not issue it, or one released.
// Room freed wakes whoever waits for it.
func (b *Budget) count(promised, held int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.promised += promised
	ok := b.promised >= 0
	if held < 0 {
		ok = b.room.give(-held) && ok // wakes the waiters
	} else {
		b.room.take(held)
	}
	if !ok {
		panic(errors.New("s3io: read budget took back more than it handed out"))
	}
	b.notify()
	if promised < 0 {
		// A promise given back is room too: the scheduler waits on what is promised.
		b.room.wake()
	}
}

// unpromise gives back c promised bytes of a part that will not be admitted.
func (b *Budget) unpromise(c int64) { b.count(-c, 0) }

// give returns c bytes admitted or reserved.
func (b *Budget) give(c int64) { b.count(0, -c) }

// partRead is told, for each part a reader takes, whether it had to wait for it.
func (b *Budget) partRead(waited bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !waited {
		b.ready++
		if b.ready >= readyToShrink {
			b.ready = 0
			b.room.limit = max(b.min, b.room.limit-b.room.limit/shrinkDiv)
			b.notify()
		}
		return
	}
	b.ready = 0
	if b.blocked && b.room.limit < b.max {
		// The part was late and the scheduler had been held back by the limit: more bytes
		// in flight would have had it here sooner.
		b.blocked = false
		b.grow()
	}
}

// grow raises the limit by a quarter, up to the budget's bound. b.mu is held.
func (b *Budget) grow() {
	b.room.limit = min(b.max, b.room.limit+max(b.room.limit/growDiv, 1))
	b.notify()
	b.room.wake()
}

// Reserve takes n bytes of the budget, and of the pool, for something other than a part
// (decoded records a slow decoder holds ahead), if they are free and leave keep bytes free
// for parts in both: the reader of the current object must always find room for its next
// part, whatever later objects hold (keep must exceed a part and n). It never waits; when
// the room is not free, the next parts leave n bytes for the next Reserve instead of taking
// them, and the limit grows as for a late part: a decoder that wants to hold more ahead is
// one core's work waiting on memory, as a late part is the network's.
func (b *Budget) Reserve(n, keep int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.room.refuses(n, keep) {
		if b.room.limit < b.max {
			b.grow()
		}
		return false
	}
	if !b.pool.Reserve(n, keep) {
		return false
	}
	b.room.reserve(n)
	b.notify()
	return true
}

// Release gives back n bytes Reserve took.
func (b *Budget) Release(n int64) {
	b.pool.Release(n)
	b.give(n)
}
