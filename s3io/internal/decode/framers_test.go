package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/s3test"
)

func u32(recs ...string) []byte {
	var b []byte
	for _, r := range recs {
		b = binary.BigEndian.AppendUint32(b, uint32(len(r)))
		b = append(b, r...)
	}
	return b
}

func TestFrameLines(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", []string{""}},
		{"\n\n", []string{"", ""}},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\nb\n", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\r\nb", []string{"a", "b"}},
		{"a\r\nb\r", []string{"a", "b"}},
		{"\r\n", []string{""}},
		{"\r", []string{""}},
		{"a\rb\n", []string{"a\rb"}},
		{"a\r\r\n", []string{"a\r"}},
		{"\ra\n", []string{"\ra"}},
		{"  \n\t\n", []string{"  ", "\t"}},
		{"x\n\ny\n", []string{"x", "", "y"}},
		{"{}\n{\"a\":1}", []string{"{}", `{"a":1}`}},
		{"\x00\xff\n", []string{"\x00\xff"}},
	}
	for _, c := range cases {
		got, err := s3test.FrameAll(t, FramerFunc(FrameLines), []byte(c.in))
		if err != nil {
			t.Errorf("lines %q: %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("lines %q = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFrameLinesNeedsMore(t *testing.T) {
	for _, in := range []string{"", "abc", "abc\r"} {
		adv, rec, err := FrameLines([]byte(in), false)
		if adv != 0 || rec != nil || err != nil {
			t.Errorf("FrameLines(%q, false) = %d, %q, %v; want 0, nil, nil", in, adv, rec, err)
		}
	}
	adv, rec, err := FrameLines([]byte("ab\r\ncd"), false)
	if adv != 4 || string(rec) != "ab" || err != nil {
		t.Errorf("FrameLines(ab CRLF cd) = %d, %q, %v", adv, rec, err)
	}
	// An empty line is a non-nil empty record.
	adv, rec, err = FrameLines([]byte("\nrest"), false)
	if adv != 1 || rec == nil || len(rec) != 0 || err != nil {
		t.Errorf("FrameLines(LF rest) = %d, %#v, %v; want 1, non-nil empty, nil", adv, rec, err)
	}
	adv, rec, _ = FrameLines([]byte("\r\n"), false)
	if adv != 2 || rec == nil || len(rec) != 0 {
		t.Errorf("FrameLines(CRLF) = %d, %#v; want 2, non-nil empty", adv, rec)
	}
}

func TestFrameNDJSON(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"\n", nil},
		{"\n\n\r\n", nil},
		{" \t \r\n", nil},
		{"   ", nil},
		{"{}", []string{"{}"}},
		{"{}\n\n{\"a\":1}\n", []string{"{}", `{"a":1}`}},
		{"  \n{}\n \t\n[]\r\n\r\n", []string{"{}", "[]"}},
		{" {} \n", []string{" {} "}},
		{"\r\r\n{}", []string{"{}"}},
		{"x\r\r\n", []string{"x\r"}},
		{"\v\n", []string{"\v"}}, // only space, tab and CR are blank
	}
	for _, c := range cases {
		got, err := s3test.FrameAll(t, FramerFunc(FrameNDJSON), []byte(c.in))
		if err != nil {
			t.Errorf("ndjson %q: %v", c.in, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("ndjson %q = %q, want %q", c.in, got, c.want)
		}
	}
	// A skipped blank line consumes its bytes without a record.
	adv, rec, err := FrameNDJSON([]byte(" \t\r\n{}"), false)
	if adv != 4 || rec != nil || err != nil {
		t.Errorf("FrameNDJSON(blank line) = %d, %q, %v; want 4, nil, nil", adv, rec, err)
	}
}

func TestFrameU32BE(t *testing.T) {
	cases := []struct {
		name      string
		in        []byte
		want      []string
		truncated bool
	}{
		{"empty", nil, nil, false},
		{"one", u32("abc"), []string{"abc"}, false},
		{"zero length", u32(""), []string{""}, false},
		{"zeros", u32("", "", ""), []string{"", "", ""}, false},
		{"mixed", u32("a", "", "bc\n", "\x00\x00\x00\x01"), []string{"a", "", "bc\n", "\x00\x00\x00\x01"}, false},
		{"truncated prefix 1", []byte{0}, nil, true},
		{"truncated prefix 3", []byte{0, 0, 0}, nil, true},
		{"truncated prefix after record", append(u32("ok"), 0, 0), []string{"ok"}, true},
		{"truncated body", append(u32("ok"), 0, 0, 0, 5, 'a', 'b'), []string{"ok"}, true},
		{"truncated body empty", []byte{0, 0, 0, 1}, nil, true},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff, 'x'}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := s3test.FrameAll(t, FramerFunc(FrameU32BE), c.in)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("records = %q, want %q", got, c.want)
			}
			if c.truncated != (err != nil) {
				t.Fatalf("err = %v, want truncated=%v", err, c.truncated)
			}
			if err != nil && !errors.Is(err, ErrTruncatedRecord) {
				t.Errorf("err = %v, does not wrap ErrTruncatedRecord", err)
			}
		})
	}
	// Not at EOF, a partial record asks for more.
	for _, in := range [][]byte{{0}, {0, 0, 0, 3}, {0, 0, 0, 3, 'a', 'b'}} {
		adv, rec, err := FrameU32BE(in, false)
		if adv != 0 || rec != nil || err != nil {
			t.Errorf("FrameU32BE(%v, false) = %d, %q, %v; want 0, nil, nil", in, adv, rec, err)
		}
	}
	adv, rec, err := FrameU32BE([]byte{0, 0, 0, 0, 9}, false)
	if adv != 4 || rec == nil || len(rec) != 0 || err != nil {
		t.Errorf("FrameU32BE(zero length) = %d, %#v, %v; want 4, non-nil empty, nil", adv, rec, err)
	}
}

