package s3io

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
)

// RecordFramer cuts a decompressed byte stream into records. It is a bufio.SplitFunc grown
// into an interface: Frame sees the unconsumed bytes and whether the stream has ended, and
// returns how many bytes to consume and the record they hold.
//
//   - (n, rec, nil) with rec != nil: rec is the next record (an empty record is a non-nil,
//     zero-length slice) and n bytes are consumed.
//   - (n, nil, nil) with n > 0: n bytes are consumed and hold no record (a skipped blank line).
//   - (0, nil, nil): more bytes are needed; at EOF this means the stream is exhausted.
//   - (_, _, err): the object cannot be framed; its read fails with err.
//
// rec must be a sub-slice of data or a fresh allocation: s3io emits it without copying and
// never writes to those bytes again, so downstream DoFns may keep it. Frame must not retain
// data. A RecordFramer is used by one goroutine on one object at a time, so it may hold
// per-object state; the constructor given to RegisterFramer makes one per object.
type RecordFramer interface {
	Frame(data []byte, atEOF bool) (advance int, record []byte, err error)
}

// FramerFunc adapts a stateless function to RecordFramer.
type FramerFunc func(data []byte, atEOF bool) (advance int, record []byte, err error)

// Frame calls f.
func (f FramerFunc) Frame(data []byte, atEOF bool) (int, []byte, error) { return f(data, atEOF) }

var framers = struct {
	sync.RWMutex
	m map[string]func() RecordFramer
}{m: map[string]func() RecordFramer{
	"lines":  func() RecordFramer { return FramerFunc(frameLines) },
	"ndjson": func() RecordFramer { return FramerFunc(frameNDJSON) },
	"u32be":  func() RecordFramer { return FramerFunc(frameU32BE) },
}}

// RegisterFramer makes a framer available as Config.Framer = name. Call it from an init
// function: Beam workers run the same binary as the launcher, and look the framer up by name
// on the worker because a DoFn's fields cannot carry code. It panics on an empty or
// already-registered name or a nil constructor.
func RegisterFramer(name string, newFramer func() RecordFramer) {
	if name == "" || newFramer == nil {
		panic("s3io: RegisterFramer needs a name and a constructor")
	}
	framers.Lock()
	defer framers.Unlock()
	if _, dup := framers.m[name]; dup {
		panic(fmt.Sprintf("s3io: framer %q is already registered", name))
	}
	framers.m[name] = newFramer
}

// selfSynchronizing reports whether a framer can start in the middle of an object: a line
// ends at the next LF wherever one starts reading. Only such framers allow segments.
func selfSynchronizing(name string) bool { return name == "lines" || name == "ndjson" }

func lookupFramer(name string) (func() RecordFramer, bool) {
	framers.RLock()
	defer framers.RUnlock()
	f, ok := framers.m[name]
	return f, ok
}

func framerNames() []string {
	framers.RLock()
	defer framers.RUnlock()
	names := make([]string, 0, len(framers.m))
	for n := range framers.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// frameLines yields LF-terminated lines without the LF and without one trailing CR. A last
// line without a newline is a record; an empty object has none.
func frameLines(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		return i + 1, dropCR(data[:i]), nil
	}
	if atEOF && len(data) > 0 {
		return len(data), dropCR(data), nil
	}
	return 0, nil, nil
}

// frameNDJSON is frameLines without blank lines, which NDJSON producers often leave between
// documents and which no decoder wants.
func frameNDJSON(data []byte, atEOF bool) (int, []byte, error) {
	n, rec, err := frameLines(data, atEOF)
	if rec != nil && isBlank(rec) {
		return n, nil, err
	}
	return n, rec, err
}

// frameU32BE yields records prefixed by their length as a 4-byte big-endian integer.
func frameU32BE(data []byte, atEOF bool) (int, []byte, error) {
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

func dropCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[: n-1 : n-1]
	}
	return b[:len(b):len(b)]
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}
