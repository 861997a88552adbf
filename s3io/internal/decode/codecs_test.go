package decode

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang/snappy"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// pyDeflate compresses data with python3's zlib at wbits (-15: raw deflate, 15: zlib).
func pyDeflate(t testing.TB, data []byte, wbits int) []byte {
	t.Helper()
	out, err := clitool.Deflate(data, 6, wbits)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func golangSnappy(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := snappy.NewBufferedWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// cliObject is an object a command-line tool wrote.
type cliObject struct {
	name  string
	comp  Compression
	ext   string // a key extension that selects comp
	magic bool   // Detect finds comp by the object's magic bytes too
	data  []byte
	want  []byte
}

// cliObjects writes text with every codec's tools, in the variants that matter: several
// blocks, several streams or frames, concatenated files.
func cliObjects(t testing.TB, text []byte) []cliObject {
	t.Helper()
	clitool.Need(t, "bzip2", "lbzip2", "pbzip2", "xz", "lz4", "pigz", "python3", "brotli", "zstd", "gzip")
	half := text[:len(text)/2]
	bz := clitool.Run(t, text, "bzip2", "-9", "-c")
	xzOut := clitool.Run(t, text, "xz", "-c")
	lz := clitool.Run(t, text, "lz4", "-c")
	twice := cat(text, half)
	return []cliObject{
		{"bzip2 -9", Bzip2, ".bz2", true, bz, text},
		{"lbzip2 -n2 -1 (several blocks)", Bzip2, ".bz2", true, clitool.Run(t, text, "lbzip2", "-n2", "-1", "-c"), text},
		{"pbzip2 -p2 -1 (a stream per block)", Bzip2, ".tbz2", true, clitool.Run(t, text, "pbzip2", "-p2", "-1", "-c"), text},
		{"bzip2 concatenated", Bzip2, ".bz2", true, cat(bz, clitool.Run(t, half, "bzip2", "-c")), twice},
		{"xz", Xz, ".xz", true, xzOut, text},
		{"xz -T2 small blocks", Xz, ".xz", true, clitool.Run(t, text, "xz", "-T2", "--block-size=64KiB", "-c"), text},
		{"xz concatenated", Xz, ".txz", true, cat(xzOut, clitool.Run(t, half, "xz", "-0", "-c")), twice},
		{"xz stream padding", Xz, ".xz", true, cat(xzOut, make([]byte, 8), clitool.Run(t, half, "xz", "-c")), twice},
		{"xz --check=sha256", Xz, ".xz", true, clitool.Run(t, text, "xz", "--check=sha256", "-c"), text},
		{"lz4", Lz4, ".lz4", true, lz, text},
		{"lz4 concatenated", Lz4, ".lz4", true, cat(lz, clitool.Run(t, half, "lz4", "-c")), twice},
		{"lz4 --content-size", Lz4, ".lz4", true, clitool.Run(t, text, "lz4", "--content-size", "-c"), text},
		{"lz4 -B4 block checksums", Lz4, ".lz4", true, clitool.Run(t, text, "lz4", "-B4", "-BX", "-BD", "-c"), text},
		{"snappy framing by s2", Snappy, ".sz", true, clitool.SnappyFramed(text), text},
		{"snappy framing by golang/snappy", Snappy, ".sz", true, golangSnappy(t, text), text},
		{"pigz -z", Zlib, ".zz", true, clitool.Run(t, text, "pigz", "-z", "-c"), text},
		{"python zlib", Zlib, ".zlib", true, pyDeflate(t, text, 15), text},
		{"python raw deflate", Deflate, ".deflate", false, pyDeflate(t, text, -15), text},
		{"brotli", Brotli, ".br", false, clitool.Run(t, text, "brotli", "-c"), text},
		{"brotli -q 5 -w 24", Brotli, ".br", false, clitool.Run(t, text, "brotli", "-q", "5", "-w", "24", "-c"), text},
		{"brotli --large_window=26", Brotli, ".br", false, clitool.Run(t, text, "brotli", "-q", "5", "--large_window=26", "-c"), text},
		{"zstd", Zstd, ".zst", true, clitool.Run(t, text, "zstd", "-c"), text},
		{"gzip", Gzip, ".gz", true, clitool.Run(t, text, "gzip", "-c"), text},
	}
}

func TestCodecsCLIObjects(t *testing.T) {
	text := []byte(sampleText(21, 400_000))
	var shared Decompressors
	defer shared.Close()
	for _, o := range cliObjects(t, text) {
		t.Run(o.name, func(t *testing.T) {
			keys := []struct {
				mode Compression
				key  string
			}{{Auto, "obj" + o.ext}, {Auto, "OBJ" + strings.ToUpper(o.ext)}, {o.comp, "obj"}}
			if o.magic {
				keys = append(keys, struct {
					mode Compression
					key  string
				}{Auto, "obj"})
				if got := Detect(Auto, "obj", o.data[:min(len(o.data), MagicLen)]); got != o.comp {
					t.Errorf("Detect by magic = %q, want %q", got, o.comp)
				}
			}
			if got := Detect(Auto, "x/obj"+o.ext, []byte("no magic")); got != o.comp {
				t.Errorf("Detect by extension %s = %q, want %q", o.ext, got, o.comp)
			}
			for _, k := range keys {
				for _, fresh := range []bool{false, true} {
					d := &shared
					if fresh {
						d = &Decompressors{}
					}
					s, comp, err := d.Open(k.mode, k.key, onlyReader{bytes.NewReader(o.data)})
					if err != nil {
						t.Fatalf("%s %q: open: %v", k.mode, k.key, err)
					}
					if comp != o.comp {
						t.Errorf("%s %q: comp %q, want %q", k.mode, k.key, comp, o.comp)
					}
					got, err := io.ReadAll(s)
					if err != nil {
						t.Fatalf("%s %q (fresh %v): read: %v", k.mode, k.key, fresh, err)
					}
					if !bytes.Equal(got, o.want) {
						t.Fatalf("%s %q: got %d bytes, want %d", k.mode, k.key, len(got), len(o.want))
					}
					if fresh {
						d.Close()
					}
				}
			}
		})
	}
}

// readErr opens data as key with d and reads it all, returning the first error.
func readErr(d *Decompressors, mode Compression, key string, data []byte) ([]byte, error) {
	out, openErr, rErr := openAll(d, mode, key, onlyReader{bytes.NewReader(data)})
	if openErr != nil {
		return out, openErr
	}
	return out, rErr
}

func TestCodecsTruncatedCorruptTrailing(t *testing.T) {
	text := []byte(sampleText(22, 300_000))
	var shared Decompressors
	defer shared.Close()
	for _, o := range cliObjects(t, text) {
		t.Run(o.name, func(t *testing.T) {
			n := len(o.data)
			key := "obj" + o.ext
			var bad []string
			check := func(what string, data []byte) {
				out, err := readErr(&shared, Auto, key, data)
				if !errors.Is(err, ErrCorrupt) {
					bad = append(bad, fmt.Sprintf("%s: %d bytes out, err %v", what, len(out), err))
				}
			}
			// Truncation anywhere: in the header, in the data, in the end marker or
			// checksum, one byte short. (The Snappy framing format has no end marker: a
			// cut between chunks cannot be seen, so no cut here falls on one.)
			for _, cut := range []int{1, 2, 3, 5, 9, 13, 20, 40, n / 5, n / 3, n / 2, 2 * n / 3, n - 300, n - 40, n - 9, n - 5, n - 4, n - 2, n - 1} {
				if cut > 0 && cut < n && !(o.comp == Snappy && snappyChunkBoundary(o.data, cut)) {
					check(fmt.Sprintf("cut at %d of %d", cut, n), o.data[:cut])
				}
			}
			// Bytes flipped in the middle. Raw deflate has no checksum: a flip inside a
			// block's codes can decode to other text without an error, so its flips are in
			// the first block's header and code tables, which any change breaks.
			flipped := bytes.Clone(o.data)
			at := n / 3
			if o.comp == Deflate {
				at = 0
			}
			for i := at; i < at+64; i++ {
				flipped[i] ^= 0x5a
			}
			check("flipped bytes", flipped)
			// Trailing garbage after a complete stream.
			check("trailing garbage", cat(o.data, []byte("garbage after the stream\n")))
			check("trailing garbage byte", cat(o.data, []byte{'x'}))
			if o.comp != Xz {
				// Four zero bytes are xz stream padding; anywhere else they are garbage.
				check("trailing zeros", cat(o.data, make([]byte, 4)))
			}
			if len(bad) > 0 {
				t.Errorf("%d damaged objects not reported as ErrCorrupt:\n  %s", len(bad), strings.Join(bad, "\n  "))
			}
		})
	}
}

// snappyChunkBoundary reports whether cut falls between two chunks of a Snappy framing
// stream (or inside the stream identifier).
func snappyChunkBoundary(data []byte, cut int) bool {
	for p := 0; p+4 <= len(data); {
		if p == cut {
			return true
		}
		p += 4 + int(data[p+1]) | int(data[p+2])<<8 | int(data[p+3])<<16
		if p == cut {
			return true
		}
	}
	return false
}

// TestCodecsSourceErrorIsNotCorrupt breaks the source of every codec's object at many
// points: the failure surfaces as the source's error, never as ErrCorrupt.
func TestCodecsSourceErrorIsNotCorrupt(t *testing.T) {
	text := []byte(sampleText(23, 200_000))
	cause := errors.New("connection reset by peer")
	var shared Decompressors
	defer shared.Close()
	for _, o := range cliObjects(t, text) {
		n := len(o.data)
		var bad []string
		for _, cut := range []int{0, 1, 4, 7, 12, 30, 100, n / 4, n / 2, n - 20, n - 4, n - 1} {
			if cut < 0 || cut >= n {
				continue
			}
			src := &failingSource{data: o.data, cut: cut, cause: cause}
			out, openErr, rErr := openAll(&shared, Auto, "obj"+o.ext, src)
			err := openErr
			if err == nil {
				err = rErr
			}
			if err == nil || errors.Is(err, ErrCorrupt) || !errors.Is(err, cause) || !bytes.HasPrefix(o.want, out) {
				bad = append(bad, fmt.Sprintf("cut %d: %d bytes out, %v", cut, len(out), err))
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s: the source's error was lost or taken for corruption:\n  %s", o.name, strings.Join(bad, "\n  "))
		}
	}
}

func TestCodecsUnsupportedFormats(t *testing.T) {
	clitool.Need(t, "7z", "compress", "lzip", "lz4")
	text := []byte(sampleText(24, 20_000))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	clitool.RunIn(t, dir, nil, "7z", "a", "-bd", "-y", "out.7z", "in.txt")
	sevenZ, err := os.ReadFile(filepath.Join(dir, "out.7z"))
	if err != nil {
		t.Fatal(err)
	}
	objs := []struct {
		name, ext string
		data      []byte
	}{
		{"7z", ".7z", sevenZ},
		{"rar (magic)", ".rar", cat([]byte("Rar!\x1a\x07\x01\x00"), text[:100])},
		{"compress .Z", ".Z", clitool.Run(t, text, "compress", "-c")},
		{"lzip", ".lz", clitool.Run(t, text, "lzip", "-c")},
		{"legacy lz4 -l", ".lz4", clitool.Run(t, text, "lz4", "-l", "-c")},
	}
	var d Decompressors
	defer d.Close()
	for _, o := range objs {
		keys := []string{"obj", "obj" + o.ext}
		if o.ext == ".lz4" {
			keys = keys[:1] // the .lz4 extension selects the frame format; the magic tells legacy
		}
		for _, key := range keys {
			src := &countingReader{src: bytes.NewReader(o.data)}
			s, comp, err := d.Open(Auto, key, src)
			if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt) || s != nil {
				t.Errorf("%s as %q: stream %v, comp %q, err %v; want ErrUnsupported", o.name, key, s != nil, comp, err)
				continue
			}
			if !IsUnsupported(comp) {
				t.Errorf("%s as %q: comp %q, want an unsupported one", o.name, key, comp)
			}
			if src.served > MagicLen {
				t.Errorf("%s as %q: read %d bytes before refusing, want at most %d", o.name, key, src.served, MagicLen)
			}
		}
	}
	// Archives are returned as they are, for the caller to read.
	zipped := clitool.RunIn(t, dir, nil, "zip", "-q", "-", "in.txt")
	tarred := clitool.RunIn(t, dir, nil, "tar", "cf", "-", "in.txt")
	for _, a := range []struct {
		key  string
		data []byte
		want Compression
	}{{"a.zip", zipped, Zip}, {"a", zipped, Zip}, {"a.tar", tarred, Tar}, {"a", tarred, Tar}} {
		s, comp, err := d.Open(Auto, a.key, bytes.NewReader(a.data))
		if err != nil || comp != a.want {
			t.Fatalf("%s: comp %q, err %v; want %q", a.key, comp, err, a.want)
		}
		got, err := io.ReadAll(s)
		if err != nil || !bytes.Equal(got, a.data) {
			t.Errorf("%s: %d bytes, %v; want the archive's %d bytes as they are", a.key, len(got), err, len(a.data))
		}
	}
}

// zstdFrameHeader crafts a zstd frame that asks for window (a power of two, ≥ 1 KiB),
// names dictionary dict if non-zero, and holds one empty raw block.
func zstdFrameHeader(windowLog uint, dict byte) []byte {
	fhd := byte(0)
	if dict != 0 {
		fhd |= 1 // a 1-byte Dictionary_ID
	}
	b := []byte{0x28, 0xb5, 0x2f, 0xfd, fhd, byte(windowLog-10) << 3}
	if dict != 0 {
		b = append(b, dict)
	}
	return append(b, 0x01, 0x00, 0x00) // last block, raw, 0 bytes
}

func TestCodecsWindowLimit(t *testing.T) {
	clitool.Need(t, "zstd", "xz", "brotli")
	text := []byte(sampleText(25, 50_000))
	small := zstdFrames(t, "a small frame first\n")
	long28 := clitool.Run(t, text, "zstd", "--long=28", "-1", "-c") // stdin: the header asks for 256 MiB
	xz6 := clitool.Run(t, text, "xz", "-6", "-c")                   // an 8 MiB dictionary
	xz0 := clitool.Run(t, text, "xz", "-0", "-c")                   // 256 KiB
	br24 := clitool.Run(t, text, "brotli", "-q", "5", "-w", "24", "-c")
	brLarge := clitool.Run(t, text, "brotli", "-q", "5", "--large_window=28", "-c")
	brLarge26 := clitool.Run(t, text, "brotli", "-q", "5", "--large_window=26", "-c")
	withDict := zstdWithDictionary(t)
	cases := []struct {
		name      string
		max       int64
		key       string
		data      []byte
		wantInMsg string // "" for a stream that must decode
	}{
		{"zstd --long=28 at the default", 0, "a.zst", long28, "asks for a 256 MiB window, above Config.MaxDecoderWindowBytes (128 MiB)"},
		{"zstd --long=28 within 256 MiB", 256 << 20, "a.zst", long28, ""},
		{"zstd crafted 1 GiB", 0, "a", zstdFrameHeader(30, 0), "asks for a 1 GiB window"},
		{"zstd crafted 256 MiB after a small frame", 0, "a.zst", cat(small, zstdFrameHeader(28, 0)), "asks for a 256 MiB window"},
		{"zstd crafted 2 MiB under a 1 MiB bound", 1 << 20, "a.zst", zstdFrameHeader(21, 0), "asks for a 2 MiB window, above Config.MaxDecoderWindowBytes (1 MiB)"},
		{"zstd crafted 128 MiB at the default", 0, "a.zst", zstdFrameHeader(27, 0), ""},
		{"zstd dictionary", 0, "a.zst", zstdFrameHeader(20, 7), "needs dictionary 7"},
		{"zstd dictionary after a small frame", 0, "a.zst", cat(small, zstdFrameHeader(20, 9)), "needs dictionary 9"},
		{"zstd -D with a trained dictionary", 0, "a.zst", withDict, "needs dictionary"},
		{"xz -6 under a 4 MiB bound", 4 << 20, "a.xz", xz6, "asks for an 8 MiB window, above Config.MaxDecoderWindowBytes (4 MiB)"},
		{"xz -6 at the default", 0, "a.xz", xz6, ""},
		{"xz -0 then xz -6 under a 4 MiB bound", 4 << 20, "a.xz", cat(xz0, xz6), "above Config.MaxDecoderWindowBytes (4 MiB)"},
		{"brotli -w 24 under a 1 MiB bound", 1 << 20, "a.br", br24, "asks for a 16 MiB window"},
		{"brotli --large_window=26 at the default", 0, "a.br", brLarge26, ""},
		{"brotli --large_window=26 under a 32 MiB bound", 32 << 20, "a.br", brLarge26, "asks for a 64 MiB window, above Config.MaxDecoderWindowBytes (32 MiB)"},
		{"brotli --large_window=28 at the default", 0, "a.br", brLarge, "asks for a 256 MiB window, above Config.MaxDecoderWindowBytes (128 MiB)"},
	}
	for _, c := range cases {
		d := &Decompressors{MaxWindow: c.max}
		out, err := readErr(d, Auto, c.key, c.data)
		d.Close()
		switch {
		case c.wantInMsg == "" && err != nil:
			t.Errorf("%s: %v, want it decoded", c.name, err)
		case c.wantInMsg == "":
		case !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrCorrupt):
			t.Errorf("%s: %d bytes out, err %v; want ErrUnsupported", c.name, len(out), err)
		case !strings.Contains(err.Error(), c.wantInMsg):
			t.Errorf("%s: err %q, want it to say %q", c.name, err, c.wantInMsg)
		}
	}
}

// zstdWithDictionary trains a dictionary with the zstd tool on small samples and returns a
// sample compressed with it (zstd -D), as a real dictionary-compressed object is written.
func zstdWithDictionary(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for i := range 200 {
		name := fmt.Sprintf("s%03d.json", i)
		body := fmt.Sprintf(`{"event":"click","user":%d,"page":"/products/%d","agent":"Mozilla/5.0 (X11; Linux x86_64)"}`+"\n", i, i%17)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	clitool.RunIn(t, dir, nil, "zstd", append([]string{"-q", "--train", "-o", "dict", "--maxdict=4096"}, names...)...)
	return clitool.RunIn(t, dir, []byte(`{"event":"click","user":7,"page":"/products/7"}`+"\n"), "zstd", "-q", "-D", "dict", "-c")
}
