package s3io

import (
	"fmt"
	"sort"
	"sync"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
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
// data. A RecordFramer is used by one goroutine on one object (or archive entry) at a time,
// and the constructor given to RegisterFramer makes one per object. It must be able to start
// at any record boundary: a residual of a split resumes framing at the byte offset where
// the primary's last record ended, with a new framer.
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
}{m: builtinFramers()}

// builtinFramers are the framers of package decode, registered under their names.
func builtinFramers() map[string]func() RecordFramer {
	m := map[string]func() RecordFramer{}
	for name, newFramer := range decode.Builtins() {
		m[name] = func() RecordFramer { return newFramer() }
	}
	return m
}

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
// ends at the next LF wherever one starts reading. Only such framers let the planner cut an object (Config.SplitTargetBytes).
func selfSynchronizing(name string) bool { return name == "lines" || name == "ndjson" }

// resumesAtOffset reports whether a framer can start at any record's byte offset, so that a
// residual resumes there: its state between records is empty. json-array's is not (it must
// know it is inside the top-level array), so a residual of a json-array member re-frames it
// from its start and skips the records before its first. A registered framer must be able
// to start at any record boundary, as RecordFramer documents.
func resumesAtOffset(name string) bool {
	if _, builtin := decode.Builtins()[name]; builtin {
		return decode.ResumableAtOffset(name)
	}
	return true
}

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
