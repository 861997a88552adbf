package decode

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Decoding a read's own units on more than one core. The span of a compressed object a read
// owns is a run of whole units (gzip members, zstd frames, bzip2 streams), and each decodes
// from its own first byte: OpenUnitsParallel cuts the span's stored bytes, as they arrive,
// into chunks at unit starts it proves in them (FindUnitIn, the planner's proof), and
// decodes each chunk on a goroutine of its own while the chunk before is read. The planner
// can then cut an object into few spans, since each cut it makes costs a probe, and a reader
// still keeps both cores decoding: chunks need no probe, they are cut in bytes the read
// fetches anyway.
//
// A wrong chunk cut cannot change what is read: a chunk must decode to exactly its end, and
// when one does not (a cut the proof took for a unit start, or a corrupt unit), the read
// goes on from that chunk's first byte on one decoder over the same bytes, as OpenUnits
// reads, and so reports a corrupt unit just as it would.

// ParallelUnits configures OpenUnitsParallel. Memory is bounded by it: Queued+1 chunks of at
// most Chunk+Search+proof stored bytes, and Queued chunks' decoded blocks (OutBytes each).
type ParallelUnits struct {
	// Chunk is the least stored bytes of a chunk: it ends at the first unit start proven at
	// or after Chunk bytes.
	Chunk int
	// Search is how far past Chunk that start is looked for; with none there, the rest of
	// the span is one chunk.
	Search int
	// Queued is how many chunks may be decoded, and wait, beyond the one being read.
	Queued int
	// OutBytes bounds the decoded bytes a chunk holds before it is read.
	OutBytes int
	// MaxWindow bounds a zstd frame's window, as Decompressors.MaxWindow does.
	MaxWindow int64
	// Get and Put lend the chunk goroutines their decoders.
	Get func() *Decompressors
	Put func(*Decompressors)
	// Checkpoints, if set, gets a checkpoint (Member: a unit starts there, no window) at each
	// chunk start the read reaches past the first, whose decoded offset is Base plus the
	// bytes read before it: a read resumed there (OpenUnits from its stored offset) decodes
	// again at most about a chunk before its first record, not the whole span before it.
	Checkpoints *Checkpoints
	Base        int64
}

// chunkProofSlack is what a chunk's search reads past its window, to prove a candidate
// near the window's end: FindUnit decodes unitProofBytes of it, which take about as many
// stored bytes when they do not compress.
const chunkProofSlack = unitProofBytes + 4<<10

// outBlockBytes is the size of the decoded blocks a chunk goroutine hands on.
const outBlockBytes = 256 << 10

var outBlocks = sync.Pool{New: func() any { b := make([]byte, outBlockBytes); return &b }}

// OpenUnitsParallel is OpenUnits, with the read's own units decoded in chunks on up to
// cfg.Queued+1 goroutines. The stream must be closed (Close) to stop them.
func (d *Decompressors) OpenUnitsParallel(comp Compression, src io.Reader, start, own int64, more bool, cfg ParallelUnits) (io.ReadCloser, error) {
	if !CutAtUnits(comp) {
		return nil, fmt.Errorf("s3io: %s objects are not cut at units", comp)
	}
	u := &parallelUnits{d: d, comp: comp, src: src, start: start, own: own, more: more, cfg: cfg,
		chunks: make(chan *unitChunk, max(cfg.Queued, 1)), stop: make(chan struct{}), fed: make(chan struct{})}
	go u.feed()
	return u, nil
}

// parallelUnits is OpenUnitsParallel's stream.
type parallelUnits struct {
	d          *Decompressors
	comp       Compression
	src        io.Reader
	start, own int64
	more       bool
	cfg        ParallelUnits

	chunks chan *unitChunk // cut by feed, in order; the last one's stored bytes end at own
	stop   chan struct{}   // closed to stop feed and the chunk goroutines
	fed    chan struct{}   // closed when feed returns
	rest   []byte          // what feed read of src and put in no chunk, once fed is closed
	wg     sync.WaitGroup  // the chunk goroutines

	cur       *unitChunk
	blk       *[]byte // the decoded block being read, and what of it is left
	left      []byte
	delivered int64     // decoded bytes of cur returned by Read
	done      int64     // decoded bytes of the chunks before cur
	seq       io.Reader // the rest read on one decoder: the last chunk, or after a failed one
	err       error
	closed    bool
}

// unitChunk is a run of whole units of the span, cut at proven unit starts.
type unitChunk struct {
	start  int64  // stored offset of its first byte
	stored []byte // its stored bytes; for the last chunk, what feed read of them
	last   bool   // the last chunk: its units run to the span's end, and past it when more
	out    chan *[]byte
	err    error // why decoding stopped short of the chunk's end; read once out is closed
}

// feed reads the span's stored bytes from src and cuts them into chunks, starting a
// goroutine for each but the last, which Read decodes as it streams from src.
func (u *parallelUnits) feed() {
	defer close(u.fed)
	defer close(u.chunks)
	pos, end := u.start, u.start+u.own
	var buf []byte
	proof := chunkProofSlack
	for {
		want := u.cfg.Chunk + u.cfg.Search + proof
		if end-pos <= int64(want) {
			u.sendLast(pos, buf)
			return
		}
		if len(buf) < want {
			if cap(buf) < want {
				buf = append(make([]byte, 0, want), buf...)
			}
			k, err := io.ReadFull(u.src, buf[len(buf):want])
			buf = buf[:len(buf)+k]
			if err != nil {
				// The source failed or ended early: the last chunk's read reports it.
				u.sendLast(pos, buf)
				return
			}
		}
		off, found := FindUnitIn(u.comp, buf[u.cfg.Chunk:], u.cfg.Search, u.cfg.MaxWindow)
		if !found {
			u.sendLast(pos, buf)
			return
		}
		cut := u.cfg.Chunk + int(off)
		c := &unitChunk{start: pos, stored: buf[:cut:cut], out: make(chan *[]byte, max(u.cfg.OutBytes/outBlockBytes, 1))}
		next := append(make([]byte, 0, want), buf[cut:]...) // c keeps buf
		u.wg.Add(1)
		go u.decode(c)
		if !u.send(c) {
			u.rest = buf // c's bytes and the next chunk's
			return
		}
		buf, pos = next, pos+int64(cut)
	}
}

