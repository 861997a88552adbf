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
	}
	return nil
}

// SkipPastNewline consumes the stream through its next LF: a segment's reader, placed on the
// byte before the segment, uses it to reach the first record that starts in the segment.
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
		nb := make([]byte, size)
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
