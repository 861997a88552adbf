package fetch

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// The pool admits what fits, makes the rest wait, and lets an oversized buffer through only
// when nothing else is held. Sizes count at their class: 64 KiB and up, in powers of two.
func TestPoolBound(t *testing.T) {
	const unit = MinPartClass
	var peak atomic.Int64
	p := NewPool(4 * unit)
	p.observe = func(held int64) { peak.Store(max(peak.Load(), held)) }
	defer p.Close()
	ctx := context.Background()
	a, ok1 := p.get(ctx, 2*unit)
	b, ok2 := p.get(ctx, 2*unit-10) // counted at its class, 2 units
	if !ok1 || !ok2 || len(a) != 2*unit || len(b) != 2*unit-10 || cap(b) != 2*unit {
		t.Fatal("buffers within the limit must not wait, and come in their class's capacity")
	}
	got := make(chan []byte)
	go func() { c, _ := p.get(ctx, 1); got <- c }()
	select {
	case <-got:
		t.Fatal("handed out beyond the limit")
	case <-time.After(50 * time.Millisecond):
	}
	p.put(a)
	c := <-got
	// The pool is at its limit with a's buffer idle: mapping a new one would unmap it, so
	// it is lent instead, a class larger.
	if cap(c) != 2*unit || &c[:1][0] != &a[0] {
		t.Fatalf("a one-byte part got a new buffer of %d bytes, want the idle one of %d lent", cap(c), 2*unit)
	}
	p.put(b)
	p.put(c)
	big, ok := p.get(ctx, 16*unit)
	if !ok {
		t.Fatal("an oversized buffer must pass when nothing is held")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, ok := p.get(cctx, 1); ok {
		t.Fatal("handed out with a cancelled context while the pool was full")
	}
	if used, most := held(p), peak.Load(); used != 16*unit || most != 16*unit {
		t.Errorf("held %d peak %d, want %d %d", used, most, 16*unit, 16*unit)
	}
	p.put(big)
}

// A buffer taken back is what the next part of its class gets, and what the pool keeps
// idle never takes it past its limit.
func TestPoolReuse(t *testing.T) {
	const unit = MinPartClass
	p := NewPool(4 * unit)
	defer p.Close()
	ctx := context.Background()
	a, _ := p.get(ctx, 2*unit)
	a[0] = 42
	p.put(a)
	b, _ := p.get(ctx, 2*unit-1)
	if &b[0] != &a[0] || b[0] != 42 {
		t.Error("the part after a release did not reuse the released buffer")
	}
	p.put(b)
	// Buffers of one class evict the idle one of another, more than maxLendOther times
	// larger, which is not lent to them.
	p.mu.Lock()
	p.room.limit = 8 * unit
	p.mu.Unlock()
	big, _ := p.get(ctx, 8*unit)
	p.put(big)
	var small [][]byte
	for range 8 {
		s, _ := p.get(ctx, unit)
		if cap(s) != unit {
			t.Fatalf("a part of one unit got %d bytes", cap(s))
		}
		small = append(small, s)
	}
	p.mu.Lock()
	if p.room.used+p.idle > p.room.limit {
		t.Errorf("held %d + idle %d bytes exceed the limit %d", p.room.used, p.idle, p.room.limit)
	}
	p.mu.Unlock()
	for _, s := range small {
		p.put(s)
	}
}

// Reserve lends the limit only while keep bytes stay free for parts; a Reserve refused
// makes the next parts leave its room, which a release of parts then frees for it.
func TestPoolReserve(t *testing.T) {
	const mib = 1 << 20
	p := NewPool(8 * mib)
	defer p.Close()
	if !p.Reserve(4*mib, 2*mib) {
		t.Fatal("Reserve(4 MiB) refused with 8 MiB free")
	}
	part, ok := p.get(context.Background(), 2*mib)
	if !ok {
		t.Fatal("a part beside the reservation was refused")
	}
	if p.Reserve(1*mib, 2*mib) { // 4 + 2 + 1 + 2 > 8
		t.Fatal("Reserve took the room kept for parts")
	}
	// The refused 1 MiB is now demanded: a 2 MiB part would leave less than it.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if b, ok := p.get(ctx, 2*mib); ok {
		p.put(b)
		t.Fatal("a part took the room a refused Reserve asked for")
	}
	p.put(part)
	if !p.Reserve(1*mib, 2*mib) {
		t.Fatal("Reserve refused after a part was released")
	}
	if b, ok := p.get(context.Background(), 2*mib); !ok { // the demand is met: parts fit again
		t.Fatal("a part was refused after the demand was met")
	} else {
		p.put(b)
	}
	p.Release(5 * mib)
	if p.room.used != 0 {
		t.Fatalf("held %d after every release, want 0", p.room.used)
	}
	defer func() {
		if recover() == nil {
			t.Error("releasing more than was reserved did not panic")
		}
	}()
	p.Release(1)
}

