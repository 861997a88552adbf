package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrRecordTooLarge reports a record longer than the reader's limit.
var ErrRecordTooLarge = errors.New("s3io: record exceeds Config.MaxRecordBytes")

// ErrFramer marks an object its framer could not cut into records.
var ErrFramer = errors.New("s3io: framing failed")

// slabBytes is the size of the buffers records are read into and carved from. Records are
// sub-slices of slabs that are never written again once a record in them was handed out, so
// emitting a record costs no allocation and no copy; a slab is freed when the last record
// kept from it is.
const slabBytes = 256 << 10

// freeSlabs holds slabs handed back with ReleaseSlabs, at most 8 MiB of them. Not a
// sync.Pool: a batched read allocates about a byte per byte it reads, so the collector runs
// every few tens of MB, and a pool emptied at every collection would hand back almost
// nothing.
var freeSlabs = make(chan []byte, 32)

// ReleaseSlabs hands back slabs a Batch retired, once no record in them is used any more.
func ReleaseSlabs(slabs [][]byte) {
	for _, s := range slabs {
		select {
		case freeSlabs <- s:
		default:
			return
		}
	}
}

// maxFramingOverhead is how many bytes beyond the record limit a framer may need to see to
// find a record's end (a CRLF, a length prefix).
const maxFramingOverhead = 8

// RecordReader drives a Framer over a stream, like bufio.Scanner, with bounded memory
// and without copying records out of its buffer.
type RecordReader struct {
	src       io.Reader
	framer    Framer
	maxRecord int

	buf        []byte // current slab; buf[start:end] is read but not yet consumed
	start, end int
	eof        bool
	offset     int64 // stream offset of buf[start]
	base       int64 // stream offset of the first byte

	// An archive's entries are framed one after another, each by a framer of its own, as
	// one stream: offsets and record indexes run on across entries.
	entries   Entries
	newFramer func() Framer
	entry     string // the current entry's name; "" outside archives

	// recycle, when set, keeps the slabs the reader moved past in retired instead of
	// leaving them to the garbage collector, and takes new ones from slabPool: for a
	// consumer that copies every record out (ReadBatches), which hands them back with
	// ReleaseSlabs once it has.
	recycle bool
	retired [][]byte

	skipHeader int // records dropped at the start of the stream and of each entry
	headerLeft int // of the current stream or entry
	// HeadersSkipped counts the records SkipHeaders dropped.
	HeadersSkipped int64
}

// Entry is one regular file of an archive, in archive order.
type Entry struct {
	Name string
	R    io.Reader // its decoded bytes
}

// Entries yields an archive's regular files in archive order; Next returns io.EOF after
// the last.
type Entries interface {
	Next() (Entry, error)
}

