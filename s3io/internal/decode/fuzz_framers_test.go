package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

// sizedReader serves data in chunks whose sizes it takes from sizes in turn (a size of 0
// is a 0-byte read with a nil error, never more than two in a row), so that a fuzzer
// chooses where every buffer boundary falls.
type sizedReader struct {
	data  []byte
	sizes []byte
	next  int
	zeros int
}

func (r *sizedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(r.sizes) > 0 {
		n = int(r.sizes[r.next%len(r.sizes)]) % 97
		r.next++
	}
	if n == 0 {
		if r.zeros++; r.zeros <= 2 {
			return 0, nil
		}
		n = 1
	}
	r.zeros = 0
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// splitReader serves data[:at] and then the rest in one read, putting one buffer
// boundary exactly at at.
type splitReader struct {
	data []byte
	at   int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(r.data)
	if r.at > 0 {
		n, r.at = r.at, 0
	}
	n = min(n, len(p))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// checkChunking frames input whole, then through a RecordReader fed by src, and fails
// unless both give the same records and the same error (the chunked one wraps the whole
// one's text with the reader's framing context).
func checkChunking(t *testing.T, framer string, input []byte, src io.Reader, desc string) []string {
	t.Helper()
	want, wantErr := s3test.FrameAll(t, Builtins()[framer](), input)
	got, _, err := readAll(t, framer, src, len(input)+1)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("%s over %.300q (%s): chunked err = %v, whole err = %v", framer, input, desc, err, wantErr)
	}
	if err != nil {
		if !strings.HasSuffix(err.Error(), wantErr.Error()) || !errors.Is(err, ErrFramer) {
			t.Fatalf("%s over %.300q (%s): chunked err = %q, whole err = %q", framer, input, desc, err, wantErr)
		}
		for _, kind := range []error{ErrCorrupt, ErrTruncatedRecord} {
			if errors.Is(err, kind) != errors.Is(wantErr, kind) {
				t.Fatalf("%s (%s): chunked err %v and whole err %v differ on %v", framer, desc, err, wantErr, kind)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%s over %.300q (%s): chunked %d records %.300q, whole %d %.300q", framer, input, desc, len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s over %.300q (%s): record %d chunked %.300q, whole %.300q", framer, input, desc, i, got[i], want[i])
		}
	}
	return want
}

// fuzzPadding returns, when the fuzzer's chunk sizes ask for it, a prefix that the framer
// reads without a record and that ends just before the end of the RecordReader's first
// slab, so that the fuzzed bytes straddle the move to the next one.
func fuzzPadding(framer string, chunks []byte) []byte {
	if len(chunks) < 2 || chunks[0] != 0xff {
		return nil
	}
	n := slabBytes - 16 - int(chunks[1])
	if framer == "csv" {
		return append(bytes.Repeat([]byte("F"), n-1), '\n', '\n') // a record, an empty line
	}
	return append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("F"), n-10)...), `"}`...)
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{
		"", "a,b,c\n", "a\r\nb\r\n", "a\r\nb\r", "\n\r\n\n", "\xef\xbb\xbfa,b\n",
		`"a,b",c` + "\n", "\"x\ny\",z\r\n", "\"x\r\ny\"\r\n", `"a""b","""",""` + "\n",
		`5'11",x` + "\n", `a,b"c,"d"` + "\n", `"ab"c,d` + "\n" + `"e"`, `"unterminated` + "\n",
		`x,"""`, `"a"` + "\r", "a\r\r\n\r", `"",""` + "\n\n" + `,,"` + "\n" + `"`,
		strings.Repeat(`1,"two, 2","th""ree"`+"\r\n", 20),
	} {
		f.Add([]byte(s), []byte{1})
		f.Add([]byte(s), []byte{3, 0, 7, 1, 64})
	}
	f.Add([]byte("a,\"b\nc\"\nd"), []byte{0xff, 9, 2})
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		if len(data) > 1<<16 || len(chunks) > 64 {
			t.Skip()
		}
		input := append(fuzzPadding("csv", chunks), data...)
		checkChunking(t, "csv", input, &sizedReader{data: input, sizes: chunks}, "fuzzed chunks")
	})
}

