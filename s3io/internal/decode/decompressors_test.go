package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

func gzipNamed(t *testing.T, name, text string) []byte {
	t.Helper()
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Name = name
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// zstdFrames writes one zstd frame per argument with the streaming encoder, as a compressing
// pipe does. It is not s3test.Zstd, which encodes with EncodeAll: frames of more than one
// block come out different, and these tests read both kinds.
func zstdFrames(t *testing.T, frames ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, f := range frames {
		w, err := zstd.NewWriter(&out)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// sampleText is compressible but not trivially so: many distinct lines.
func sampleText(seed int64, n int) string {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)))
	var b strings.Builder
	for b.Len() < n {
		fmt.Fprintf(&b, "%d record %x %s\n", b.Len(), rng.Int64(), strings.Repeat("ab", rng.IntN(20)))
	}
	return b.String()
}

// onlyReader hides any extra interfaces of r (such as io.ByteReader or Len), as an S3
// body does.
type onlyReader struct{ r io.Reader }

func (r onlyReader) Read(p []byte) (int, error) { return r.r.Read(p) }

// openAll opens src with d and reads the whole stream. An error from open and an error
// from reading are told apart by openErr.
func openAll(d *Decompressors, mode Compression, key string, src io.Reader) (out []byte, openErr, readErr error) {
	s, _, err := d.Open(mode, key, src)
	if err != nil {
		return nil, err, nil
	}
	out, err = io.ReadAll(s)
	return out, nil, err
}

func TestDetect(t *testing.T) {
	gz := []byte{0x1f, 0x8b, 0x08, 0x00}
	zs := []byte{0x28, 0xb5, 0x2f, 0xfd}
	plain := []byte("abcd")
	cases := []struct {
		mode Compression
		key  string
		head []byte
		want Compression
	}{
		{Auto, "a.gz", plain, Gzip},
		{Auto, "logs/A.GZ", plain, Gzip},
		{Auto, "x.Gz", nil, Gzip},
		{Auto, "x.gzip", plain, Gzip},
		{Auto, "x.GZIP", plain, Gzip},
		{Auto, "x.zst", plain, Zstd},
		{Auto, "x.ZST", plain, Zstd},
		{Auto, "x.zstd", plain, Zstd},
		{Auto, "x.ZsTd", nil, Zstd},
		{Auto, "x.gz", zs, Gzip},  // the extension decides first
		{Auto, "x.zst", gz, Zstd}, // the extension decides first
		{Auto, "x.txt", gz, Gzip},
		{Auto, "x", gz[:2], Gzip},
		{Auto, "x.txt", zs, Zstd},
		{Auto, "x", zs[:3], None},
		{Auto, "x", gz[:1], None},
		{Auto, "x.txt", plain, None},
		{Auto, "x.gz.txt", plain, None},
		{Auto, "x.tgz", plain, Gzip}, // a tar inside is found after decompression
		{Auto, "gz", plain, None},
		{Auto, "x.zst/part", plain, None},
		{Auto, "", nil, None},
		{None, "x.gz", gz, None},
		{None, "x.zst", zs, None},
		{Gzip, "x.txt", plain, Gzip},
		{Gzip, "x.zst", zs, Gzip},
		{Zstd, "x.gz", gz, Zstd},
		{Zstd, "x", nil, Zstd},
	}
	for _, c := range cases {
		if got := Detect(c.mode, c.key, c.head); got != c.want {
			t.Errorf("Detect(%q, %q, % x) = %q, want %q", c.mode, c.key, c.head, got, c.want)
		}
	}
}

