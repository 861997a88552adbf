package decode

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// The framing goroutine: one per object being read, it decompresses and frames the
// object's bytes into batches of records ahead of the reader that emits them.

// A batch is cut at batchRecords records or batchBytes of them, whichever comes first.
const (
	batchRecords = 2048
	batchBytes   = 256 << 10
)

// Batch carries framed records from the framing goroutine to the one that claims and emits
// them. Its slices are reused; the records' bytes never are.
type Batch struct {
	Records [][]byte
	Ends    []int64  // stream offset just past each record
	Entries []string // the archive entry of each record; "" outside archives
	// Consumed is how many stored bytes the decoder had taken from the source when the
	// batch was cut.
	Consumed int64
	Err      error // set on the last batch: io.EOF at the end, or why framing stopped
	// Retired, with FramingSource.RecycleSlabs, are the slabs framing moved past before
	// the batch was cut: no later batch has records in them, so once this batch's records
	// and those before it are copied out, ReleaseSlabs may take them back.
	Retired [][]byte
	credit  int64 // bytes borrowed for it beyond the window; 0 inside the window
}

// Credit lends a framing goroutine room beyond its window: Reserve takes n bytes if they
// are free, Release gives them back. A slow decoder (bzip2, xz, brotli) running ahead of
// the object being emitted fills its window long before it is needed, and then idles: the
// reader's part budget, which such objects barely use, lets it run on.
type Credit interface {
	Reserve(n int64) bool
	Release(n int64)
}

// Framing is the goroutine that reads, decompresses and frames one object. It owns the
// object's record reader until Stop returns.
type Framing struct {
	cancel func() // ends the object's read, so that Stop never waits on the network
	out    chan *Batch
	done   chan struct{}
	wg     sync.WaitGroup
	reader *RecordReader // set by the goroutine; read only after Stop

	window   int32         // batches the goroutine may have queued without credit
	inWindow atomic.Int32  // batches queued without credit
	taken    chan struct{} // signalled by Next when a batch of the window is taken
	credit   Credit
}

// FramingSource is what a Framing reads: Open, run on the framing goroutine (it may block
// on the network), opens the object and returns its record reader; Consumed tells the
// stored bytes taken so far; Cancel aborts the source's requests.
type FramingSource struct {
	Open     func() (*RecordReader, error)
	Consumed func() int64
	Cancel   func()
	// StopAt ends framing at the first record whose framing starts at or after this offset
	// (the rest of the object is another read's); 0 frames to the end.
	StopAt int64
	// Credit, if set, is asked once Open has returned what the read may borrow beyond its
	// window (nil: nothing): a slow decoder's, or a read decoded ahead of the one being
	// emitted, whose framing must go on past its window or a core idles. It is asked after
	// Open because what the object holds may decide it (its codec, in auto mode).
	Credit func() Credit
	// RecycleSlabs reports the slabs each batch retired in Batch.Retired, for a consumer
	// that copies every record out and hands the slabs back.
	RecycleSlabs bool
	// End, if set, is called on the framing goroutine once framing reached the records'
	// end (io.EOF, or StopAt), before the last batch is sent: an error it returns (the
	// object's bytes past its last record failed their checksum) replaces io.EOF.
	End func() error
}

// StartFraming frames src on a new goroutine, up to windowBytes of records ahead of the
// batches taken with Next, and beyond that on src.Credit for a slow decoder; creditBytes
// bounds what it may borrow.
func StartFraming(src FramingSource, windowBytes int, creditBytes int64) *Framing {
	window := max(windowBytes/batchBytes, 1)
	extra := 0
	if src.Credit != nil {
		extra = int(creditBytes / batchBytes)
	}
	f := &Framing{
		cancel: src.Cancel,
		out:    make(chan *Batch, window+extra),
		done:   make(chan struct{}),
		window: int32(window),
		taken:  make(chan struct{}, 1),
	}
	f.wg.Add(1)
	go f.run(src)
	return f
}

