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
	const unit = minPartClass
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
	// The pool is at its limit with a's buffer idle: mapping a new one would free it, so
	// the idle buffer, a larger class, is lent instead.
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
	const unit = minPartClass
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
	// Small parts, far smaller than the idle buffer (more than maxLendFactor classes), are
	// not lent it: they evict it, so that it does not take the room of many of them.
	p.mu.Lock()
	p.limit = 2 * maxLendFactor * unit
	p.mu.Unlock()
	huge, _ := p.get(ctx, 2*maxLendFactor*unit)
	p.put(huge)
	var small [][]byte
	for range 4 {
		s, _ := p.get(ctx, unit)
		if cap(s) != unit {
			t.Fatalf("a part of one class got a buffer of %d bytes", cap(s))
		}
		small = append(small, s)
	}
	p.mu.Lock()
	if p.held+p.idle > p.limit {
		t.Errorf("held %d + idle %d bytes exceed the limit %d", p.held, p.idle, p.limit)
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
	if p.held != 0 {
		t.Fatalf("held %d after every release, want 0", p.held)
	}
	defer func() {
		if recover() == nil {
			t.Error("releasing more than was reserved did not panic")
		}
	}()
	p.Release(1)
}
