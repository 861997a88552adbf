package fetch

import (
	"testing"
	"time"
)

// set makes the rate r bytes per second, as if parts of a MiB had measured it.
func (c *connRate) set(r int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes, c.nanos = 0, 0
	if r > 0 {
		c.bytes, c.nanos = 1<<20, float64(1<<20)/float64(r)*float64(time.Second)
	}
}

// The rate is bytes over time, each averaged over the parts: parts of different sizes
// weigh by what they carried and took, and a part read from a full socket in microseconds
// adds its bytes but almost none of the time.
func TestConnRate(t *testing.T) {
	var c connRate
	if r := c.get(); r != 0 {
		t.Fatalf("rate %d before any part, want 0", r)
	}
	c.add(4<<20, 40*time.Millisecond)
	if r := c.get(); r < 104e6 || r > 106e6 {
		t.Errorf("rate %d after 4 MiB in 40 ms, want ~105 MB/s", r)
	}
	for range 100 {
		c.add(1<<20, 10*time.Millisecond)
		c.add(4<<20, 40*time.Millisecond)
	}
	if r := c.get(); r < 104e6 || r > 106e6 {
		t.Errorf("rate %d after parts of 1 and 4 MiB at ~105 MB/s, want ~105 MB/s", r)
	}
	for range 3 {
		c.add(1<<20, 100*time.Microsecond)
	}
	if r := c.get(); r > 150e6 {
		t.Errorf("rate %d after three MiB parts read from full sockets, want it under 150 MB/s", r)
	}
	c.set(90e6)
	if r := c.get(); r < 89e6 || r > 91e6 {
		t.Errorf("set(90e6) gives %d", r)
	}
}
