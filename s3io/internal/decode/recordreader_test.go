package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// countingReader counts the bytes it serves from src.
type countingReader struct {
	src    io.Reader
	served int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	r.served += int64(n)
	return n, err
}

// repeatReader is an endless stream of one byte pattern.
type repeatReader struct {
	pattern []byte
	pos     int
	chunk   int // max bytes per Read; 0 means unlimited
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.chunk > 0 && len(p) > r.chunk {
		p = p[:r.chunk]
	}
	for n := 0; n < len(p); {
		c := copy(p[n:], r.pattern[r.pos:])
		n += c
		r.pos = (r.pos + c) % len(r.pattern)
	}
	return len(p), nil
}

// readRecords reads every record of src with the named framer.
func readRecords(t *testing.T, framer string, src io.Reader, maxRecord int) (recs [][]byte, offsets []int64, err error) {
	t.Helper()
	newF, ok := lookupBuiltin(framer)
	if !ok {
		t.Fatalf("framer %q not registered", framer)
	}
	rr := NewRecordReader(src, newF(), maxRecord, 0)
	for {
		rec, off, err := rr.Next()
		if err == io.EOF {
			// EOF is sticky.
			if rec, _, err := rr.Next(); err != io.EOF || rec != nil {
				t.Fatalf("next after EOF = %q, %v; want nil, io.EOF", rec, err)
			}
			return recs, offsets, nil
		}
		if err != nil {
			return recs, offsets, err
		}
		recs = append(recs, rec)
		offsets = append(offsets, off)
	}
}

func TestRecordReaderMaxRecordBytes(t *testing.T) {
	limits := []int{1, 10, 1000, slabBytes - 1, slabBytes, slabBytes + 1, 2*slabBytes + 7}
	type framing struct {
		name   string
		framer string
		encode func(recs ...string) []byte
	}
	framings := []framing{
		{"lines LF", "lines", func(recs ...string) []byte { return []byte(strings.Join(recs, "\n") + "\n") }},
		{"lines CRLF", "lines", func(recs ...string) []byte { return []byte(strings.Join(recs, "\r\n") + "\r\n") }},
		{"lines no final newline", "lines", func(recs ...string) []byte { return []byte(strings.Join(recs, "\n")) }},
		{"ndjson", "ndjson", func(recs ...string) []byte { return []byte(strings.Join(recs, "\n\n") + "\n") }},
		{"u32be", "u32be", u32},
	}
	prefixes := map[string][]string{
		"none":  nil,
		"short": {"a"},
		// Short records filling most of a slab, so the big record straddles two slabs.
		"near slab end": strings.Split(strings.Repeat("0123456789abcdef\n", (slabBytes-100)/17), "\n"),
	}
	for _, limit := range limits {
		for _, fr := range framings {
			for pname, prefix := range prefixes {
				if len(prefix) > 0 && prefix[len(prefix)-1] == "" {
					prefix = prefix[:len(prefix)-1]
				}
				// Prefix records must themselves fit the limit.
				if limit < 16 && pname == "near slab end" {
					continue
				}
				for _, over := range []int{0, 1} {
					name := fmt.Sprintf("%s/limit %d/prefix %s/+%d", fr.name, limit, pname, over)
					big := strings.Repeat("x", limit+over)
					recs := append(append([]string{}, prefix...), big, "t")
					data := fr.encode(recs...)
					for _, chunked := range []bool{false, true} {
						var src io.Reader = bytes.NewReader(data)
						if chunked {
							src = &chunkReader{data: data, rng: rand.New(rand.NewPCG(uint64(limit), uint64(limit))), maxChunk: 50000}
						}
						got, _, err := readRecords(t, fr.framer, src, limit)
						if over == 0 {
							if err != nil {
								t.Errorf("%s (chunked %v): %v", name, chunked, err)
								continue
							}
							if len(got) != len(recs) {
								t.Errorf("%s (chunked %v): %d records, want %d", name, chunked, len(got), len(recs))
								continue
							}
							for i := range recs {
								if string(got[i]) != recs[i] {
									t.Errorf("%s (chunked %v): record %d has %d bytes, want %d", name, chunked, i, len(got[i]), len(recs[i]))
									break
								}
							}
							continue
						}
						if !errors.Is(err, ErrRecordTooLarge) {
							t.Errorf("%s (chunked %v): err = %v, want ErrRecordTooLarge", name, chunked, err)
						}
						// The records before the big one were all returned.
						if len(got) != len(prefix) {
							t.Errorf("%s (chunked %v): %d records before the error, want %d", name, chunked, len(got), len(prefix))
						}
					}
				}
			}
		}
	}
}

