package fetch

import (
	"sync"
	"time"
)

// connRate is the rate one connection delivered lately: moving averages of the bytes of
// the parts that measured it and of the time they took, whose ratio is the rate. A ratio of
// averages, not an average of ratios: on a busy machine a part's goroutine may look at its
// answer only after its whole body has arrived, and reads a MiB in a fraction of a
// millisecond; averaged as a rate, that one part's gigabytes per second would outweigh
// dozens of honest ones, while its fraction of a millisecond barely moves the average time.
type connRate struct {
	mu           sync.Mutex
	bytes, nanos float64 // 0 before the first part
}

// rateDiv is how far each part moves the averages: an eighth of the way to its own.
const rateDiv = 8

// add counts a part of n bytes that took d.
func (c *connRate) add(n int64, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nanos == 0 {
		c.bytes, c.nanos = float64(n), float64(d)
		return
	}
	c.bytes += (float64(n) - c.bytes) / rateDiv
	c.nanos += (float64(d) - c.nanos) / rateDiv
}

// get returns the rate in bytes per second, 0 before the first part.
func (c *connRate) get() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nanos == 0 {
		return 0
	}
	return int64(c.bytes / c.nanos * float64(time.Second))
}