// TestFramerRecordsDoNotAlias appends to every record a framer returns and checks that the
// following records, and the input, are unchanged: records must be capacity-limited.
func TestFramerRecordsDoNotAlias(t *testing.T) {
	cases := []struct {
		framer string
		in     []byte
		want   []string
	}{
		{"lines", []byte("a\nbb\r\n\nccc\r\nd"), []string{"a", "bb", "", "ccc", "d"}},
		{"lines", []byte("x\r\ny\r"), []string{"x", "y"}},
		{"ndjson", []byte("{}\n \n[1]\r\n\"s\""), []string{"{}", "[1]", `"s"`}},
		{"u32be", u32("ab", "", "cde", "f"), []string{"ab", "", "cde", "f"}},
	}
	for _, c := range cases {
		t.Run(c.framer, func(t *testing.T) {
			newF, ok := lookupBuiltin(c.framer)
			if !ok {
				t.Fatalf("framer %q not registered", c.framer)
			}
			orig := bytes.Clone(c.in)

			// Directly on the framer, with the whole input in one buffer.
			f := newF()
			data := bytes.Clone(c.in)
			var recs [][]byte
			for rest := data; ; {
				adv, rec, err := f.Frame(rest, true)
				if err != nil {
					t.Fatal(err)
				}
				if rec != nil {
					recs = append(recs, rec)
				} else if adv == 0 {
					break
				}
				rest = rest[adv:]
			}
			for i := range recs {
				if cap(recs[i]) != len(recs[i]) {
					t.Errorf("record %d %q has cap %d > len %d", i, recs[i], cap(recs[i]), len(recs[i]))
				}
				_ = append(recs[i], "XXXXXXXXXXXXXXXXXXXXXXXX"...)
			}
			var got []string
			for _, r := range recs {
				got = append(got, string(r))
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("after appending to records: %q, want %q", got, c.want)
			}
			if !bytes.Equal(data, orig) {
				t.Errorf("appending to records changed the input to %q", data)
			}

			// Through RecordReader: append to each record as soon as it is returned.
			rr := NewRecordReader(bytes.NewReader(c.in), newF(), 1<<20, 0)
			var kept [][]byte
			for {
				rec, _, err := rr.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				kept = append(kept, rec)
				_ = append(rec, "YYYYYYYYYYYYYYYYYYYYYYYY"...)
			}
			got = got[:0]
			for _, r := range kept {
				got = append(got, string(r))
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("RecordReader records after appends: %q, want %q", got, c.want)
			}
		})
	}
}

// --- Fuzzing: RecordReader over randomly chunked input versus reference framings. ---