func TestRecordReaderUnterminatedRecordIsBounded(t *testing.T) {
	for _, limit := range []int{1, 100, 4096, slabBytes - 9, slabBytes, 300 << 10, 1 << 20, 3<<20 + 1} {
		for _, c := range []struct {
			framer string
			head   []byte
			src    *repeatReader
		}{
			{"lines", nil, &repeatReader{pattern: []byte("x")}},
			{"lines", nil, &repeatReader{pattern: []byte("abc\r"), chunk: 1000}},
			{"ndjson", nil, &repeatReader{pattern: []byte("{} "), chunk: 7}},
			{"ndjson", []byte("{}\n"), &repeatReader{pattern: []byte(" "), chunk: 70000}},
			// A length prefix declaring a record far larger than the limit.
			{"u32be", []byte{0xff, 0xff, 0xff, 0xf0}, &repeatReader{pattern: []byte("z"), chunk: 4096}},
		} {
			name := fmt.Sprintf("%s %q limit %d", c.framer, c.src.pattern, limit)
			if limit > 4096 && c.src.chunk > 0 && c.src.chunk < 1000 {
				// Tiny reads into a huge pending record rescan it on every read: slow, not wrong.
				c.src.chunk = 1000
			}
			cr := &countingReader{src: io.MultiReader(bytes.NewReader(c.head), c.src)}
			newF, _ := lookupBuiltin(c.framer)
			rr := NewRecordReader(cr, newF(), limit, 0)
			var err error
			for i := 0; i < 10 && err == nil; i++ {
				_, _, err = rr.Next()
			}
			if !errors.Is(err, ErrRecordTooLarge) {
				t.Errorf("%s: err = %v, want ErrRecordTooLarge", name, err)
			}
			bound := int64(limit) + 2*slabBytes + 64 + int64(len(c.head))
			if cr.served > bound {
				t.Errorf("%s: read %d bytes before failing, want at most %d", name, cr.served, bound)
			}
			if cr.served <= int64(limit) {
				t.Errorf("%s: failed after reading only %d bytes, not more than the limit", name, cr.served)
			}
		}
	}
}

// TestRecordReaderRecordsStayUnchanged keeps every record handed out over many slabs and
// checks them all at the end.
func TestRecordReaderRecordsStayUnchanged(t *testing.T) {
	for _, framer := range []string{"lines", "ndjson", "u32be"} {
		for seed := int64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)))
			var want []string
			for total := 0; total < 5*slabBytes; {
				n := rng.IntN(3000)
				if rng.IntN(50) == 0 {
					n = rng.IntN(3 * slabBytes / 2) // some records larger than a slab
				}
				b := make([]byte, n)
				for i := range b {
					b[i] = 'a' + byte(rng.IntN(26))
				}
				want = append(want, string(b))
				total += n + 1
			}
			var data []byte
			switch framer {
			case "lines":
				data = []byte(strings.Join(want, "\n") + "\n")
			case "ndjson":
				data = []byte(strings.Join(want, "\n \n") + "\n")
				var nonBlank []string
				for _, w := range want {
					if w != "" {
						nonBlank = append(nonBlank, w)
					}
				}
				want = nonBlank
			case "u32be":
				data = u32(want...)
			}
			src := &chunkReader{data: data, rng: rng, maxChunk: 70000}
			got, _, err := readRecords(t, framer, src, 2*slabBytes)
			if err != nil {
				t.Fatalf("%s seed %d: %v", framer, seed, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s seed %d: %d records, want %d", framer, seed, len(got), len(want))
			}
			for i := range want {
				if string(got[i]) != want[i] {
					t.Fatalf("%s seed %d: record %d of %d changed after later reads (len %d, want %d)", framer, seed, i, len(want), len(got[i]), len(want[i]))
				}
			}
		}
	}
}