// NewEntriesRecordReader frames each of entries in turn with a framer of its own from
// newFramer, as one stream starting at offset 0.
func NewEntriesRecordReader(entries Entries, newFramer func() Framer, maxRecord int) *RecordReader {
	return &RecordReader{src: eofReader{}, eof: true, framer: newFramer(), maxRecord: maxRecord, entries: entries, newFramer: newFramer}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// SkipHeaders drops the first n records of the stream and of every entry of an archive
// (Config.SkipHeaderRecords). Call it before reading, and only when the read starts at the
// stream's start: a read that starts later is past the header already.
func (r *RecordReader) SkipHeaders(n int) { r.skipHeader, r.headerLeft = n, n }

// Entry names the archive entry of the record Next returned last; "" outside archives.
func (r *RecordReader) Entry() string { return r.entry }

// nextEntry moves to the archive's next entry, dropping what the framer left of the
// current one at its end. It reports false after the last entry.
func (r *RecordReader) nextEntry() (bool, error) {
	if r.entries == nil {
		return false, nil
	}
	e, err := r.entries.Next()
	if err == io.EOF {
		r.entries = nil
		return false, nil
	}
	if err != nil {
		return false, err
	}
	r.offset += int64(r.end - r.start)
	r.start = r.end
	r.src, r.eof, r.framer, r.entry, r.headerLeft = e.R, false, r.newFramer(), e.Name, r.skipHeader
	return true, nil
}

// NewRecordReader frames src, whose first byte is at stream offset base, failing on a
// record longer than maxRecord.
func NewRecordReader(src io.Reader, framer Framer, maxRecord int, base int64) *RecordReader {
	return &RecordReader{src: src, framer: framer, maxRecord: maxRecord, offset: base, base: base}
}

// Discard skips the stream up to offset to without framing it: resuming a compressed member
// at a known record boundary costs decompression, but no framing.
func (r *RecordReader) Discard(to int64) error {
	for r.offset < to {
		if r.end == r.start {
			if r.eof {
				if more, err := r.nextEntry(); err != nil || more {
					if err != nil {
						return err
					}
					continue
				}
				return fmt.Errorf("s3io: the stream ends at byte %d, before the resume point %d", r.offset, to)
			}
			// Nothing is handed out yet, so the slab can be refilled from its start.
			r.start, r.end = 0, 0
			if err := r.fill(); err != nil {
				return err
			}
			continue
		}
		n := int(min(int64(r.end-r.start), to-r.offset))
		r.start += n
		r.offset += int64(n)
		r.headerLeft = 0 // the resume point is past the header of the entry it is in
	}
	return nil
}

// SkipPastNewline consumes the stream through its next LF: a read of the caller's range,
// placed on the byte before it, uses it to reach the first record that starts in the range.
func (r *RecordReader) SkipPastNewline() error {
	for {
		if i := bytes.IndexByte(r.buf[r.start:r.end], '\n'); i >= 0 {
			r.start += i + 1
			r.offset += int64(i + 1)
			return nil
		}
		r.offset += int64(r.end - r.start)
		r.start, r.end = 0, 0
		if r.eof {
			return nil
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// Next returns the next record and the stream offset where its framing begins (a length
// prefix, or the line itself), or io.EOF at the end of the stream. The record stays valid
// (and unchanged) for as long as the caller keeps it.
func (r *RecordReader) Next() (rec []byte, offset int64, err error) {
	for {
		if r.end > r.start || r.eof {
			adv, tok, ferr := r.framer.Frame(r.buf[r.start:r.end], r.eof)
			if ferr != nil {
				return nil, r.offset, fmt.Errorf("%w at byte %d: %w", ErrFramer, r.offset, ferr)
			}
			if adv < 0 || adv > r.end-r.start {
				return nil, r.offset, fmt.Errorf("%w: it advanced %d bytes with %d available", ErrFramer, adv, r.end-r.start)
			}
			if tok != nil {
				if len(tok) > r.maxRecord {
					return nil, r.offset, fmt.Errorf("%w: a record of %d bytes exceeds the limit of %d", ErrRecordTooLarge, len(tok), r.maxRecord)
				}
				off := r.offset
				r.start += adv
				r.offset += int64(adv)
				if r.headerLeft > 0 {
					r.headerLeft--
					r.HeadersSkipped++
					continue
				}
				// Cap the record so that a downstream append reallocates instead of writing
				// over the next record, whatever the framer returned.
				return tok[:len(tok):len(tok)], off, nil
			}
			if adv > 0 {
				r.start += adv
				r.offset += int64(adv)
				continue
			}
			if r.eof {
				more, err := r.nextEntry()
				if err != nil {
					return nil, r.offset, err
				}
				if more {
					continue
				}
				return nil, r.offset, io.EOF
			}
		}
		if err := r.fill(); err != nil {
			return nil, r.offset, err
		}
	}
}

// fill reads more of the stream, moving the unconsumed tail to a fresh slab when the current
// one is full. It never writes below r.end of a slab, where handed-out records may live.
func (r *RecordReader) fill() error {
	pending := r.end - r.start
	if r.end == len(r.buf) {
		if pending > r.maxRecord+maxFramingOverhead {
			return fmt.Errorf("%w: no record ends within %d bytes (limit %d)", ErrRecordTooLarge, pending, r.maxRecord)
		}
		size := slabBytes
		for size < 2*pending {
			size *= 2
		}
		if limit := r.maxRecord + maxFramingOverhead + 1; size > limit && limit > pending {
			size = max(limit, slabBytes)
		}
		var nb []byte
		if r.recycle && size == slabBytes {
			select {
			case nb = <-freeSlabs:
			default:
			}
			if len(r.buf) == slabBytes {
				r.retired = append(r.retired, r.buf)
			}
		}
		if nb == nil {
			nb = make([]byte, size)
		}
		copy(nb, r.buf[r.start:r.end])
		r.buf, r.start, r.end = nb, 0, pending
	}
	n, err := r.src.Read(r.buf[r.end:])
	r.end += n
	// A reader may return 0, nil; the caller's loop simply reads again.
	if err == io.EOF {
		r.eof = true
		return nil
	}
	return err
}
