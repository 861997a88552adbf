package member

import (
	"io"
	"sync"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// Batch is a batch of framed records of one read, in order (decode.Batch).
type Batch = decode.Batch

// ReleaseSlabs hands back the slabs a batch retired (Batch.Retired), once every record in
// them was copied out: a reader started with RecycleSlabs reuses them.
func ReleaseSlabs(slabs [][]byte) { decode.ReleaseSlabs(slabs) }

// Reader is what one DoFn instance reads members with: its settings, the decoders its reads
// are done with (a zstd decoder's buffers are worth reusing), and the part budget a slow
// decoder borrows from. Set the exported fields before the first Start.
type Reader struct {
	NewFramer         func() decode.Framer
	Compression       string // how a whole object is decoded: Config.Compression
	MaxRecordBytes    int
	SkipHeaderRecords int
	// CheckpointBytes is the stored bytes between two inflate checkpoints a gzip read logs;
	// 0 logs none.
	CheckpointBytes       int64
	MaxDecoderWindowBytes int64
	// WindowBytes is what a read frames ahead of the records taken from it.
	WindowBytes int
	// Budget is the instance's part budget, of which a slow decoder borrows up to
	// BudgetBytes (the most it holds), less a quarter of its limit that it keeps free for
	// the parts of the object being emitted.
	Budget      *fetch.Budget
	BudgetBytes int64
	// RecycleSlabs is set when every record is copied out of its batch before it is used
	// (ReleaseSlabs): the slabs are then reused instead of left to the garbage collector.
	RecycleSlabs bool

	mu   sync.Mutex
	decs []*decode.Decompressors
}

// Read is one member being read: its decoding and framing run on a goroutine of their own,
// started before the member's records are claimed, so that decompression overlaps the
// emitter's per-record work instead of following it.
type Read struct {
	frames *decode.Framing
	src    *fetch.Stream
	dec    *decode.Decompressors
	log    *Log
	// units, set by the framing goroutine, stops the chunk goroutines of a units read once
	// framing has stopped.
	units io.Closer
	// storedOffsets, set by the framing goroutine before it sends the first batch, is
	// true when record offsets are also byte offsets in the object.
	storedOffsets bool
	// base is the offset of the member's records where decoding starts, and skipTo the
	// offset decoded unframed from there: what lies between, and the records skipped
	// after, was decoded again to reach the restriction's first record.
	base, skipTo int64
}

// opening is what a kind of read opens its record reader with.
type opening struct {
	r    *Reader
	read *Read
	plan Plan
	src  *fetch.Stream
	of   *fetch.ObjectFetch

	// What open found, on the framing goroutine before the first batch: the codec of a
	// read whole, and whether it is an archive.
	comp    decode.Compression
	archive bool
}

// Start starts reading p from the bytes of of, which fetches p.FetchRange().
func (r *Reader) Start(p Plan, of *fetch.ObjectFetch) *Read {
	k := p.kind()
	src := of.Stream()
	rd := &Read{src: src, dec: r.getDecoders(), log: k.log(r)}
	rd.base, rd.skipTo = k.start()
	op := &opening{r: r, read: rd, plan: p, src: src, of: of}
	credit := partCredit{budget: r.Budget, keep: r.Budget.Limit() / 4}
	rd.frames = decode.StartFraming(decode.FramingSource{
		Open: func() (*decode.RecordReader, error) {
			recs, err := k.open(op)
			rd.storedOffsets = k.storedOffsets(op)
			return recs, err
		},
		Consumed: src.Consumed, Cancel: of.Cancel, StopAt: k.stopAt(), RecycleSlabs: r.RecycleSlabs,
		End: func() error {
			// A read decoded in chunks has its stream read by a feeder goroutine, which may
			// still be reading ahead: stopped first (every record is framed), so that End
			// reads the stream alone.
			if rd.units != nil {
				rd.units.Close()
			}
			return src.End()
		},
		Credit: func() decode.Credit {
			if k.borrows(op) {
				return credit
			}
			return nil
		},
	}, r.WindowBytes, r.BudgetBytes-credit.keep)
	return rd
}

// Next returns the next batch of records; the last carries Err (io.EOF at the end).
func (rd *Read) Next() *Batch { return rd.frames.Next() }

// Ready reports whether a batch is framed and waiting.
func (rd *Read) Ready() bool { return rd.frames.Ready() }

// Recycle gives b back for framing to refill: its records' bytes stay valid.
func (rd *Read) Recycle(b *Batch) { rd.frames.Recycle(b) }

// StoredOffsets reports whether the offsets of the records the read returned are also byte
// offsets in the object (it is stored uncompressed), so that a residual can fetch from a
// record's end. Valid once Next has returned a batch.
func (rd *Read) StoredOffsets() bool { return rd.storedOffsets }

// Log returns the resume points the read keeps; nil when it keeps none.
func (rd *Read) Log() *Log { return rd.log }

// Base returns the stream offset where the read's decoding starts: batches' Ends run on
// from it, and Finish's decoded bytes count from it.
func (rd *Read) Base() int64 { return rd.base }

// Redecoded returns the decoded bytes the read went through again to reach its first
// record, given the end of the last record it skipped (0 if none).
func (rd *Read) Redecoded(skippedEnd int64) int64 { return max(skippedEnd, rd.skipTo) - rd.base }

// Finish stops the read's goroutines, drops what it fetched and did not use, gives its
// decoders to back, and returns the bytes it decoded and the header records it skipped.
func (rd *Read) Finish(back *Reader) (decoded, headersSkipped int64) {
	rd.frames.Stop()
	if rd.units != nil {
		rd.units.Close()
	}
	rd.src.Close()
	rd.dec.Checkpoints = nil
	back.putDecoders(rd.dec)
	return rd.frames.Decoded(), rd.frames.HeadersSkipped()
}

// Close closes the idle decoders.
func (r *Reader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.decs {
		d.Close()
	}
	r.decs = nil
}

func (r *Reader) getDecoders() *decode.Decompressors {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.decs); n > 0 {
		d := r.decs[n-1]
		r.decs = r.decs[:n-1]
		return d
	}
	return &decode.Decompressors{MaxWindow: r.MaxDecoderWindowBytes}
}

func (r *Reader) putDecoders(d *decode.Decompressors) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decs = append(r.decs, d)
}

// inflateLog is the log of a read that may inflate a gzip stream: a checkpoint every
// CheckpointBytes, as many kept as span its decoding window (which runs ahead of the last
// claimed record; a window's decoded bytes are at most as many stored ones) plus the one
// before it. With four, a reader whose emitting fell behind a full window (a loaded
// machine) at 256 KiB between checkpoints had dropped the one its split needed, and the
// residual decoded the object again from its start.
func (r *Reader) inflateLog() *Log {
	if r.CheckpointBytes <= 0 {
		return nil
	}
	keep := max(4, int(int64(r.WindowBytes)/r.CheckpointBytes)+2)
	return &Log{c: decode.Checkpoints{Every: r.CheckpointBytes, Keep: keep}}
}

// partCredit lends a slow decoder the part budget it does not need for parts, keeping keep
// bytes free so that the object being emitted always finds room for its next part.
type partCredit struct {
	budget *fetch.Budget
	keep   int64
}

func (c partCredit) Reserve(n int64) bool { return c.budget.Reserve(n, c.keep) }
func (c partCredit) Release(n int64)      { c.budget.Release(n) }
