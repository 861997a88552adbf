package decode

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// codecSample is an object in one format for TestCodecTable: made here by a Go writer from
// plain (then Open must give plain back), or taken from testdata (plain nil).
type codecSample struct {
	data, plain []byte
}

// codecSamples returns an object of every format whose row has a magic, and of raw deflate
// and brotli, whose rows have none (Detect must not take them for what they are). The
// refused formats no Go package writes are their documented headers followed by text.
func codecSamples(t *testing.T) map[Compression]codecSample {
	t.Helper()
	text := []byte(strings.Repeat("a record of a log line, long enough to compress\n", 40))
	write := func(w io.WriteCloser, b *bytes.Buffer) codecSample {
		t.Helper()
		if _, err := w.Write(text); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return codecSample{data: b.Bytes(), plain: text}
	}
	corpus := func(path string) codecSample {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("testdata", "corpus", path))
		if err != nil {
			t.Fatal(err)
		}
		return codecSample{data: b}
	}
	var gz, lz, zl, fl, br bytes.Buffer
	fw, err := flate.NewWriter(&fl, 6)
	if err != nil {
		t.Fatal(err)
	}
	zs, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer zs.Close()
	refusedHead := func(h string) codecSample { return codecSample{data: append([]byte(h), text...)} }
	return map[Compression]codecSample{
		Gzip:    write(gzip.NewWriter(&gz), &gz),
		Zstd:    {data: zs.EncodeAll(text, nil), plain: text},
		Bzip2:   corpus("go/compress/bzip2/e.txt.bz2"),
		Xz:      corpus("therootcompany-xz/testdata/other/words.xz"),
		Lz4:     write(lz4.NewWriter(&lz), &lz),
		Snappy:  {data: golangSnappy(t, text), plain: text},
		Zlib:    write(zlib.NewWriter(&zl), &zl),
		Deflate: write(fw, &fl),
		Brotli:  write(brotli.NewWriter(&br), &br),
		Tar:     {data: tarOf(t, "in.txt", text)},
		Zip:     {data: zipOf(t, text)},

		"unsupported:a 7z archive":                       refusedHead("7z\xbc\xaf\x27\x1c\x00\x04"),
		"unsupported:a RAR archive":                      refusedHead("Rar!\x1a\x07\x01\x00"),
		"unsupported:a legacy .lzma (LZMA-alone) stream": refusedHead("\x5d\x00\x00\x80\x00\xff\xff\xff\xff\xff\xff\xff\xff"),
		"unsupported:a Unix compress (.Z, LZW) stream":   refusedHead("\x1f\x9d\x90"),
		"unsupported:an lzip (.lz) stream":               refusedHead("LZIP\x01\x0c"),
		"unsupported:an lzop (.lzo) stream":              refusedHead("\x89LZO\x00\r\n\x1a\n\x10\x30"),
		"unsupported:a legacy lz4 stream (lz4 -l)":       corpus("pierrec-lz4/testdata/Mark.Twain-Tom.Sawyer_legacy.txt.lz4"),
	}
}