func TestDecompressorsOpen(t *testing.T) {
	text := sampleText(1, 100_000)
	gz2 := s3test.Gzip("first member\n", "second member\nno newline")
	zs2 := zstdFrames(t, "frame one\n", "frame two\n")
	cases := []struct {
		name string
		mode Compression
		key  string
		in   []byte
		want string
	}{
		{"plain", Auto, "a.txt", []byte("hello\nworld"), "hello\nworld"},
		{"plain 1 byte", Auto, "a", []byte("h"), "h"},
		{"plain 3 bytes", Auto, "a", []byte("abc"), "abc"},
		{"plain 4 bytes", Auto, "a", []byte("abcd"), "abcd"},
		{"plain gzip-looking 1 byte", Auto, "a", []byte{0x1f}, "\x1f"},
		{"plain large", Auto, "a.log", []byte(text), text},
		{"forced none on gzip", None, "a.gz", gz2, string(gz2)},
		{"gzip by key", Auto, "a.gz", s3test.Gzip(text), text},
		{"gzip by magic", Auto, "a.log", s3test.Gzip(text), text},
		{"gzip forced", Gzip, "a.zst", s3test.Gzip("x"), "x"},
		{"gzip multi-member", Auto, "a.GZ", gz2, "first member\nsecond member\nno newline"},
		{"gzip multi-member by magic", Auto, "a", gz2, "first member\nsecond member\nno newline"},
		{"gzip three members with empty", Auto, "a.gz", s3test.Gzip("a\n", "", "b\n"), "a\nb\n"},
		{"gzip of nothing", Auto, "a.gz", s3test.Gzip(""), ""},
		{"zstd by key", Auto, "a.zst", zstdFrames(t, text), text},
		{"zstd by magic", Auto, "a", zstdFrames(t, text), text},
		{"zstd forced", Zstd, "a.gz", zstdFrames(t, "y\n"), "y\n"},
		{"zstd multi-frame", Auto, "a.ZSTD", zs2, "frame one\nframe two\n"},
		{"empty auto", Auto, "a.txt", nil, ""},
		{"empty .gz", Auto, "a.gz", nil, ""},
		{"empty gzip forced", Gzip, "a", nil, ""},
		{"empty .zst", Auto, "a.zst", nil, ""},
		{"empty zstd forced", Zstd, "a", nil, ""},
	}
	var d Decompressors
	defer d.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Through a plain io.Reader, as an S3 body is, and with a fresh and the shared d.
			for _, fresh := range []bool{false, true} {
				dd := &d
				if fresh {
					dd = &Decompressors{}
				}
				got, openErr, readErr := openAll(dd, c.mode, c.key, onlyReader{bytes.NewReader(c.in)})
				if fresh {
					dd.Close()
				}
				if openErr != nil || readErr != nil {
					t.Fatalf("fresh %v: open: %v, read: %v", fresh, openErr, readErr)
				}
				if string(got) != c.want {
					t.Fatalf("fresh %v: got %d bytes %.40q, want %d bytes %.40q", fresh, len(got), got, len(c.want), c.want)
				}
			}
		})
	}
}

func TestDecompressorsCorrupt(t *testing.T) {
	text := sampleText(2, 50_000)
	gz := s3test.Gzip(text)
	zs := zstdFrames(t, text)

	badDeflate := bytes.Clone(gz)
	for i := 10; i < 200; i++ {
		badDeflate[i] ^= 0xa5
	}
	badCRC := bytes.Clone(gz)
	badCRC[len(badCRC)-6] ^= 0xff // inside the CRC-32 of the trailer
	badSize := bytes.Clone(gz)
	badSize[len(badSize)-1] ^= 0x01 // inside ISIZE
	trailingGarbage := append(bytes.Clone(s3test.Gzip("ok\n")), []byte("not gzip at all")...)
	badZstdBody := bytes.Clone(zs)
	for i := 12; i < len(badZstdBody)-8; i += 7 {
		badZstdBody[i] ^= 0x5a
	}

	// atOpen: the damage is in the gzip header, which open reads; everything else fails
	// when the stream is read (zstd reads nothing in open).
	cases := []struct {
		name   string
		mode   Compression
		key    string
		in     []byte
		atOpen bool
	}{
		{"gzip truncated header", Auto, "a.gz", gz[:7], true},
		{"gzip magic only", Auto, "a", gz[:2], true},
		{"gzip forced on plain text", Gzip, "a", []byte("plain text, not gzip"), true},
		{"gz key on plain text", Auto, "a.gz", []byte("plain text, not gzip"), true},
		{"gzip corrupt deflate", Auto, "a.gz", badDeflate, false},
		{"gzip bad crc", Auto, "a.gz", badCRC, false},
		{"gzip bad size", Auto, "a.gz", badSize, false},
		{"gzip truncated body", Auto, "a.gz", gz[:len(gz)/2], false},
		{"gzip truncated trailer", Auto, "a.gz", gz[:len(gz)-3], false},
		{"gzip trailing garbage", Auto, "a.gz", trailingGarbage, false},
		{"zstd truncated", Auto, "a.zst", zs[:len(zs)/2], false},
		{"zstd truncated by magic", Auto, "a", zs[:len(zs)-1], false},
		{"zstd truncated header", Auto, "a.zst", zs[:5], false},
		{"zstd magic only", Auto, "a", zs[:4], false},
		{"zstd corrupt body", Auto, "a.zst", badZstdBody, false},
		{"zstd forced on plain text", Zstd, "a", []byte("plain text, not zstd"), false},
	}
	var shared Decompressors
	defer shared.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, fresh := range []bool{false, true} {
				d := &shared
				if fresh {
					d = &Decompressors{}
				}
				_, openErr, readErr := openAll(d, c.mode, c.key, onlyReader{bytes.NewReader(c.in)})
				if fresh {
					d.Close()
				}
				err := openErr
				if err == nil {
					err = readErr
				}
				if err == nil {
					t.Fatalf("fresh %v: no error", fresh)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("fresh %v: err = %v (open %v), want ErrCorrupt", fresh, err, openErr != nil)
				}
				if (openErr != nil) != c.atOpen {
					t.Errorf("fresh %v: open err %v, read err %v; want the error from open: %v", fresh, openErr, readErr, c.atOpen)
				}
			}
		})
	}
}

