package s3io

import (
	"io"
	"sync"
)

// The framing goroutine: one per object being read, it decompresses and frames the
// object's bytes into batches of records ahead of the reader that emits them.

// recordBatch carries framed records from the framing goroutine to the one that claims and
// emits them. Its slices are reused; the records' bytes never are.
type recordBatch struct {
	seekable bool // the member is read uncompressed
	recs     [][]byte
	ends     []int64 // stream offset just past each record
	raw      int64   // stored bytes consumed by the decoder when the batch was cut
	err      error   // set on the last batch: io.EOF at the end, or why framing stopped
}

// framing is the goroutine that reads, decompresses and frames one object. It owns the
// object's record reader until stop returns.
type framing struct {
	cancel func() // ends the object's read, so that stop never waits on the network
	out    chan *recordBatch
	free   chan *recordBatch
	done   chan struct{}
	wg     sync.WaitGroup
	rr     *recordReader // set by the goroutine; read only after stop
}

// startFraming runs open, which opens the object and returns its record reader and whether
// the reader's offsets are bytes of the stored object, then frames it, on a new goroutine.
// For a segment, framing ends at the first record that starts at or after segEnd. cancel
// must abort src's requests.
func startFraming(open func() (rr *recordReader, seekable bool, err error), src *objectStream, seg bool, segEnd int64, cancel func()) *framing {
	f := &framing{
		cancel: cancel,
		out:    make(chan *recordBatch, batchesAhead),
		free:   make(chan *recordBatch, batchesAhead+2),
		done:   make(chan struct{}),
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		rr, seekable, err := open()
		f.rr = rr
		if err != nil {
			select {
			case f.out <- &recordBatch{err: err}:
			case <-f.done:
			}
			return
		}
		for {
			var b *recordBatch
			select {
			case b = <-f.free:
				b.recs, b.ends, b.err = b.recs[:0], b.ends[:0], nil
			default:
				b = &recordBatch{recs: make([][]byte, 0, batchRecords), ends: make([]int64, 0, batchRecords)}
			}
			b.seekable = seekable
			for size := 0; len(b.recs) < batchRecords && size < batchBytes; {
				rec, off, err := rr.next()
				if err == nil && seg && off >= segEnd {
					err = io.EOF // the rest belongs to the next segment
				}
				if err != nil {
					b.err = err
					break
				}
				b.recs = append(b.recs, rec)
				b.ends = append(b.ends, rr.offset)
				size += len(rec)
			}
			b.raw = src.consumed()
			select {
			case f.out <- b:
			case <-f.done:
				return
			}
			if b.err != nil {
				return
			}
		}
	}()
	return f
}

// next returns the next batch; the last one has err set.
func (f *framing) next() *recordBatch { return <-f.out }

// recycle hands a consumed batch back for reuse.
func (f *framing) recycle(b *recordBatch) {
	select {
	case f.free <- b:
	default:
	}
}

// stop ends the goroutine, if it still runs, and waits for it: after stop, the object's
// reader and decoder belong to the caller again.
func (f *framing) stop() {
	close(f.done)
	f.cancel()
	f.wg.Wait()
}

// decoded returns how many bytes of the object's stream were decoded; only after stop.
func (f *framing) decoded() int64 {
	if f.rr == nil {
		return 0
	}
	return f.rr.offset - f.rr.base
}
