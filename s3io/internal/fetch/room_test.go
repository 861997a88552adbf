package fetch

import (
	"sync"
	"testing"
	"time"
)

// A part fits beside what is used and demanded, or alone when nothing is used, however
// large: one part larger than the limit must not stall the read.
func TestRoomFits(t *testing.T) {
	r := newRoom(10)
	if !r.fits(10) || !r.fits(100) {
		t.Fatal("an empty room refused a part, within its limit or larger")
	}
	r.take(6)
	if !r.fits(4) || r.fits(5) {
		t.Errorf("with 6 of 10 used: fits(4) %v fits(5) %v, want true false", r.fits(4), r.fits(5))
	}
	r.demand = 2
	if r.fits(3) || !r.fits(2) {
		t.Errorf("with 6 used and 2 demanded: fits(3) %v fits(2) %v, want false true", r.fits(3), r.fits(2))
	}
	r.take(20) // taken whether or not it fits
	if r.used != 26 {
		t.Errorf("used %d after a forced take, want 26", r.used)
	}
}

// A reservation is refused unless keep bytes stay free after it; a refused one is
// recorded as demand, which parts then leave free, and a granted one meets the demand.
func TestRoomReserve(t *testing.T) {
	r := newRoom(10)
	r.take(4)
	if r.refuses(3, 3) {
		t.Fatal("a reservation leaving exactly keep free was refused")
	}
	if r.demand != 0 || r.used != 4 {
		t.Errorf("a granted check changed the room: used %d demand %d", r.used, r.demand)
	}
	if !r.refuses(4, 3) {
		t.Fatal("a reservation leaving less than keep free was granted")
	}
	if r.demand != 4 || r.used != 4 {
		t.Errorf("after a refusal: used %d demand %d, want 4 and 4 demanded", r.used, r.demand)
	}
	if r.fits(3) {
		t.Error("a part took the room a refused reservation asked for")
	}
	r.reserve(3)
	if r.demand != 0 || r.used != 7 {
		t.Errorf("after a reservation: used %d demand %d, want 7 and 0", r.used, r.demand)
	}
}

// give wakes whoever took the channel before it, and later waiters wait for the next give;
// giving back more than is used counts nothing and wakes no one.
func TestRoomGiveWakes(t *testing.T) {
	r := newRoom(10)
	r.take(8)
	before := r.wait()
	if r.give(9) {
		t.Fatal("giving back more than was used succeeded")
	}
	if r.used != 8 || closed(before) {
		t.Fatalf("a refused give changed the room: used %d, woke %v", r.used, closed(before))
	}
	if !r.give(5) || r.used != 3 {
		t.Fatalf("give(5) of 8: used %d, want 3", r.used)
	}
	if !closed(before) {
		t.Error("room freed did not wake a waiter that took the channel before")
	}
	after := r.wait()
	if closed(after) {
		t.Error("a waiter after the give is woken without room freed since")
	}
	r.wake()
	if !closed(after) {
		t.Error("wake did not wake the waiter")
	}
}

// Every waiter wakes on one give, not one of them: they wait for different amounts, and
// the one woken might not fit where another would. Waiters take the channel under the
// owner's mutex with their check, so a give between the check and the wait is not lost.
func TestRoomWakesEveryWaiter(t *testing.T) {
	var mu sync.Mutex
	r := newRoom(10)
	r.take(10)
	const waiters = 8
	var wg sync.WaitGroup
	for n := range int64(waiters) {
		wg.Go(func() {
			for {
				mu.Lock()
				if r.fits(1 + n%2) {
					mu.Unlock()
					return
				}
				freed := r.wait()
				mu.Unlock()
				<-freed
			}
		})
	}
	time.Sleep(10 * time.Millisecond) // let some of them wait
	mu.Lock()
	r.give(2) // room for every waiter's amount, which none of them takes
	mu.Unlock()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("waiters still waiting after room for all of them was freed")
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
