package fetch

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// slowNetwork is a RoundTripper that answers each request after a delay, as S3 does tens of
// milliseconds after it is sent.
type slowNetwork struct {
	base  http.RoundTripper
	delay time.Duration
}

func (n slowNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(n.delay)
	return n.base.RoundTrip(r)
}

// budgetRun reads every object of fx through a fetcher whose budget starts at initial and
// moves within [lo, hi]; a slow emitter waits, before each part-sized read, until the part
// it reads next has arrived. It returns the budget's final limit and the most bytes the
// budget and the pool held at once.
func budgetRun(t *testing.T, fx *fixture, initial, lo, hi, poolLimit int64, slowEmitter bool) (limit, mostHeld, mostPool int64) {
	t.Helper()
	var peakBudget, peakPool atomic.Int64
	raise := func(p *atomic.Int64, v int64) {
		for m := p.Load(); v > m && !p.CompareAndSwap(m, v); m = p.Load() {
		}
	}
	pool := NewPool(poolLimit)
	pool.observe = func(held int64) { raise(&peakPool, held) }
	b := NewBudget(pool, initial, lo, hi)
	b.observe = func(held, _ int64) { raise(&peakBudget, held) }
	f := NewFetcher(t.Context(), fx.set, pool, b)
	var streams []*Stream
	for _, o := range fx.objects {
		streams = append(streams, f.Add(fx.gets, o, Range{PlanEnd: o.Size}).Stream())
	}
	buf := make([]byte, fx.set.PartBytes)
	for i, s := range streams {
		n := 0
		for {
			if slowEmitter {
				waitNextArrived(t, s)
			}
			k, err := s.Read(buf)
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", fx.objects[i].Key, err)
			}
		}
		s.Close()
		if n != len(fx.data[i]) {
			t.Fatalf("%s: read %d bytes, want %d", fx.objects[i].Key, n, len(fx.data[i]))
		}
	}
	f.Close()
	if h := b.Held(); h != 0 {
		t.Errorf("%d bytes still held by the budget after the read", h)
	}
	if p := b.promised; p != 0 {
		t.Errorf("%d bytes still promised by the budget after the read", p)
	}
	pool.Close()
	settleGoroutines(t)
	return b.Limit(), peakBudget.Load(), peakPool.Load()
}

