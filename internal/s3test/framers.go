package s3test

import "testing"

// Framer is the method set of s3io.RecordFramer and decode.Framer.
type Framer interface {
	Frame(data []byte, atEOF bool) (advance int, record []byte, err error)
}

// FrameAll runs f over data the way the record reader does with the whole stream buffered
// and atEOF set, returning the records as strings; it fails the test if f makes no
// progress or advances past its input.
func FrameAll(t testing.TB, f Framer, data []byte) ([]string, error) {
	t.Helper()
	var out []string
	limit := len(data) + 2
	for steps := 0; ; steps++ {
		if steps > limit {
			t.Fatalf("framer made no progress on %q", data)
		}
		adv, rec, err := f.Frame(data, true)
		if err != nil {
			return out, err
		}
		if adv < 0 || adv > len(data) {
			t.Fatalf("framer advanced %d of %d bytes", adv, len(data))
		}
		if rec != nil {
			out = append(out, string(rec))
		} else if adv == 0 {
			return out, nil
		}
		data = data[adv:]
	}
}