func tarOf(t *testing.T, name string, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := tar.NewWriter(&b)
	if err := w.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func zipOf(t *testing.T, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, err := w.Create("in.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func head(b []byte) []byte { return b[:min(len(b), MagicLen)] }

// TestCodecTable checks every row of codecTable against what its format really is: Detect
// finds the row by each of its extensions (any case) and, for a row with a magic, by a real
// object's first bytes; the extension wins over the bytes; Open decodes the row's samples or
// refuses its format; CutAtUnits, Slow and IsUnsupported say what the row says.
func TestCodecTable(t *testing.T) {
	samples := codecSamples(t)
	var d Decompressors
	defer d.Close()
	for _, c := range codecTable {
		t.Run(strings.TrimPrefix(string(c.name), unsupportedPrefix), func(t *testing.T) {
			for _, ext := range slices.Concat(c.extensions, c.tarExtensions) {
				isTar := slices.Contains(c.tarExtensions, ext)
				for _, key := range []string{"logs/2024/obj" + ext, "logs/2024/OBJ" + strings.ToUpper(ext)} {
					if got := Detect(Auto, key, samples[Gzip].data); got != c.name {
						t.Errorf("Detect(%q) = %q, want %q", key, got, c.name)
					}
					if got := NamesTar(key); got != isTar {
						t.Errorf("NamesTar(%q) = %v, want %v", key, got, isTar)
					}
				}
				if !NamesTar("logs/obj.tar" + ext) {
					t.Errorf("NamesTar(%q) = false, want true", "logs/obj.tar"+ext)
				}
			}
			s, ok := samples[c.name]
			switch {
			case c.magic != nil && !ok:
				t.Fatalf("the row has a magic and the test no sample of %s", c.name)
			case c.magic != nil:
				for _, key := range []string{"obj", "obj.log", "obj.tar.bak"} {
					if got := Detect(Auto, key, head(s.data)); got != c.name {
						t.Errorf("Detect(%q, its first bytes) = %q, want %q", key, got, c.name)
					}
				}
			case ok:
				if got := Detect(Auto, "obj", head(s.data)); got == c.name {
					t.Errorf("Detect by content gave %q, which its row says cannot be told by content", got)
				}
			}
			if got, want := CutAtUnits(c.name), c.units; got != want {
				t.Errorf("CutAtUnits = %v, the row says %v", got, want)
			}
			if got, want := Slow(c.name), c.slow; got != want {
				t.Errorf("Slow = %v, the row says %v", got, want)
			}
			if got, want := IsUnsupported(c.name), c.advice != ""; got != want {
				t.Errorf("IsUnsupported = %v, want %v (the row's advice %q)", got, want, c.advice)
			}
			if ok {
				checkOpen(t, &d, c, s)
			}
		})
	}
}

// checkOpen opens s as an object named by c's first extension, or by content.
func checkOpen(t *testing.T, d *Decompressors, c codec, s codecSample) {
	t.Helper()
	key := "obj"
	if exts := slices.Concat(c.extensions, c.tarExtensions); len(exts) > 0 {
		key += exts[0]
	}
	r, comp, err := d.Open(Auto, key, bytes.NewReader(s.data))
	if comp != c.name {
		t.Errorf("Open(%q): comp %q, want %q", key, comp, c.name)
	}
	if c.advice != "" {
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), c.advice) || r != nil {
			t.Errorf("Open(%q): %v; want ErrUnsupported with the row's advice", key, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	got, err := io.ReadAll(r)
	switch {
	case err != nil:
		t.Errorf("reading %q: %v", key, err)
	case c.open == nil && !bytes.Equal(got, s.data):
		t.Errorf("%q: %d bytes, want the %d stored bytes as they are", key, len(got), len(s.data))
	case c.open != nil && s.plain != nil && !bytes.Equal(got, s.plain):
		t.Errorf("%q: %d decoded bytes, want the %d written", key, len(got), len(s.plain))
	}
}

// refusedAs is the Compression Detect gives an object in a refused format.
func refusedAs(format string) Compression { return Compression(unsupportedPrefix + format) }

// The TestCodecTableFacts tests pin, independently of the table, what callers rely on: the
// modes a Config may name in their order, the refusals' messages, every extension's format,
// the slow and unit codecs, and the detection order where two formats' checks overlap.
func TestCodecTableFactsModesRefusals(t *testing.T) {
	if want := []Compression{Auto, None, Gzip, Zstd, Bzip2, Xz, Lz4, Snappy, Zlib, Deflate, Brotli}; !slices.Equal(Codecs, want) {
		t.Errorf("Codecs = %q, want %q", Codecs, want)
	}
	refusals := map[string]string{
		"a 7z archive":                       "repack it as .tar.zst, .tar.xz or .zip (7z x, then tar)",
		"a RAR archive":                      "repack it as .tar.zst or .zip (unrar x, then tar)",
		"a legacy .lzma (LZMA-alone) stream": "recompress it as .xz (xz -d, then xz)",
		"a Unix compress (.Z, LZW) stream":   "recompress it as .gz (uncompress, then gzip)",
		"an lzip (.lz) stream":               "recompress it as .xz or .zst (lzip -d, then xz or zstd)",
		"an lzop (.lzo) stream":              "recompress it as .lz4 or .zst (lzop -d, then lz4 or zstd)",
		"a legacy lz4 stream (lz4 -l)":       "recompress it in the lz4 frame format (lz4 -d, then lz4 without -l)",
	}
	for format, advice := range refusals {
		c := refusedAs(format)
		want := "s3io: unsupported format: the object is " + format + ", which s3io does not read; " + advice
		if err := UnsupportedError(c); !errors.Is(err, ErrUnsupported) || err.Error() != want {
			t.Errorf("UnsupportedError(%q) = %v, want %q", c, err, want)
		}
	}
	if got, want := UnsupportedError("unsupported:unknown").Error(), "s3io: unsupported format: the object is , which s3io does not read; "; got != want {
		t.Errorf("UnsupportedError of an unknown format = %q, want %q", got, want)
	}
}

func TestCodecTableFactsExtensions(t *testing.T) {
	exts := map[string]Compression{
		".gz": Gzip, ".gzip": Gzip, ".tgz": Gzip, ".zst": Zstd, ".zstd": Zstd, ".tzst": Zstd,
		".bz2": Bzip2, ".bzip2": Bzip2, ".tbz2": Bzip2, ".tbz": Bzip2, ".xz": Xz, ".txz": Xz,
		".lz4": Lz4, ".sz": Snappy, ".zz": Zlib, ".zlib": Zlib, ".deflate": Deflate, ".br": Brotli,
		".tar": Tar, ".zip": Zip, ".7z": refusedAs("a 7z archive"), ".rar": refusedAs("a RAR archive"),
		".lzma": refusedAs("a legacy .lzma (LZMA-alone) stream"), ".Z": refusedAs("a Unix compress (.Z, LZW) stream"),
		".lz": refusedAs("an lzip (.lz) stream"), ".lzo": refusedAs("an lzop (.lzo) stream"),
	}
	tarNames := []string{".tgz", ".tzst", ".tbz2", ".tbz", ".txz", ".tar"}
	n := 0
	for _, c := range codecTable {
		n += len(c.extensions) + len(c.tarExtensions)
	}
	if n != len(exts) {
		t.Errorf("the table has %d extensions, want %d", n, len(exts))
	}
	for ext, want := range exts {
		if got := Detect(Auto, "obj"+ext, nil); got != want {
			t.Errorf("Detect(obj%s) = %q, want %q", ext, got, want)
		}
		if got, want := NamesTar("obj"+ext), slices.Contains(tarNames, ext); got != want {
			t.Errorf("NamesTar(obj%s) = %v, want %v", ext, got, want)
		}
	}
}

func TestCodecTableFactsSlowUnits(t *testing.T) {
	for _, c := range append(slices.Clone(Codecs), Tar, Zip, refusedAs("a 7z archive"), "bogus") {
		if got, want := Slow(c), c == Bzip2 || c == Xz || c == Brotli; got != want {
			t.Errorf("Slow(%q) = %v, want %v", c, got, want)
		}
		if got, want := CutAtUnits(c), c == Gzip || c == Zstd || c == Bzip2; got != want {
			t.Errorf("CutAtUnits(%q) = %v, want %v", c, got, want)
		}
	}
}

// TestCodecTableFactsDetectOrder: where two checks pass, the order of the switch the table
// replaced decides: the fixed magics first, then bzip2 and zlib, then tar (a tar's first
// name is any bytes).
func TestCodecTableFactsDetectOrder(t *testing.T) {
	skippable := []byte{0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4}
	for _, o := range []struct {
		name string
		head []byte
		want Compression
	}{
		{"a zstd skippable frame first", skippable, Zstd},
		{"a tar whose first name starts like bzip2", tarOf(t, "BZh91AY&SY.txt", nil), Bzip2},
		{"a tar whose first name starts like zlib", tarOf(t, "x^c.txt", nil), Zlib},
		{"a tar whose first name starts like lzip", tarOf(t, "LZIP.txt", nil), refusedAs("an lzip (.lz) stream")},
		{"a tar whose first name starts like rar", tarOf(t, "Rar!\x1a\x07.txt", nil), refusedAs("a RAR archive")},
		{"a tar", tarOf(t, "x.txt", nil), Tar},
		{"text", []byte("BZh is how this line starts, not a bzip2 stream\n"), None},
		{"empty", nil, None},
	} {
		if got := Detect(Auto, "obj", head(o.head)); got != o.want {
			t.Errorf("%s: Detect = %q, want %q", o.name, got, o.want)
		}
	}
}

// TestCodecTableExtensionsAreExclusive checks what makes the extension lookup independent of
// the rows' order: each suffix is a lower-case dot and a word without dots, in one row only,
// so that no suffix ends another and a key matches at most one.
func TestCodecTableExtensionsAreExclusive(t *testing.T) {
	seen := map[string]Compression{}
	for _, c := range codecTable {
		for _, s := range slices.Concat(c.extensions, c.tarExtensions) {
			if len(s) < 2 || s[0] != '.' || strings.Contains(s[1:], ".") || s != strings.ToLower(s) {
				t.Errorf("%s: extension %q is not a lower-case dot and a word", c.name, s)
			}
			if other, ok := seen[s]; ok {
				t.Errorf("extension %q is in the rows of %s and %s", s, other, c.name)
			}
			seen[s] = c.name
		}
	}
}
