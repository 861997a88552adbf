package fetch

// room is the counting a Budget and a Pool share: bytes used against a limit, the room a
// refused reservation asked for, and the channel whoever waits for room waits on. It has no
// lock of its own: its owner's mutex guards it, because that mutex also guards what the
// owner counts beside it (a budget's promises and turn, a pool's idle buffers), and one
// critical section must check and move both.
type room struct {
	used, limit int64
	// demand is room a reservation asked for and did not get: parts leave it free, so that
	// what parts release goes to the borrower instead of to the next part.
	demand int64
	// freed is closed, and replaced, whenever room is freed. Closing wakes every waiter, not
	// one: they wait for different amounts (parts of different classes; a budget's
	// scheduler and the part whose turn it is), and the one woken might not fit where
	// another would.
	freed chan struct{}
}

func newRoom(limit int64) room { return room{limit: limit, freed: make(chan struct{})} }

// fits reports whether a part of n bytes may take room now: beside what is used and what a
// refused reservation asked for, or alone, so that one part larger than the limit cannot
// stall the read.
func (r *room) fits(n int64) bool { return r.used+n+r.demand <= r.limit || r.used == 0 }

// take counts n bytes used whether or not they fit: fits said they do, or they are held
// already (a part's buffer moving between budgets) and refusing them would not free them.
func (r *room) take(n int64) { r.used += n }

// refuses reports whether a reservation of n bytes would leave less than keep free for
// parts, and if so records n as demanded, so that the next parts leave it free.
func (r *room) refuses(n, keep int64) bool {
	if r.used+n+keep > r.limit {
		r.demand = n
		return true
	}
	return false
}

// reserve counts n bytes a reservation takes, once refuses let it: the demand is met, and
// parts may use all the room again.
func (r *room) reserve(n int64) { r.used, r.demand = r.used+n, 0 }

// give counts n bytes no longer used and wakes the waiters. It reports false, counting
// nothing, when n is more than is used: the owner's accounting is broken, and it panics
// saying whose.
func (r *room) give(n int64) bool {
	if n > r.used {
		return false
	}
	r.used -= n
	r.wake()
	return true
}

// wake wakes every waiter, by closing the channel they wait on and giving later waiters a
// new one. The owner's mutex is held: a waiter takes its channel under it too, so it either
// took the one closed here or checks for room after this change and takes the new one.
func (r *room) wake() {
	close(r.freed)
	r.freed = make(chan struct{})
}

// wait returns the channel closed when room is next freed. The owner takes it under its
// mutex, together with the check that found no room: room freed between that check and the
// wait then closes this channel, and the wake-up is not lost.
func (r *room) wait() <-chan struct{} { return r.freed }