func (f *Framing) run(src FramingSource) {
	defer f.wg.Done()
	rr, err := src.Open()
	f.reader = rr
	if rr != nil {
		rr.recycle = src.RecycleSlabs
	}
	if src.Credit != nil {
		f.credit = src.Credit()
	}
	if err != nil {
		b := &Batch{Err: err}
		if !f.admit(b) {
			return
		}
		select {
		case f.out <- b:
		case <-f.done:
		}
		return
	}
	for {
		b := newBatch()
		for size := 0; len(b.Records) < batchRecords && size < batchBytes; {
			rec, off, err := rr.Next()
			if err == nil && src.StopAt > 0 && off >= src.StopAt {
				err = io.EOF // the rest is another read's
			}
			if err == io.EOF && src.End != nil {
				if end := src.End(); end != nil {
					err = end
				}
			}
			if err != nil {
				b.Err = err
				break
			}
			b.Records = append(b.Records, rec)
			b.Ends = append(b.Ends, rr.offset)
			b.Entries = append(b.Entries, rr.entry)
			size += len(rec)
		}
		b.Consumed = src.Consumed()
		if len(rr.retired) > 0 {
			b.Retired = append(b.Retired, rr.retired...)
			rr.retired = rr.retired[:0]
		}
		if !f.admit(b) {
			return
		}
		last := b.Err != nil // once sent, b is the reader's, which recycles it
		select {
		case f.out <- b:
		case <-f.done:
			f.refund(b)
			return
		}
		if last {
			return
		}
	}
}

// admit waits until b may be queued: inside the window, or on credit beyond it (never for
// the last batch, which holds the error). It reports false if the framing was stopped.
func (f *Framing) admit(b *Batch) bool {
	for {
		if f.inWindow.Add(1) <= f.window {
			return true
		}
		f.inWindow.Add(-1)
		if f.credit != nil && b.Err == nil && cap(f.out) > len(f.out) && f.credit.Reserve(batchBytes) {
			b.credit = batchBytes
			return true
		}
		var retry <-chan time.Time
		if f.credit != nil && b.Err == nil {
			// Credit frees up when parts are consumed, which signals nothing here.
			retry = time.After(creditRetry)
		}
		select {
		case <-f.taken:
		case <-retry:
		case <-f.done:
			return false
		}
	}
}

// creditRetry is how often a framing goroutine whose window is full asks for credit again.
const creditRetry = 2 * time.Millisecond

// refund gives back what queuing b took.
func (f *Framing) refund(b *Batch) {
	if b.credit > 0 {
		f.credit.Release(b.credit)
		b.credit = 0
		return
	}
	f.inWindow.Add(-1)
	select {
	case f.taken <- struct{}{}:
	default:
	}
}

// Next returns the next batch; the last one has Err set.
func (f *Framing) Next() *Batch {
	b := <-f.out
	f.refund(b)
	return b
}

// Ready reports whether Next would return without waiting: a batch is queued. A reader that
// holds records back to group them hands them on before it may wait.
func (f *Framing) Ready() bool { return len(f.out) > 0 }

// Recycle hands a consumed batch back for reuse, by any object's framing.
func (f *Framing) Recycle(b *Batch) {
	// Its slices would keep the records' slabs alive while it waits.
	clear(b.Records)
	clear(b.Entries)
	clear(b.Retired)
	b.Records, b.Ends, b.Entries, b.Retired, b.Err, b.credit = b.Records[:0], b.Ends[:0], b.Entries[:0], b.Retired[:0], nil, 0
	select {
	case freeBatches <- b:
	default:
	}
}

// freeBatches are consumed batches, shared by every object's framing: each object's
// framing would otherwise allocate its window's worth of them again (~100 KB each, mostly
// pointers the collector scans), as many times as a worker reads objects.
var freeBatches = make(chan *Batch, 64)

// newBatch returns an empty batch, recycled if one is free.
func newBatch() *Batch {
	select {
	case b := <-freeBatches:
		return b
	default:
		return &Batch{Records: make([][]byte, 0, batchRecords), Ends: make([]int64, 0, batchRecords), Entries: make([]string, 0, batchRecords)}
	}
}

// Stop ends the goroutine, if it still runs, and waits for it: after Stop, the object's
// reader and decoder belong to the caller again.
func (f *Framing) Stop() {
	close(f.done)
	f.cancel()
	f.wg.Wait()
	for {
		select {
		case b := <-f.out:
			f.refund(b)
		default:
			return
		}
	}
}

// HeadersSkipped returns how many header records were dropped; only after Stop.
func (f *Framing) HeadersSkipped() int64 {
	if f.reader == nil {
		return 0
	}
	return f.reader.HeadersSkipped
}

// Decoded returns how many bytes of the object's stream were decoded; only after Stop.
func (f *Framing) Decoded() int64 {
	if f.reader == nil {
		return 0
	}
	return f.reader.offset - f.reader.base
}