// failingSource serves data up to cut bytes, then fails as fetch.PinnedReader does when the
// S3 body breaks.
type failingSource struct {
	data  []byte
	cut   int
	pos   int
	cause error
}

func (r *failingSource) Read(p []byte) (int, error) {
	if r.pos >= r.cut {
		return 0, &fetch.ReadError{Offset: int64(r.pos), Err: r.cause}
	}
	n := copy(p[:min(len(p), r.cut-r.pos)], r.data[r.pos:])
	r.pos += n
	return n, nil
}

// TestDecompressorsSourceErrorIsNotCorrupt breaks the source at many points of a
// compressed object: the failure must surface as the source's error, never as ErrCorrupt.
func TestDecompressorsSourceErrorIsNotCorrupt(t *testing.T) {
	text := sampleText(3, 300_000)
	// Cut around the second gzip member's header too: there it is read by Read, not open.
	second := len(s3test.Gzip(text[:100_000]))
	formats := []struct {
		name  string
		key   string
		data  []byte
		extra []int
	}{
		{"gzip", "a.gz", s3test.Gzip(text[:100_000], text[100_000:]), []int{second - 9, second - 1, second, second + 1, second + 4, second + 9, second + 10, second + 11}},
		// gzip(1) stores the file name in the header (FNAME), which gzip.Reader reads in open.
		{"gzip with name header", "a.gz", gzipNamed(t, "access-2024-01-01T00.log", text), nil},
		{"zstd", "a.zst", zstdFrames(t, text[:100_000], text[100_000:]), nil},
		{"plain", "a.txt", []byte(text), nil},
	}
	cause := errors.New("connection reset by peer")
	var shared Decompressors
	defer shared.Close()
	for _, f := range formats {
		var cuts []int
		for k := 0; k < 64 && k < len(f.data); k++ {
			cuts = append(cuts, k)
		}
		for k := 64; k < len(f.data); k += len(f.data)/50 + 1 {
			cuts = append(cuts, k)
		}
		for k := max(len(f.data)-20, 0); k < len(f.data); k++ {
			cuts = append(cuts, k)
		}
		cuts = append(cuts, f.extra...)
		var bad []string
		for _, cut := range cuts {
			src := &failingSource{data: f.data, cut: cut, cause: cause}
			out, openErr, readErr := openAll(&shared, Auto, f.key, src)
			err := openErr
			where := "open"
			if err == nil {
				err, where = readErr, "read"
			}
			var se *fetch.ReadError
			switch {
			case err == nil:
				t.Errorf("%s cut at %d of %d: no error, %d bytes out", f.name, cut, len(f.data), len(out))
			case errors.Is(err, ErrCorrupt) || !errors.As(err, &se) || !errors.Is(err, cause):
				bad = append(bad, fmt.Sprintf("cut %d (%s): %v", cut, where, err))
			case !strings.HasPrefix(text, string(out)):
				t.Errorf("%s cut at %d: output before the error is not a prefix of the text", f.name, cut)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: a source read error was reported as corrupt data (or lost its type) at %d of %d cut points, e.g.:\n  %s",
				f.name, len(bad), len(cuts), strings.Join(bad[:min(len(bad), 6)], "\n  "))
		}
	}
}

// refusingSource serves data up to cut bytes, then fails as a GET of a later part fails
// when it is refused (a 412, a 404, an answer of another version): with the request's
// error, which is no fetch.ReadError.
type refusingSource struct {
	data  []byte
	cut   int
	pos   int
	cause error
}

func (r *refusingSource) Read(p []byte) (int, error) {
	if r.pos >= r.cut {
		return 0, fmt.Errorf("pinned GET s3://b/k at byte %d: %w", r.pos, r.cause)
	}
	n := copy(p[:min(len(p), r.cut-r.pos)], r.data[r.pos:])
	r.pos += n
	return n, nil
}

