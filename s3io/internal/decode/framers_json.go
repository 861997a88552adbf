package decode

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// NewJSONArrayFramer returns a framer, registered as "json-array", whose records are the
// elements of a top-level JSON array, as their raw bytes without surrounding whitespace or
// commas: an array of a million events is one JSON document that no line framer can cut,
// and decoding it whole would hold it all in memory.
//
// When the top-level value is an object, the records are the elements of its first
// array-valued member, which is where CloudTrail and AWS Config put their events
// ({"Records":[{...},{...}]}). The members before it and everything after it, up to the
// object's closing brace, are skipped however large they are: the framer consumes them as
// it scans, so they need not fit in a buffer. An object without an array-valued member
// yields no records. The object may hold several top-level values one after another (as
// concatenated documents do), each read the same way. A UTF-8 byte order mark at the start
// of the stream is skipped, as the csv framer skips it.
//
// The framer checks the structure as it goes, so that a damaged object fails instead of
// yielding wrong records: brackets and braces balanced and matched by kind, ':' and ','
// where the grammar wants them and no trailing commas at every level, strings terminated,
// without raw control characters and with valid escapes, numbers and true/false/null
// spelled as JSON spells them, and nesting at most 10000 deep (encoding/json's limit).
// Every record is therefore valid JSON on its own. Malformed input fails with an error that
// wraps ErrCorrupt and names the byte and what was expected there; an object that ends
// inside its document fails with one that wraps ErrTruncatedRecord. A top-level scalar is
// malformed: it has no elements. Byte offsets count from where the framer started, the
// object's first byte.
//
// The framer is neither self-synchronizing nor resumable at a byte offset: whether a byte
// is inside the top-level array, and at what depth, depends on everything before it, so a
// reader that must resume re-frames the object from its start and skips the records it
// already emitted (see ResumableAtOffset).
func NewJSONArrayFramer() Framer { return &jsonArrayFramer{} }

// jsonMaxDepth bounds nesting as encoding/json does, so that every record is one
// json.Unmarshal accepts and a hostile object cannot grow the stack without bound.
const jsonMaxDepth = 10000

// Scanner states. The scan is a byte-at-a-time state machine so that it can stop at any
// byte where the data ends and resume there on the next call. Each state's method is in
// framers_json_scan.go.
const (
	jTop        uint8 = iota // between top-level values
	jValue                   // a value must follow (after ':' or an array's ',')
	jValueOrEnd              // after '[': a value or ']'
	jKeyOrEnd                // after '{': a key or '}'
	jKey                     // after an object's ',': a key
	jColon                   // after a key
	jCommaOrEnd              // after a value in a container
	jString                  // inside a string; key tells whether it is an object key
	jEscape                  // after a backslash in a string
	jHex                     // inside \uXXXX, with hex digits still to come
	jLiteral                 // inside true, false or null, with lit still to come
	jNumMinus                // after a number's '-'
	jNumZero                 // after a number's leading 0
	jNumInt                  // in a number's integer digits
	jNumDot                  // after a number's '.'
	jNumFrac                 // in a number's fraction digits
	jNumE                    // after a number's 'e' or 'E'
	jNumESign                // after the exponent's sign
	jNumExp                  // in a number's exponent digits

	// Pseudo-states, which a state's method returns for Frame to act on; they are never
	// saved in f.state.
	jSplit // a record starts at the index returned, after bytes to consume on their own
	jDone  // a value ended just before the index returned
)

// jsonArrayFramer is a validating JSON scanner over the whole stream that hands out the
// values found at the depth of the chosen array. Outside a record it consumes every byte it
// scanned; inside one it cannot (a record must be contiguous), so it remembers how far into
// the record it got and resumes there when the data comes back with more behind it.
type jsonArrayFramer struct {
	pos int64 // stream offset of the data of the next call
	bomSkipper

	state  uint8
	key    bool   // the string being scanned is an object key
	hex    uint8  // hex digits of a \u escape still to come
	lit    string // bytes of a literal still to come
	stack  []byte // the open containers, '[' or '{', outermost first
	target int    // depth of the array whose elements are records (1 or 2); 0: none yet
	found  bool   // the current top-level object's array was chosen already

	inRecord bool // the data starts with a record not yet complete
	resume   int  // bytes of that record already scanned
}

// jsonSpace marks the whitespace JSON allows between tokens.
var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// jsonStrSpecial marks the bytes that end the fast scan of a string: its closing quote, an
// escape, and the control characters JSON forbids in strings.
var jsonStrSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

var jsonHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// stringSpecial returns the index of the first byte at or after i that ends the fast scan
// of a string, or len(data). It tests 8 bytes at a time, 16 per round: a string's bytes are
// most of a JSON document's, and most strings are too short for bytes.IndexByte to pay off.
func stringSpecial(data []byte, i int) int {
	for ; i+16 <= len(data); i += 16 {
		x := specialBytes(binary.LittleEndian.Uint64(data[i:]))
		y := specialBytes(binary.LittleEndian.Uint64(data[i+8:]))
		if x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		if y != 0 {
			return i + 8 + bits.TrailingZeros64(y)/8
		}
	}
	for ; i+8 <= len(data); i += 8 {
		if x := specialBytes(binary.LittleEndian.Uint64(data[i:])); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(data); i++ {
		if jsonStrSpecial[data[i]] {
			return i
		}
	}
	return len(data)
}

// specialBytes flags (with its high bit) each byte of the little-endian word x that is a
// '"', a '\\' or a control character; the lowest flag is exact, higher ones may be false
// (a borrow only flags bytes above a true match), which is all stringSpecial needs.
func specialBytes(x uint64) uint64 {
	// Flipping bit 1 maps '"' (0x22) to 0x20 and keeps the control characters below
	// 0x20, so that one "less than 0x21" test finds both.
	y := x ^ (0x02 * lsb)
	b := x ^ ('\\' * lsb)
	return (((y - 0x21*lsb) &^ y) | ((b - lsb) &^ b)) & msb
}

// Frame scans from where the last call stopped. Before a record it consumes what precedes
// the record on its own (a ',' and whitespace), so that the record starts the next call's
// data and the reader's offset for it is its first byte.
//
// Frame dispatches on the state to the state's method (see framers_json_scan.go), which
// scans as far as its token goes, and acts on the pseudo-states itself, as only Frame
// returns to the caller: a record to start at the next call, or one that ended.
func (f *jsonArrayFramer) Frame(data []byte, atEOF bool) (int, []byte, error) {
	if n, ret := f.skip(data, atEOF); ret {
		f.pos += int64(n)
		return n, nil, nil
	}
	i, st := 0, f.state
	if f.inRecord {
		i = f.resume
		if i > len(data) {
			return 0, nil, fmt.Errorf("json-array: called with %d bytes, fewer than the %d of the pending record it already saw", len(data), i)
		}
	}
	var err error
	for i < len(data) {
		switch st {
		case jString:
			i, st, err = f.scanString(data, i)
		case jCommaOrEnd:
			i, st, err = f.scanCommaOrEnd(data, i)
		case jKeyOrEnd, jKey:
			i, st, err = f.scanKey(data, i, st)
		case jColon:
			i, st, err = f.scanColon(data, i)
		case jValue, jValueOrEnd:
			i, st, err = f.scanValue(data, i, st)
		case jTop:
			i, st, err = f.scanTop(data, i)
		case jEscape, jHex:
			i, st, err = f.scanEscape(data, i, st)
		case jLiteral:
			i, st, err = f.scanLiteral(data, i)
		case jNumMinus, jNumZero, jNumInt, jNumDot, jNumFrac, jNumE, jNumESign, jNumExp:
			i, st, err = f.scanNumber(data, i, st)
		default:
			panic("json-array: unknown scanner state")
		}
		if err != nil {
			return 0, nil, err
		}
		if st < jSplit {
			continue
		}
		if st == jSplit {
			// A record starts at data[i]: consume what precedes it, so that it starts the
			// next call's data (scanValue saved the state).
			f.pos += int64(i)
			return i, nil, nil
		}
		// st is jDone: a value ended just before data[i].
		var rec bool
		if st, rec = f.valueDone(); rec {
			return f.emit(data, i, st)
		}
	}
	return f.endOfData(data, st, atEOF)
}

// emit returns the record that ends just before data[i], where the scan goes on in state
// st, and forgets the scan through it.
func (f *jsonArrayFramer) emit(data []byte, i int, st uint8) (int, []byte, error) {
	f.inRecord, f.resume = false, 0
	f.state = st
	f.pos += int64(i)
	return i, data[:i:i], nil
}

// endOfData ends a call whose data ran out in state st. Outside a record it consumes the
// data; inside one it consumes nothing, the record having to stay contiguous, and notes
// how far it scanned. At EOF, anything but the end of a top-level value is a truncation.
func (f *jsonArrayFramer) endOfData(data []byte, st uint8, atEOF bool) (int, []byte, error) {
	f.state = st
	if f.inRecord {
		if atEOF {
			return 0, nil, f.truncated(len(data), st)
		}
		f.resume = len(data)
		return 0, nil, nil
	}
	if atEOF && st != jTop {
		return 0, nil, f.truncated(len(data), st)
	}
	f.pos += int64(len(data))
	return len(data), nil, nil
}

// corrupt describes malformed input at data[i] of the current call.
func (f *jsonArrayFramer) corrupt(i int, expected string, found byte) error {
	return &framerError{kind: ErrCorrupt, msg: fmt.Sprintf("json-array: at byte %d: expected %s, found %s", f.pos+int64(i), expected, describeByte(found))}
}

// truncated describes an object that ends, at data[end] of the current call, in state st.
func (f *jsonArrayFramer) truncated(end int, st uint8) error {
	var inside string
	switch st {
	case jString, jEscape, jHex:
		inside = "inside a string"
	case jLiteral:
		inside = "inside a literal"
	case jNumMinus, jNumDot, jNumE, jNumESign:
		inside = "inside a number"
	default:
		inside = fmt.Sprintf("with %d containers still open", len(f.stack))
	}
	return fmt.Errorf("%w: json-array: at byte %d: the object ends %s", ErrTruncatedRecord, f.pos+int64(end), inside)
}

// framerError carries a framer's own description of why an object cannot be framed, while
// matching kind (ErrCorrupt) with errors.Is: the sentinel's text speaks of compressed data,
// which would mislead here.
type framerError struct {
	kind error
	msg  string
}

func (e *framerError) Error() string { return e.msg }
func (e *framerError) Unwrap() error { return e.kind }

// describeByte quotes c for an error message, as a character when it is printable ASCII.
func describeByte(c byte) string {
	if c >= 0x20 && c < 0x7f {
		return fmt.Sprintf("%q", rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}
