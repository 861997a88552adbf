package decode

import (
	"bytes"
	"fmt"
)

// utf8BOM is the byte order mark Excel and other Windows tools write at the start of a
// UTF-8 text file. It is not data, so the csv and json-array framers skip it.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// bomSkipper consumes a UTF-8 BOM at the very start of a framer's stream (Excel and some
// exporters write one); csv and json-array embed it.
type bomSkipper struct {
	started bool // the stream's first bytes were checked for a BOM
}

// skip reports whether Frame must return now, consuming n bytes (3 for a BOM, 0 when data
// is a proper prefix of one and more is coming), before it looks at data itself.
func (b *bomSkipper) skip(data []byte, atEOF bool) (n int, ret bool) {
	if b.started {
		return 0, false
	}
	if !atEOF && len(data) < len(utf8BOM) && bytes.HasPrefix(utf8BOM, data) {
		return 0, true
	}
	b.started = true
	if bytes.HasPrefix(data, utf8BOM) {
		return len(utf8BOM), true
	}
	return 0, false
}

// NewCSVFramer returns a framer of RFC 4180 records, registered as "csv": each record is
// its raw bytes, quotes and all, so that the caller's own CSV parser (with its own dialect
// and field types) parses it, while s3io only has to know where a record ends — which,
// because quoted fields may hold newlines, a line framer gets wrong.
//
// The rules, chosen to match what real files contain rather than what RFC 4180 allows:
//
//   - A record ends at an LF outside quotes; one CR before that LF is dropped, as is one CR
//     at the very end of the object. A last record without a newline is a record.
//   - Empty lines (no bytes, or just a CR) hold no record and are skipped, as encoding/csv
//     skips them; a line of spaces is a record.
//   - A double quote opens a quoted field only at the start of a field (the record's first
//     byte, or right after a ','). Elsewhere it is an ordinary byte, as encoding/csv's
//     LazyQuotes reads it, because files hold unquoted fields such as 5'11".
//   - In a quoted field "" is an escaped quote. A closing quote followed by anything but
//     ',', CR, LF or the end of the object is not an error: the field goes on as an unquoted
//     one (a later quote in it is an ordinary byte). A record is therefore never refused for
//     its quoting, except for the one error below.
//   - A UTF-8 byte order mark in the first bytes the framer sees is skipped (Excel writes
//     one); it is not part of the first record. A framer resumed mid-object would skip one
//     there too, but no record starts with a BOM in practice.
//   - An object that ends inside a quoted field fails with an error wrapping
//     ErrTruncatedRecord that names the byte where the field's quote opened. Byte offsets
//     count from where the framer started, which is the object's first byte unless the
//     reader resumed mid-object.
//
// The csv framer is not self-synchronizing: a quote seen mid-object does not say whether it
// opens or closes a field, so a reader cannot start at an arbitrary byte. Between records
// its state is empty, though, so a reader may resume at any record boundary it was given as
// a byte offset (see ResumableAtOffset).
func NewCSVFramer() Framer { return &csvFramer{} }

// csvFramer holds, besides the stream offset, where the scan of a record that did not fit
// in the data of the last call stopped: the next call's data starts at the same record, so
// the scan resumes there instead of rescanning a long record on every refill.
type csvFramer struct {
	pos int64 // stream offset of the data of the next call, counted from the framer's start
	bomSkipper

	// The scan of the pending record, valid only while Frame returns (0, nil, nil).
	scanned int  // bytes of the record scanned
	inQuote bool // the scan stopped inside a quoted field
	quoteAt int  // offset in the record of the quote that opened that field
}

// Frame finds the end of the record data starts with by jumping from LF to LF and from
// quote to quote with bytes.IndexByte, and looks at single bytes only around quotes: a CSV
// record of ordinary fields then costs two vectorized scans.
func (f *csvFramer) Frame(data []byte, atEOF bool) (int, []byte, error) {
	if n, ret := f.skip(data, atEOF); ret {
		f.pos += int64(n)
		return n, nil, nil
	}
	i, inQuote, quoteAt := f.scanned, f.inQuote, f.quoteAt
	if i > len(data) {
		// Data must restart at the pending record with at least what was seen: scan anew
		// rather than index out of range if a caller broke that.
		i, inQuote = 0, false
	}
	nl := -1 // index of the first LF at or after i outside quotes, once looked for
	for {
		if inQuote {
			q := bytes.IndexByte(data[i:], '"')
			if q < 0 {
				i = len(data)
				break
			}
			c := i + q
			if c+1 == len(data) {
				if atEOF {
					return f.emit(data, len(data), len(data))
				}
				// Whether this quote closes the field or starts a "" is in the next byte.
				i = c
				break
			}
			if data[c+1] == '"' {
				i = c + 2
				continue
			}
			inQuote, i = false, c+1
			continue
		}
		if nl < i {
			if n := bytes.IndexByte(data[i:], '\n'); n >= 0 {
				nl = i + n
			} else {
				nl = len(data)
			}
		}
		// A quote before the end of the line opens a field if it starts one.
		if p := openingQuote(data, i, nl); p >= 0 {
			inQuote, quoteAt, i = true, p, p+1
			continue
		}
		if nl < len(data) {
			return f.emit(data, nl, nl+1)
		}
		if atEOF {
			return f.emit(data, len(data), len(data))
		}
		i = len(data)
		break
	}
	return f.wait(i, inQuote, quoteAt, atEOF)
}

// openingQuote returns the index of the first quote in data[from:to] that opens a field
// (at the start of data or after a comma), or -1.
func openingQuote(data []byte, from, to int) int {
	for seg := from; seg < to; {
		q := bytes.IndexByte(data[seg:to], '"')
		if q < 0 {
			return -1
		}
		p := seg + q
		if p == 0 || data[p-1] == ',' {
			return p
		}
		seg = p + 1
	}
	return -1
}

// wait ends a Frame that found no whole record: it keeps how far data was scanned, and
// the quote state there, for the next call, which gets the same data and more; at the end
// of the object, a quoted field still open is a truncated record.
func (f *csvFramer) wait(i int, inQuote bool, quoteAt int, atEOF bool) (int, []byte, error) {
	if atEOF {
		if inQuote {
			return 0, nil, fmt.Errorf("%w: csv: the object ends inside a quoted field that opened at byte %d", ErrTruncatedRecord, f.pos+int64(quoteAt))
		}
		return 0, nil, nil // no data left
	}
	f.scanned, f.inQuote, f.quoteAt = i, inQuote, quoteAt
	return 0, nil, nil
}

// emit returns the record data[:end] without one trailing CR, consuming adv bytes; an empty
// line consumes its bytes without a record.
func (f *csvFramer) emit(data []byte, end, adv int) (int, []byte, error) {
	f.scanned, f.inQuote, f.quoteAt = 0, false, 0
	f.pos += int64(adv)
	if end > 0 && data[end-1] == '\r' {
		end--
	}
	if end == 0 {
		return adv, nil, nil
	}
	return adv, data[:end:end], nil
}
