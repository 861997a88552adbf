package decode

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
)

// Framer cuts a decompressed byte stream into records, as s3io.RecordFramer documents (it
// has the same method set, so every s3io.RecordFramer is a Framer).
type Framer interface {
	Frame(data []byte, atEOF bool) (advance int, record []byte, err error)
}

// FramerFunc adapts a stateless function to Framer.
type FramerFunc func(data []byte, atEOF bool) (advance int, record []byte, err error)

// Frame calls f.
func (f FramerFunc) Frame(data []byte, atEOF bool) (int, []byte, error) { return f(data, atEOF) }

// ErrTruncatedRecord reports an object that ends inside a record whose length was declared,
// such as a u32be record cut short.
var ErrTruncatedRecord = errors.New("s3io: object ends inside a record")

// Builtins returns the constructors of the built-in framers by name.
func Builtins() map[string]func() Framer {
	return map[string]func() Framer{
		"lines":      func() Framer { return FramerFunc(FrameLines) },
		"ndjson":     func() Framer { return FramerFunc(FrameNDJSON) },
		"u32be":      func() Framer { return FramerFunc(FrameU32BE) },
		"csv":        NewCSVFramer,
		"json-array": NewJSONArrayFramer,
	}
}

// ResumableAtOffset reports whether a fresh built-in framer named name, started at a record
// boundary given only as a byte offset, frames the rest of the object as one started at the
// object's first byte would: its state between records is empty. Such a read can resume
// where an earlier one stopped; any other must re-frame from the object's start and skip
// the records already emitted. json-array is not resumable: at a record boundary it is
// inside the top-level array, which a fresh framer cannot know.
func ResumableAtOffset(name string) bool {
	switch name {
	case "lines", "ndjson", "u32be", "csv":
		return true
	}
	return false
}

// FrameLines yields LF-terminated lines without the LF and without one trailing CR, as
// bufio.ScanLines does. A last line without a newline is a record; an empty object has
// none. A record's capacity ends with it, so that a downstream append reallocates instead
// of writing over the next record.
func FrameLines(data []byte, atEOF bool) (int, []byte, error) {
	adv, tok, err := bufio.ScanLines(data, atEOF)
	if tok != nil {
		tok = tok[:len(tok):len(tok)]
	}
	return adv, tok, err
}

// FrameNDJSON is FrameLines without blank lines, which NDJSON producers often leave between
// documents and which no decoder wants.
func FrameNDJSON(data []byte, atEOF bool) (int, []byte, error) {
	n, rec, err := FrameLines(data, atEOF)
	if rec != nil && isBlank(rec) {
		return n, nil, err
	}
	return n, rec, err
}

// FrameU32BE yields records prefixed by their length as a 4-byte big-endian integer.
func FrameU32BE(data []byte, atEOF bool) (int, []byte, error) {
	if len(data) >= 4 {
		n := binary.BigEndian.Uint32(data)
		if end := 4 + uint64(n); uint64(len(data)) >= end {
			return int(end), data[4:end:end], nil
		}
	}
	if atEOF && len(data) > 0 {
		return 0, nil, fmt.Errorf("%w: %d trailing bytes do not hold the length-prefixed record they start", ErrTruncatedRecord, len(data))
	}
	return 0, nil, nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