// At its limit, the pool lends a ramp part an idle buffer of a larger class (up to
// maxLendFactor times its own) instead of unmapping it to map a small one; the lent buffer
// counts at its capacity, so what is mapped stays within the limit, and it goes back idle
// in its own class. A part that is not a ramp part evicts the idle buffer instead.
func TestPoolLendsRampParts(t *testing.T) {
	const unit = MinPartClass
	ctx := context.Background()
	p, full := withIdle(t, 8*unit, 8*unit)
	small, _ := p.getRamp(ctx, unit)
	if cap(small) != 8*unit || &small[0] != &full[0] || len(small) != unit {
		t.Fatalf("a ramp part got a buffer of %d bytes (len %d), want the idle one of %d lent", cap(small), len(small), 8*unit)
	}
	p.mu.Lock()
	if p.room.used != 8*unit || p.idle != 0 {
		t.Errorf("held %d idle %d while lent, want %d 0", p.room.used, p.idle, 8*unit)
	}
	p.mu.Unlock()
	p.put(small)
	again, _ := p.get(ctx, 8*unit)
	if &again[0] != &full[0] {
		t.Error("the lent buffer did not go back to its own class")
	}
	p.put(again)
	// Not a ramp part: the idle buffer is evicted for a buffer of the part's class.
	other, _ := p.get(ctx, unit)
	if cap(other) != unit {
		t.Errorf("a part that is not a ramp part got %d bytes, want its class's %d", cap(other), unit)
	}
	p.put(other)
	// Too much larger: a ramp part of the smallest class is not lent a huge buffer.
	q, _ := withIdle(t, 2*maxLendFactor*unit, 2*maxLendFactor*unit)
	if r, _ := q.getRamp(ctx, unit); cap(r) != unit {
		t.Errorf("a ramp part was lent %d bytes, more than %d times its class", cap(r), maxLendFactor)
	} else {
		q.put(r)
	}
	for _, pl := range []*Pool{p, q} {
		pl.mu.Lock()
		if pl.room.used != 0 || pl.room.used+pl.idle > pl.room.limit {
			t.Errorf("held %d idle %d limit %d after every buffer came back", pl.room.used, pl.idle, pl.room.limit)
		}
		pl.mu.Unlock()
	}
}

// Any part may be lent an idle buffer a few classes larger (parts change class as the
// budget moves), never one much larger.
func TestPoolLendsNearClasses(t *testing.T) {
	const unit = MinPartClass
	ctx := context.Background()
	p, _ := withIdle(t, 4*unit, 4*unit)
	if c, _ := p.get(ctx, unit); cap(c) != 4*unit {
		t.Errorf("a part of one unit got %d bytes at the limit, want the idle buffer of %d lent", cap(c), 4*unit)
	} else {
		p.put(c)
	}
	q, _ := withIdle(t, 8*unit, 8*unit)
	if c, _ := q.get(ctx, unit); cap(c) != unit {
		t.Errorf("a part of one unit was lent %d bytes, more than %d times its class", cap(c), maxLendOther)
	} else {
		q.put(c)
	}
}

// withIdle returns a pool of limit bytes holding one idle buffer of size bytes, and that
// buffer (its memory: the pool may hand it out again).
func withIdle(t *testing.T, limit, size int64) (*Pool, []byte) {
	t.Helper()
	p := NewPool(limit)
	t.Cleanup(p.Close)
	b, _ := p.get(context.Background(), size)
	p.put(b)
	return p, b
}