func FuzzJSONArray(f *testing.F) {
	for _, s := range []string{
		"", "[]", " [ ] ", "[1,2,3]", `[1,"a",null,true,false,-0.5e+3,{},[]]`, "[[1,[2]],[[]]]",
		`{"Records":[{"a":1},{"b":[2,{"c":"]"}]}]}`, `{"Records":[]}`, `{}`, `{"a":1}`,
		`{"x":{"y":[1]},"s":"[\"","Records":[1,2],"more":[3]}`, `[1][2]{"R":[3]} [4]`,
		`["a\"b\\","\u00e9\n\/","\ud83d\ude00"]`, "\xef\xbb\xbf[1]", "[1,]", "[1 2]",
		`{"a" 1}`, `{"a":1,}`, "[}", "{]", "1", `"s"`, "[tru]", "[01]", "[1.]", "[-]", "[1e]",
		`["\x"]`, `["\u12g4"]`, "[\"a\n\"]", "[1]]", "[1", `{"Records":[{"a":1}`, `["abc\`,
		"[\r\n\t1\r\n]", `{"Records":[1.5E-7,-0,0e0,12345678901234567890]}`,
		strings.Repeat("[", 40) + strings.Repeat("]", 40),
	} {
		f.Add([]byte(s), []byte{1})
		f.Add([]byte(s), []byte{2, 0, 5, 1, 33})
	}
	f.Add([]byte(`{"Records":[{"k":"v"}]}`), []byte{0xff, 3, 1})
	f.Fuzz(func(t *testing.T, data, chunks []byte) {
		if len(data) > 1<<16 || len(chunks) > 64 {
			t.Skip()
		}
		input := append(fuzzPadding("json-array", chunks), data...)
		recs := checkChunking(t, "json-array", input, &sizedReader{data: input, sizes: chunks}, "fuzzed chunks")
		for i, r := range recs {
			if !json.Valid([]byte(r)) {
				t.Fatalf("record %d %.300q of %.300q is not valid JSON", i, r, input)
			}
		}
		checkAgainstEncodingJSON(t, input)
	})
}

// refJSONArray finds the records of data as encoding/json reads it: the elements of each
// top-level array, or of each top-level object's first array-valued member. ok is false
// when encoding/json refuses data or data holds a top-level scalar.
func refJSONArray(data []byte) (recs []json.RawMessage, ok bool) {
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var v json.RawMessage
		if err := dec.Decode(&v); err == io.EOF {
			return recs, true
		} else if err != nil {
			return nil, false
		}
		switch v[0] {
		case '[':
			var elems []json.RawMessage
			if json.Unmarshal(v, &elems) != nil {
				return nil, false
			}
			recs = append(recs, elems...)
		case '{':
			od := json.NewDecoder(bytes.NewReader(v))
			od.Token()
			for od.More() {
				od.Token() // the key
				var m json.RawMessage
				if od.Decode(&m) != nil {
					return nil, false
				}
				if m[0] == '[' {
					var elems []json.RawMessage
					if json.Unmarshal(m, &elems) != nil {
						return nil, false
					}
					recs = append(recs, elems...)
					break
				}
			}
		default:
			return nil, false
		}
	}
}

// checkAgainstEncodingJSON fails unless the json-array framer accepts data exactly when
// encoding/json does, with the same records (compared compacted).
func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	want, ok := refJSONArray(data)
	got, err := s3test.FrameAll(t, NewJSONArrayFramer(), data)
	if ok != (err == nil) {
		t.Fatalf("json-array over %.300q: err = %v, encoding/json accepts it: %v", data, err, ok)
	}
	if !ok {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("json-array over %.300q: %d records %.300q, encoding/json finds %d %.300q", data, len(got), got, len(want), want)
	}
	for i := range got {
		var g, w bytes.Buffer
		if err := json.Compact(&g, []byte(got[i])); err != nil {
			t.Fatalf("record %d %.300q: %v", i, got[i], err)
		}
		json.Compact(&w, want[i])
		if !bytes.Equal(g.Bytes(), w.Bytes()) {
			t.Fatalf("json-array over %.300q: record %d = %.300q, encoding/json finds %.300q", data, i, got[i], want[i])
		}
		if strings.TrimSpace(got[i]) != got[i] {
			t.Fatalf("record %d %q has surrounding whitespace", i, got[i])
		}
	}
}

// TestStringSpecial checks the word-at-a-time scan against a byte-at-a-time one, for every
// byte value at every position of every length up to 40.
func TestStringSpecial(t *testing.T) {
	ref := func(data []byte, i int) int {
		for ; i < len(data); i++ {
			if data[i] < 0x20 || data[i] == '"' || data[i] == '\\' {
				return i
			}
		}
		return len(data)
	}
	for n := 0; n <= 40; n++ {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				data := bytes.Repeat([]byte{'a'}, n)
				data[pos] = byte(c)
				if pos+1 < n {
					data[pos+1] = byte(255 - c) // a second byte, to catch borrows
				}
				for start := 0; start <= pos; start += 3 {
					if got, want := stringSpecial(data, start), ref(data, start); got != want {
						t.Fatalf("stringSpecial(%q, %d) = %d, want %d", data, start, got, want)
					}
				}
			}
		}
	}
}