func TestRecordReaderOffsets(t *testing.T) {
	big := strings.Repeat("b", slabBytes+10)
	cases := []struct {
		framer string
		data   []byte
		recs   []string
		offs   []int64
	}{
		{"lines", []byte(""), nil, nil},
		{"lines", []byte("a\nbb\r\n\nccc"), []string{"a", "bb", "", "ccc"}, []int64{0, 2, 6, 7}},
		{"lines", []byte("\n\n"), []string{"", ""}, []int64{0, 1}},
		{"ndjson", []byte("\n  \n{}\r\n\t\r\n[1]\n\n"), []string{"{}", "[1]"}, []int64{4, 11}},
		{"u32be", u32("ab", "", "c"), []string{"ab", "", "c"}, []int64{0, 6, 10}},
		{"lines", []byte("x\n" + big + "\ny\n"), []string{"x", big, "y"}, []int64{0, 2, int64(2 + len(big) + 1)}},
		{"u32be", u32("x", big, "y"), []string{"x", big, "y"}, []int64{0, 5, int64(5 + 4 + len(big))}},
	}
	for _, c := range cases {
		for _, chunk := range []int{0, 1, 3, 1000} {
			if chunk > 0 && chunk < 1000 && len(c.data) > 1000 {
				continue // tiny reads rescan a big pending record every time: slow, and covered by the fuzz test
			}
			var src io.Reader = bytes.NewReader(c.data)
			if chunk > 0 {
				src = &chunkReader{data: c.data, rng: rand.New(rand.NewPCG(uint64(chunk), uint64(chunk))), maxChunk: chunk}
			}
			got, offs, err := readRecords(t, c.framer, src, 1<<20)
			if err != nil {
				t.Fatalf("%s %.20q: %v", c.framer, c.data, err)
			}
			if len(got) != len(c.recs) {
				t.Fatalf("%s %.20q chunk %d: %d records, want %d", c.framer, c.data, chunk, len(got), len(c.recs))
			}
			for i := range got {
				if string(got[i]) != c.recs[i] || offs[i] != c.offs[i] {
					t.Errorf("%s %.20q chunk %d: record %d = %.20q at %d, want %.20q at %d", c.framer, c.data, chunk, i, got[i], offs[i], c.recs[i], c.offs[i])
				}
			}
		}
	}
	// Large random line streams: each offset is the byte where that record's line starts.
	rng := rand.New(rand.NewPCG(42, 42))
	var data []byte
	var wantOffs []int64
	for len(data) < 3*slabBytes {
		wantOffs = append(wantOffs, int64(len(data)))
		data = append(data, strings.Repeat("q", rng.IntN(5000))...)
		if rng.IntN(2) == 0 {
			data = append(data, '\r')
		}
		data = append(data, '\n')
	}
	_, offs, err := readRecords(t, "lines", &chunkReader{data: data, rng: rng, maxChunk: 9000}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(offs) != fmt.Sprint(wantOffs) {
		t.Errorf("offsets differ: got %d offsets, want %d", len(offs), len(wantOffs))
		for i := range min(len(offs), len(wantOffs)) {
			if offs[i] != wantOffs[i] {
				t.Errorf("first difference at record %d: %d, want %d", i, offs[i], wantOffs[i])
				break
			}
		}
	}
}

type errAfter struct {
	data []byte
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestRecordReaderErrors(t *testing.T) {
	boom := errors.New("boom")
	got, _, err := readRecords(t, "lines", &errAfter{data: []byte("a\nb\nhalf"), err: boom}, 100)
	if !errors.Is(err, boom) {
		t.Errorf("source error: got %v, want boom", err)
	}
	if len(got) != 2 || string(got[0]) != "a" || string(got[1]) != "b" {
		t.Errorf("records before source error = %q", got)
	}

	frameErr := errors.New("bad frame")
	rr := NewRecordReader(strings.NewReader("abc"), FramerFunc(func([]byte, bool) (int, []byte, error) {
		return 0, nil, frameErr
	}), 100, 0)
	if _, _, err := rr.Next(); !errors.Is(err, frameErr) {
		t.Errorf("framer error: got %v", err)
	}

	// A framer claiming more bytes than it was given is reported, not obeyed.
	rr = NewRecordReader(strings.NewReader("abc"), FramerFunc(func(data []byte, _ bool) (int, []byte, error) {
		return len(data) + 1, data[:0:0], nil
	}), 100, 0)
	if _, _, err := rr.Next(); err == nil {
		t.Error("over-advancing framer: no error")
	}
	rr = NewRecordReader(strings.NewReader("abc"), FramerFunc(func(data []byte, _ bool) (int, []byte, error) {
		return -1, nil, nil
	}), 100, 0)
	if _, _, err := rr.Next(); err == nil {
		t.Error("negative-advancing framer: no error")
	}
}