// chunkReader serves data in random chunks of 1..maxChunk bytes, sometimes returning 0
// bytes with a nil error.
type chunkReader struct {
	data     []byte
	rng      *rand.Rand
	maxChunk int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if len(p) == 0 || r.rng.IntN(8) == 0 {
		return 0, nil
	}
	n := 1 + r.rng.IntN(r.maxChunk)
	n = min(n, len(p), len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// refLines frames data as lines, independently of FrameLines, with each record's offset.
func refLines(data []byte, skipBlank bool) (recs []string, offsets []int64) {
	recs = []string{}
	if len(data) == 0 {
		return recs, nil
	}
	parts := strings.Split(string(data), "\n")
	if parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	off := int64(0)
	for _, p := range parts {
		start := off
		off += int64(len(p)) + 1
		p = strings.TrimSuffix(p, "\r")
		if skipBlank && strings.Trim(p, " \t\r") == "" {
			continue
		}
		recs = append(recs, p)
		offsets = append(offsets, start)
	}
	return recs, offsets
}

// refU32BE frames data as length-prefixed records, with the offset of each record's length
// prefix, reporting whether data ends inside a record.
func refU32BE(data []byte) (recs []string, offsets []int64, truncated bool) {
	recs = []string{}
	off := int64(0)
	for len(data) > 0 {
		if len(data) < 4 {
			return recs, offsets, true
		}
		n := uint64(data[0])<<24 | uint64(data[1])<<16 | uint64(data[2])<<8 | uint64(data[3])
		if uint64(len(data)-4) < n {
			return recs, offsets, true
		}
		recs = append(recs, string(data[4:4+n]))
		offsets = append(offsets, off)
		data = data[4+n:]
		off += 4 + int64(n)
	}
	return recs, offsets, false
}

func readAll(t *testing.T, framer string, src io.Reader, maxRecord int) (recs []string, offsets []int64, err error) {
	newF, ok := lookupBuiltin(framer)
	if !ok {
		t.Fatalf("framer %q not registered", framer)
	}
	rr := NewRecordReader(src, newF(), maxRecord, 0)
	recs = []string{}
	var kept [][]byte
	for {
		rec, off, err := rr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return recs, offsets, err
		}
		if rec == nil {
			t.Fatal("next returned a nil record without an error")
		}
		recs = append(recs, string(rec))
		kept = append(kept, rec)
		offsets = append(offsets, off)
		if len(recs) > 10_000_000 {
			t.Fatal("too many records")
		}
	}
	// Records handed out earlier must not have changed since.
	for i, k := range kept {
		if string(k) != recs[i] {
			t.Fatalf("record %d changed from %q to %q after later reads", i, recs[i], k)
		}
	}
	return recs, offsets, nil
}

func FuzzFramers(f *testing.F) {
	f.Add([]byte(""), int64(0))
	f.Add([]byte("\n"), int64(1))
	f.Add([]byte("a\nb\r\nc"), int64(2))
	f.Add([]byte("a\r\r\n\r\n \t\n{}\n"), int64(3))
	f.Add([]byte("line one\nline two\n\n\nlast\r"), int64(4))
	f.Add(u32("abc", "", "de\n"), int64(12))
	f.Add(append(u32("ok"), 0, 0, 0, 9, 'x'), int64(20))
	f.Add([]byte{0, 0, 0}, int64(7))
	f.Add(bytes.Repeat([]byte("0123456789abcde\n"), 40), int64(8))
	f.Add(u32(strings.Repeat("r", 300), "", "z"), int64(-9))
	f.Fuzz(fuzzBody)
}

// fuzzBody reads data with each built-in framer through a RecordReader fed in random
// chunks, and compares records, offsets and truncation errors with the reference framings.
func fuzzBody(t *testing.T, data []byte, seed int64) {
	if len(data) > 1<<16 {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)))
	// Sometimes put a filler record first so that data straddles the end of the first
	// slab, at an offset the seed picks.
	filler := 0
	if seed%4 == 0 {
		filler = slabBytes - 1 - int(uint64(seed)>>2%256)
	}
	for _, framer := range []string{"lines", "ndjson", "u32be"} {
		var input []byte
		if filler > 0 {
			if framer == "u32be" {
				input = u32(strings.Repeat("F", filler-4))
			} else {
				input = append(bytes.Repeat([]byte("F"), filler-1), '\n')
			}
		}
		input = append(input, data...)
		var want []string
		var wantOffs []int64
		trunc := false
		switch framer {
		case "lines":
			want, wantOffs = refLines(input, false)
		case "ndjson":
			want, wantOffs = refLines(input, true)
		case "u32be":
			want, wantOffs, trunc = refU32BE(input)
		}
		maxChunk := 1 + rng.IntN(64)
		if len(input) > 4096 {
			// Tiny reads into a long pending record rescan it each time: keep the quadratic
			// cost of big inputs down.
			maxChunk = 1024 + rng.IntN(8192)
		}
		src := &chunkReader{data: input, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), maxChunk: maxChunk}
		got, offsets, err := readAll(t, framer, src, len(input)+1)
		if (err != nil) != trunc {
			t.Fatalf("%s over %.300q (seed %d): err = %v, want truncated=%v", framer, data, seed, err, trunc)
		}
		if err != nil && !errors.Is(err, ErrTruncatedRecord) {
			t.Fatalf("%s: err = %v, want ErrTruncatedRecord", framer, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s over %.300q (seed %d): %d records %.300q, want %d %.300q", framer, data, seed, len(got), got, len(want), want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s over %.300q (seed %d): record %d = %.300q, want %.300q", framer, data, seed, i, got[i], want[i])
			}
			// The offset is where the record's frame starts: its line, or for u32be its
			// length prefix.
			if offsets[i] != wantOffs[i] {
				t.Fatalf("%s over %.300q (seed %d): record %d offset %d, want %d", framer, data, seed, i, offsets[i], wantOffs[i])
			}
		}
	}
}

// lookupBuiltin returns the constructor of the built-in framer name.
func lookupBuiltin(name string) (func() Framer, bool) {
	f, ok := Builtins()[name]
	return f, ok
}
