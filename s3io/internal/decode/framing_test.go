package decode

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
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

// End is called once framing reaches the records' end, whether at the object's end or at
// StopAt, never when framing stops on an error; what it returns replaces io.EOF, after
// every record was framed.
func TestFramingEnd(t *testing.T) {
	text := "a\nb\nc\nd\n"
	bad := errors.New("the bytes past the last record failed their check")
	for _, tc := range []struct {
		name    string
		src     io.Reader
		stopAt  int64
		end     error
		records int
		calls   int
		err     error
	}{
		{"to the end", strings.NewReader(text), 0, nil, 4, 1, io.EOF},
		{"to StopAt", strings.NewReader(text), 4, nil, 2, 1, io.EOF},
		{"end fails", strings.NewReader(text), 0, bad, 4, 1, bad},
		{"read fails", io.MultiReader(strings.NewReader("a\nb\n"), iotest.ErrReader(bad)), 0, nil, 2, 0, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			f := StartFraming(FramingSource{
				Open: func() (*RecordReader, error) {
					return NewRecordReader(tc.src, FramerFunc(FrameLines), 1<<10, 0), nil
				},
				Consumed: func() int64 { return 0 },
				Cancel:   func() {},
				StopAt:   tc.stopAt,
				End:      func() error { calls++; return tc.end },
			}, 1<<20, 0)
			defer f.Stop()
			n := 0
			for {
				b := f.Next()
				n += len(b.Records)
				if b.Err != nil {
					if !errors.Is(b.Err, tc.err) || n != tc.records || calls != tc.calls {
						t.Errorf("ended with %v after %d records and %d End calls; want %v, %d, %d", b.Err, n, calls, tc.err, tc.records, tc.calls)
					}
					return
				}
				f.Recycle(b)
			}
		})
	}
}
