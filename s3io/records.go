package s3io

import (
	"errors"
	"fmt"
	"io"
)

// ErrRecordTooLarge reports a record longer than Config.MaxRecordBytes.
var ErrRecordTooLarge = errors.New("s3io: record exceeds Config.MaxRecordBytes")

// slabBytes is the size of the buffers records are read into and carved from. Records are
// sub-slices of slabs that are never written again once a record in them was handed out, so
// emitting a record costs no allocation and no copy; a slab is freed when the last record
// kept from it is.
const slabBytes = 256 << 10

// maxFramingOverhead is how many bytes beyond MaxRecordBytes a framer may need to see to
// find a record's end (a CRLF, a length prefix).
const maxFramingOverhead = 8

// recordReader drives a RecordFramer over a stream, like bufio.Scanner, with bounded memory
// and without copying records out of its buffer.
type recordReader struct {
	src       io.Reader
	framer    RecordFramer
	maxRecord int

	buf        []byte // current slab; buf[start:end] is read but not yet consumed
	start, end int
	eof        bool
	offset     int64 // stream offset of buf[start]
}

func newRecordReader(src io.Reader, framer RecordFramer, maxRecord int) *recordReader {
	return &recordReader{src: src, framer: framer, maxRecord: maxRecord}
}

// next returns the next record and the stream offset where its framing begins (a length
// prefix, or the line itself), or io.EOF at the end of the stream. The record stays valid (and unchanged) for as long as the caller keeps it.
func (r *recordReader) next() (rec []byte, offset int64, err error) {
	for {
		if r.end > r.start || r.eof {
			adv, tok, ferr := r.framer.Frame(r.buf[r.start:r.end], r.eof)
			if ferr != nil {
				return nil, r.offset, ferr
			}
			if adv < 0 || adv > r.end-r.start {
				return nil, r.offset, fmt.Errorf("s3io: framer advanced %d bytes with %d available", adv, r.end-r.start)
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
func (r *recordReader) fill() error {
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
	switch {
	case err == io.EOF:
		r.eof = true
	case err != nil:
		return err
	case n == 0:
		// A reader returning 0, nil is allowed; io.ReadFull-style callers retry, and so do we.
	}
	return nil
}