// A refused GET of a later part of a compressed object surfaces as the refusal, never as
// corruption: the decompressor's account of the bytes that did not come is not the
// object's fault.
func TestDecompressorsRefusedPartIsNotCorrupt(t *testing.T) {
	text := sampleText(5, 600_000)
	cause := errors.New("api error PreconditionFailed")
	var shared Decompressors
	defer shared.Close()
	for _, f := range []struct {
		name, key string
		data      []byte
	}{
		{"gzip", "a.gz", s3test.Gzip(text[:300_000], text[300_000:])},
		{"zstd", "a.zst", zstdFrames(t, text[:300_000], text[300_000:])},
	} {
		for _, cut := range []int{0, 1, 5, 64, len(f.data) / 4, len(f.data) / 2, len(f.data) - 1} {
			src := &refusingSource{data: f.data, cut: cut, cause: cause}
			out, openErr, readErr := openAll(&shared, Auto, f.key, onlyReader{src})
			err := openErr
			if err == nil {
				err = readErr
			}
			if !errors.Is(err, cause) || errors.Is(err, ErrCorrupt) || !strings.HasPrefix(text, string(out)) {
				t.Errorf("%s refused at byte %d of %d: %d bytes out, %v; want the refusal, not corruption", f.name, cut, len(f.data), len(out), err)
			}
		}
	}
}

// TestDecompressorsReuse reads a sequence of objects, good and bad, with one Decompressors
// value, as one DoFn instance does.
func TestDecompressorsReuse(t *testing.T) {
	texts := []string{sampleText(10, 70_000), sampleText(11, 5), sampleText(12, 300_000), "", "a\nb\n"}
	type obj struct {
		key     string
		mode    Compression
		data    []byte
		want    string
		corrupt bool
	}
	var seq []obj
	for i, tx := range texts {
		seq = append(seq,
			obj{key: fmt.Sprintf("%d.gz", i), mode: Auto, data: s3test.Gzip(tx, tx), want: tx + tx},
			obj{key: fmt.Sprintf("%d.zst", i), mode: Auto, data: zstdFrames(t, tx), want: tx},
			obj{key: fmt.Sprintf("%d.txt", i), mode: Auto, data: []byte(tx), want: tx},
			obj{key: fmt.Sprintf("%d", i), mode: Auto, data: zstdFrames(t, tx, "+"), want: tx + "+"},
		)
		if z := zstdFrames(t, tx+"tail"); len(z) > 12 {
			seq = append(seq, obj{key: fmt.Sprintf("%d.zst", i), mode: Auto, data: z[:len(z)-5], corrupt: true})
		}
		g := s3test.Gzip(tx + "tail")
		seq = append(seq, obj{key: fmt.Sprintf("%d.gz", i), mode: Auto, data: g[:len(g)-5], corrupt: true})
	}
	var d Decompressors
	defer d.Close()
	for round := 0; round < 2; round++ {
		for i, o := range seq {
			got, openErr, readErr := openAll(&d, o.mode, o.key, onlyReader{bytes.NewReader(o.data)})
			err := openErr
			if err == nil {
				err = readErr
			}
			if o.corrupt {
				if !errors.Is(err, ErrCorrupt) {
					t.Errorf("round %d object %d (%s): err = %v, want ErrCorrupt", round, i, o.key, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("round %d object %d (%s): %v", round, i, o.key, err)
				continue
			}
			if string(got) != o.want {
				t.Errorf("round %d object %d (%s): got %d bytes, want %d", round, i, o.key, len(got), len(o.want))
			}
		}
		// A closed Decompressors is usable again.
		d.Close()
	}

	// Abandoning a stream half read (a reader stopped by a split) does not disturb the next.
	big := sampleText(13, 500_000)
	for _, key := range []string{"half.zst", "half.gz"} {
		var data []byte
		if strings.HasSuffix(key, ".zst") {
			data = zstdFrames(t, big)
		} else {
			data = s3test.Gzip(big)
		}
		s, _, err := d.Open(Auto, key, onlyReader{bytes.NewReader(data)})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 1000)
		if _, err := io.ReadFull(s, buf); err != nil {
			t.Fatal(err)
		}
		if string(buf) != big[:1000] {
			t.Fatalf("%s: first 1000 bytes wrong", key)
		}
		next := sampleText(14, 20_000)
		got, openErr, readErr := openAll(&d, Auto, "next"+key[4:], onlyReader{bytes.NewReader(
			map[bool][]byte{true: zstdFrames(t, next), false: s3test.Gzip(next)}[strings.HasSuffix(key, ".zst")])})
		if openErr != nil || readErr != nil || string(got) != next {
			t.Errorf("after abandoning %s: got %d bytes, open %v, read %v; want %d bytes", key, len(got), openErr, readErr, len(next))
		}
	}
}