// waitNextArrived waits until the part s reads next has arrived, as it has for an emitter
// slower than the network, however slow the machine's own answers are: a pause would leave
// that to timing, and on a loaded machine parts came late, so the budget never saw a run of
// parts ready in a row. The part s holds is read whole, and the budget always has room for
// the next one, so it arrives.
func waitNextArrived(t *testing.T, s *Stream) {
	deadline := time.Now().Add(time.Minute)
	for !nextArrived(s) {
		if time.Now().After(deadline) {
			t.Fatal("the next part did not arrive in a minute")
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// nextArrived reports whether the part s reads after the one it holds has arrived, or s has
// no part left to read.
func nextArrived(s *Stream) bool {
	of := s.of
	of.mu.Lock()
	defer of.mu.Unlock()
	for _, p := range of.live {
		if p == s.cur {
			continue
		}
		select {
		case <-p.done:
			return true
		default:
			return false
		}
	}
	return of.next >= of.planEnd
}

// The budget follows the bandwidth-delay product: on a network that answers each request
// late, a reader that waits for its parts while the budget holds the next ones back makes
// the budget grow, up to its bound and never past it or the pool's; under a slow emitter,
// whose parts are all ready before it wants them, the budget shrinks toward its floor, by
// the rule and nothing else.
func TestBudgetFollowsTheNetwork(t *testing.T) {
	const part = 64 << 10
	sizes := make([]int, 40)
	for i := range sizes {
		sizes[i] = 4 * part
	}
	const initial, lo, hi, poolLimit = 4 * part, 2 * part, 16 * part, 12 * part

	t.Run("slow network", func(t *testing.T) {
		fx := newFixture(t, part, 0, 32, sizes)
		fx.reqs.base = slowNetwork{base: http.DefaultTransport, delay: 20 * time.Millisecond}
		limit, mostHeld, mostPool := budgetRun(t, fx, initial, lo, hi, poolLimit, false)
		if limit <= initial {
			t.Errorf("limit %d after a read that waited on the network, want it grown past %d", limit, initial)
		}
		if mostHeld > hi || mostPool > poolLimit {
			t.Errorf("held at most %d (budget bound %d), the pool %d (limit %d)", mostHeld, hi, mostPool, poolLimit)
		}
	})
	t.Run("slow emitter", func(t *testing.T) {
		fx := newFixture(t, part, 0, 32, sizes)
		limit, mostHeld, mostPool := budgetRun(t, fx, initial, lo, hi, poolLimit, true)
		// Every part was ready: the limit shrinks by an eighth per readyToShrink parts.
		want := int64(initial)
		for range len(sizes) * 4 / readyToShrink {
			want = max(lo, want-want/shrinkDiv)
		}
		if want >= initial || limit != want {
			t.Errorf("limit %d after a read whose parts were all ready, want it shrunk from %d to %d", limit, initial, want)
		}
		if mostHeld > hi || mostPool > poolLimit {
			t.Errorf("held at most %d (budget bound %d), the pool %d (limit %d)", mostHeld, hi, mostPool, poolLimit)
		}
	})
}

// A Reserve the budget or the pool cannot grant leaves both as they were, the room it asked
// for is left free by the next parts, and the limit grows toward its bound.
func TestBudgetReserve(t *testing.T) {
	pool := NewPool(1 << 20)
	b := NewBudget(pool, 512<<10, 512<<10, 640<<10)
	if !b.Reserve(128<<10, 256<<10) {
		t.Fatal("a reservation within both bounds was refused")
	}
	if b.Reserve(256<<10, 256<<10) {
		t.Fatal("a reservation past the budget was granted")
	}
	if b.room.demand != 256<<10 || b.Limit() != 640<<10 {
		t.Errorf("demand %d, limit %d after a refused reservation, want %d and the bound %d", b.room.demand, b.Limit(), 256<<10, 640<<10)
	}
	b.Release(128 << 10)
	if b.Held() != 0 || held(pool) != 0 {
		t.Errorf("held %d / pool %d after the release, want 0", b.Held(), held(pool))
	}
}

// Parts are small after the fetcher was idle, then a sixteenth of the budget, what a
// connection delivers in partLatency, or what it delivers while a request waits for its
// first byte within an eighth of the budget, whichever is largest, in powers of two between
// 1 MiB and PartBytes (rounded up from within a quarter).
func TestPartSizeFollowsBudgetAndConnections(t *testing.T) {
	const mib = 1 << 20
	pool := NewPool(256 * mib)
	for _, tc := range []struct {
		name      string
		issued    int
		limit     int64
		rate      int64         // bytes per second per connection
		firstByte time.Duration // a request's wait for its answer
		want      int64
	}{
		{"first part after idle", 0, 32 * mib, 0, 0, 256 << 10},
		{"second part after idle", 1, 32 * mib, 0, 0, mib},
		{"starting budget", 2, 32 * mib, 0, 0, 2 * mib},
		{"S3-like connections", 2, 32 * mib, 40e6, 0, 2 * mib},
		{"grown budget", 2, 64 * mib, 40e6, 0, 4 * mib},
		{"48 MiB budget: 3 MiB rounds down", 2, 48 * mib, 40e6, 0, 2 * mib},
		{"small budget", 2, 8 * mib, 0, 0, mib},
		{"fast connections", 2, 8 * mib, 1e9, 0, 8 * mib},
		{"fast, capped by PartBytes", 2, 8 * mib, 1e10, 0, 8 * mib},
		{"S3: 90 MB/s, 30 ms", 2, 32 * mib, 90e6, 30 * time.Millisecond, 2 * mib},
		{"a queue before the answer: 90 MB/s, 45 ms", 2, 32 * mib, 90e6, 45 * time.Millisecond, 4 * mib},
		{"a long wait, within an eighth of the budget", 2, 32 * mib, 90e6, 500 * time.Millisecond, 4 * mib},
		{"a long wait, a small budget: 20 ms of the connection", 2, 8 * mib, 90e6, 500 * time.Millisecond, 2 * mib},
	} {
		f := NewFetcher(t.Context(), Settings{PartBytes: 8 * mib, MaxRequestsInFlight: 1}, pool, NewBudget(pool, tc.limit, tc.limit, tc.limit))
		f.issued = tc.issued
		f.rate.set(tc.rate)
		f.firstByte.Store(int64(tc.firstByte))
		if got := f.partSize(); got != tc.want {
			t.Errorf("%s: part of %d bytes, want %d", tc.name, got, tc.want)
		}
		f.Close()
	}
	// The rate is a moving average of what parts of a MiB and more took.
	f := NewFetcher(t.Context(), Settings{PartBytes: 8 * mib, MaxRequestsInFlight: 1}, pool, NewBudget(pool, mib, mib, mib))
	f.delivered(64<<10, 0, time.Millisecond) // too small to measure delivery: ignored
	if r := f.rate.get(); r != 0 {
		t.Errorf("rate %d after a 64 KiB part, want it ignored", r)
	}
	for range 64 {
		f.delivered(2*mib, 0, 10*time.Millisecond)
	}
	if r := f.rate.get(); r < 200e6 || r > 220e6 {
		t.Errorf("rate %d after parts of 2 MiB in 10 ms, want ~210 MB/s", r)
	}
	// A part that waited for room before it was read found its socket's buffer full and
	// read at memory speed: it says nothing of the connection but a lower bound, here 2 MiB
	// in 51 ms, ~41 MB/s.
	for range 64 {
		f.delivered(2*mib, 50*time.Millisecond, time.Millisecond)
	}
	if r := f.rate.get(); r < 200e6 || r > 220e6 {
		t.Errorf("rate %d after parts that waited 50 ms for room and read in 1 ms, want it unchanged (~210 MB/s)", r)
	}
	// A lower bound above the estimate raises it: 2 MiB in 5+1 ms is at least ~350 MB/s.
	for range 64 {
		f.delivered(2*mib, 5*time.Millisecond, time.Millisecond)
	}
	if r := f.rate.get(); r < 330e6 || r > 360e6 {
		t.Errorf("rate %d after parts that waited 5 ms for room and read in 1 ms, want ~350 MB/s", r)
	}
	// A short wait counts toward the part's time.
	for range 64 {
		f.delivered(2*mib, time.Millisecond, 19*time.Millisecond)
	}
	if r := f.rate.get(); r < 100e6 || r > 110e6 {
		t.Errorf("rate %d after parts of 2 MiB in 1+19 ms, want ~105 MB/s", r)
	}
	// A part whose whole body had arrived before its goroutine looked (a busy machine) reads
	// a MiB in a fraction of a millisecond: one such part barely moves the rate, while an
	// average of rates jumped from ~105 MB/s to ~700 and stayed there (the parts after it
	// waited for room, and their lower bounds fell below it).
	f.delivered(mib, 0, 200*time.Microsecond)
	if r := f.rate.get(); r > 120e6 {
		t.Errorf("rate %d after one MiB read in 0.2 ms among parts at ~105 MB/s, want it near 105 MB/s", r)
	}
	f.Close()
}

// A connection's rate is its body's, from first byte to last: a server that answers late
// but sends fast (a loaded server nearby, queueing requests) is a fast connection, which
// earns large parts, while its latency is left to the budget. Measured through the
// request's latency, 1 MiB answered 300 ms late reads as ~3.5 MB/s.
func TestPartRateLeavesLatencyOut(t *testing.T) {
	const mib = 1 << 20
	fx := newFixture(t, mib, 8*mib, 4, []int{3 * mib, 3 * mib})
	fx.reqs.base = slowNetwork{base: http.DefaultTransport, delay: 300 * time.Millisecond}
	pool := NewPool(8 * mib)
	f := NewFetcher(t.Context(), fx.set, pool, NewBudget(pool, 8*mib, 8*mib, 8*mib))
	for _, o := range fx.objects {
		s := f.Add(fx.gets, o, Range{PlanEnd: o.Size}).Stream()
		if _, err := io.Copy(io.Discard, s); err != nil {
			t.Fatalf("%s: %v", o.Key, err)
		}
		s.Close()
	}
	f.Close()
	pool.Close()
	// A MiB in under 100 ms leaves room for a slow, instrumented test binary: the bound
	// only has to sit well above what the latency would make it.
	if r := f.rate.get(); r < 10e6 {
		t.Errorf("connection rate %d B/s for parts answered 300 ms late: the latency was counted", r)
	}
}