// send queues c for Read, reporting false if the stream was stopped first.
func (u *parallelUnits) send(c *unitChunk) bool {
	select {
	case u.chunks <- c:
		return true
	case <-u.stop:
		return false
	}
}

// sendLast queues the last chunk, from stored offset pos, of which feed read buf.
func (u *parallelUnits) sendLast(pos int64, buf []byte) {
	if !u.send(&unitChunk{start: pos, stored: buf, last: true}) {
		u.rest = buf
	}
}

// decode decodes chunk c, which must end exactly at its last byte, into blocks.
func (u *parallelUnits) decode(c *unitChunk) {
	defer u.wg.Done()
	defer close(c.out)
	d := u.cfg.Get()
	defer u.cfg.Put(d)
	s, err := d.OpenUnits(u.comp, bytes.NewReader(c.stored), c.start, int64(len(c.stored)), false)
	for err == nil {
		bp := outBlocks.Get().(*[]byte)
		b, n := *bp, 0
		for n < len(b) && err == nil {
			var k int
			k, err = s.Read(b[n:])
			n += k
		}
		if n == 0 {
			outBlocks.Put(bp)
			break
		}
		*bp = b[:n]
		select {
		case c.out <- bp:
		case <-u.stop:
			*bp = b
			outBlocks.Put(bp)
			return
		}
	}
	if err != io.EOF {
		c.err = err
	}
}

func (u *parallelUnits) Read(p []byte) (int, error) {
	for {
		if u.err != nil {
			return 0, u.err
		}
		if u.seq != nil {
			return u.seq.Read(p)
		}
		if len(u.left) > 0 {
			n := copy(p, u.left)
			u.left = u.left[n:]
			u.delivered += int64(n)
			if len(u.left) == 0 {
				*u.blk = (*u.blk)[:cap(*u.blk)]
				outBlocks.Put(u.blk)
				u.blk = nil
			}
			return n, nil
		}
		if u.cur == nil {
			c, ok := <-u.chunks
			if !ok {
				u.err = io.ErrUnexpectedEOF // feed always sends a last chunk; never reached
				continue
			}
			if u.cfg.Checkpoints != nil && c.start > u.start {
				// The chunk before ended exactly here: a unit starts on this byte.
				u.cfg.Checkpoints.add(Checkpoint{Stored: c.start, Decoded: u.cfg.Base + u.done, Unit: true})
			}
			if c.last {
				u.seq, u.err = u.sequential(c, 0)
				continue
			}
			u.cur, u.delivered = c, 0
		}
		if bp, ok := <-u.cur.out; ok {
			u.blk, u.left = bp, *bp
			continue
		}
		if u.cur.err != nil {
			// The chunk did not decode to its end: read on from its start on one decoder.
			u.seq, u.err = u.sequential(u.cur, u.delivered)
			continue
		}
		u.done += u.delivered
		u.cur = nil
	}
}

// sequential stops the chunks and returns the span's decoded stream from chunk c's
// start on, over the bytes of c and of every chunk after it, then src, past its first skip
// decoded bytes (those Read returned already).
func (u *parallelUnits) sequential(c *unitChunk, skip int64) (io.Reader, error) {
	parts := [][]byte{c.stored}
	if !c.last {
		close(u.stop)
		<-u.fed // before Wait: feed adds to wg
		u.wg.Wait()
		c.drop()
		for next := range u.chunks {
			parts = append(parts, next.stored)
			next.drop()
		}
		parts = append(parts, u.rest)
	}
	readers := make([]io.Reader, 0, len(parts)+1)
	for _, b := range parts {
		if len(b) > 0 {
			readers = append(readers, bytes.NewReader(b))
		}
	}
	readers = append(readers, u.src)
	s, err := u.d.OpenUnits(u.comp, io.MultiReader(readers...), c.start, u.start+u.own-c.start, u.more)
	if err != nil {
		return nil, err
	}
	if skip > 0 {
		if _, err := io.CopyN(io.Discard, s, skip); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return s, nil
}

// Close stops the chunk goroutines and returns their blocks; the stream must not be read
// after it.
func (u *parallelUnits) Close() error {
	if u.closed {
		return nil
	}
	u.closed = true
	select {
	case <-u.stop:
	default:
		close(u.stop)
	}
	<-u.fed // before Wait: feed adds to wg
	u.wg.Wait()
	for c := range u.chunks {
		c.drop()
	}
	if u.cur != nil {
		u.cur.drop()
	}
	if u.blk != nil {
		*u.blk = (*u.blk)[:cap(*u.blk)]
		outBlocks.Put(u.blk)
		u.blk, u.left = nil, nil
	}
	return nil
}

// drop returns the blocks c decoded and no one read; only once its goroutine is done.
func (c *unitChunk) drop() {
	if c.out == nil {
		return
	}
	for bp := range c.out {
		*bp = (*bp)[:cap(*bp)]
		outBlocks.Put(bp)
	}
}
