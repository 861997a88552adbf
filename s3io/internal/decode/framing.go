package decode

import (
	"io"
	"sync"
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
	Seekable bool // the object is read uncompressed: record offsets are object offsets
	Records  [][]byte
	Ends     []int64  // stream offset just past each record
	Entries  []string // the archive entry of each record; "" outside archives
	// Consumed is how many stored bytes the decoder had taken from the source when the
	// batch was cut.
	Consumed int64
	Err      error // set on the last batch: io.EOF at the end, or why framing stopped
}

// Framing is the goroutine that reads, decompresses and frames one object. It owns the
// object's record reader until Stop returns.
type Framing struct {
	cancel func() // ends the object's read, so that Stop never waits on the network
	out    chan *Batch
	free   chan *Batch
	done   chan struct{}
	wg     sync.WaitGroup
	reader *RecordReader // set by the goroutine; read only after Stop
}

// FramingSource is what a Framing reads: Open, run on the framing goroutine (it may block
// on the network), opens the object and returns its record reader and whether the reader's
// offsets are object offsets; Consumed tells the stored bytes taken so far; Cancel aborts
// the source's requests.
type FramingSource struct {
	Open     func() (r *RecordReader, seekable bool, err error)
	Consumed func() int64
	Cancel   func()
	// StopAt ends framing at the first record whose framing starts at or after this offset
	// (the rest belongs to the next segment of the object); 0 frames to the end.
	StopAt int64
}

// StartFraming frames src on a new goroutine, up to windowBytes of records ahead of the
// batches taken with Next.
func StartFraming(src FramingSource, windowBytes int) *Framing {
	ahead := windowBytes / batchBytes
	f := &Framing{
		cancel: src.Cancel,
		out:    make(chan *Batch, ahead),
		free:   make(chan *Batch, ahead+2),
		done:   make(chan struct{}),
	}
	f.wg.Add(1)
	go f.run(src)
	return f
}

func (f *Framing) run(src FramingSource) {
	defer f.wg.Done()
	rr, seekable, err := src.Open()
	f.reader = rr
	if err != nil {
		select {
		case f.out <- &Batch{Err: err}:
		case <-f.done:
		}
		return
	}
	for {
		var b *Batch
		select {
		case b = <-f.free:
			b.Records, b.Ends, b.Entries, b.Err = b.Records[:0], b.Ends[:0], b.Entries[:0], nil
		default:
			b = &Batch{Records: make([][]byte, 0, batchRecords), Ends: make([]int64, 0, batchRecords), Entries: make([]string, 0, batchRecords)}
		}
		b.Seekable = seekable
		for size := 0; len(b.Records) < batchRecords && size < batchBytes; {
			rec, off, err := rr.Next()
			if err == nil && src.StopAt > 0 && off >= src.StopAt {
				err = io.EOF // the rest belongs to the next segment
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
		select {
		case f.out <- b:
		case <-f.done:
			return
		}
		if b.Err != nil {
			return
		}
	}
}

// Next returns the next batch; the last one has Err set.
func (f *Framing) Next() *Batch { return <-f.out }

// Recycle hands a consumed batch back for reuse.
func (f *Framing) Recycle(b *Batch) {
	select {
	case f.free <- b:
	default:
	}
}

// Stop ends the goroutine, if it still runs, and waits for it: after Stop, the object's
// reader and decoder belong to the caller again.
func (f *Framing) Stop() {
	close(f.done)
	f.cancel()
	f.wg.Wait()
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
