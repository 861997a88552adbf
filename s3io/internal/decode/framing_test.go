package decode

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCredit lends up to limit bytes and records the most it lent.
type fakeCredit struct {
	mu              sync.Mutex
	limit, held, hi int64
}

func (c *fakeCredit) Reserve(n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held+n > c.limit {
		return false
	}
	c.held += n
	c.hi = max(c.hi, c.held)
	return true
}

func (c *fakeCredit) Release(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held -= n
}

func (c *fakeCredit) state() (held, hi int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held, c.hi
}

// A framing goroutine with a slow decoder runs on past its window on credit, never past the
// credit, and gives every byte of it back whether its batches are taken or it is stopped;
// one without (borrow false) stays within its window. Records come out in order either way.
func TestFramingCredit(t *testing.T) {
	line := strings.Repeat("x", 1000) + "\n"
	const lines = 20000 // ~20 MB: far beyond a 1 MiB window and 4 MiB of credit
	for _, borrow := range []bool{true, false} {
		for _, drain := range []bool{true, false} {
			credit := &fakeCredit{limit: 4 << 20}
			src := FramingSource{
				Open: func() (*RecordReader, error) {
					return NewRecordReader(strings.NewReader(strings.Repeat(line, lines)), FramerFunc(FrameLines), 1<<20, 0), nil
				},
				Consumed: func() int64 { return 0 },
				Cancel:   func() {},
				Credit: func() Credit {
					if borrow {
						return credit
					}
					return nil
				},
			}
			f := StartFraming(src, 1<<20, credit.limit)
			// Let it run ahead until it stops growing; a borrowing one has borrowed once its
			// window is full, which a loaded machine (the race detector) may take a while to
			// reach.
			for prev, began := int64(-1), time.Now(); ; {
				time.Sleep(50 * time.Millisecond)
				held, _ := credit.state()
				if held == prev && (held > 0 || !borrow || time.Since(began) > time.Minute) {
					break
				}
				prev = held
			}
			held, hi := credit.state()
			switch {
			case borrow && (held == 0 || hi > credit.limit):
				t.Fatalf("borrow: holds %d of credit (most %d), want some and at most %d", held, hi, credit.limit)
			case !borrow && hi != 0:
				t.Fatalf("no borrow: took %d of credit", hi)
			}
			n := 0
			for drain {
				b := f.Next()
				for _, r := range b.Records {
					if len(r) != 1000 {
						t.Fatalf("record %d has %d bytes", n, len(r))
					}
					n++
				}
				if b.Err != nil {
					if n != lines {
						t.Fatalf("%d records, want %d", n, lines)
					}
					break
				}
				f.Recycle(b)
			}
			f.Stop()
			if held, _ := credit.state(); held != 0 {
				t.Fatalf("borrow %v, drained %v: %d bytes of credit not given back", borrow, drain, held)
			}
		}
	}
}
