package main

import (
	"cmp"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/codeclib"
)

// The codec prefixes (--codecs): codec-NAME/ holds the records of the main dataset's first
// --codec-size bytes, each object written by NAME's command-line tool, and is read by s3io
// and by lib: the 2-reader SDK loop (loop2's) with the codec library's own decoder.
const (
	codecPrefixPrefix = "codec-"
	variantLib        = "lib"
	// codecPlain is the uncompressed copy of the codec prefixes' records, the reference of
	// the lz4 and snappy targets when plain/ does not hold the same bytes.
	codecPlain = "plain"
)

// Targets the issue sets for the codec rows.
const (
	targetLib   = 0.8 // bzip2 and xz: s3io ≥ 0.8 × lib
	targetPlain = 0.8 // lz4 and snappy: s3io ≥ 0.8 × s3io's plain read of the same records
)

// codec is one --codecs name: how its objects are written, and the library's decode loop.
type codec struct {
	name   string
	bin    string // the command-line tool that writes the objects, "" for none
	ext    string // after .ndjson: what s3io's auto mode detects the codec by
	writer string // how the objects are written, for the report
	write  func(plain []byte) ([]byte, error)
	// lib makes a reader goroutine's decoder: the library's own loop (internal/codeclib).
	lib codeclib.Loop
	// target is the ratio the issue asks for: against lib ("lib"), against s3io's plain
	// read ("plain"), or none ("").
	target string
}

func tool(name string, args ...string) func([]byte) ([]byte, error) {
	return func(plain []byte) ([]byte, error) { return clitool.Output(plain, name, args...) }
}

// toolChunks runs the tool on each chunk bytes of the input and concatenates the outputs.
func toolChunks(chunk int, name string, args ...string) func([]byte) ([]byte, error) {
	return func(plain []byte) ([]byte, error) {
		var out []byte
		for off := 0; off < len(plain); off += chunk {
			b, err := clitool.Output(plain[off:min(off+chunk, len(plain))], name, args...)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		return out, nil
	}
}

func toolText(name string, args ...string) string {
	return "`" + strings.Join(append([]string{name}, args...), " ") + "`"
}

// codecAll is what --codecs all names.
var codecAll = []string{"bzip2", "xz", "lz4", "snappy", "zlib", "deflate", "brotli"}

var codecs = []codec{
	{name: "gzip", bin: "gzip", ext: ".gz", writer: toolText("gzip", "-c"), write: tool("gzip", "-c"), lib: codeclib.Loops["gzip"]},
	{name: "zstd", bin: "zstd", ext: ".zst", writer: toolText("zstd", "-c"), write: tool("zstd", "-c"), lib: codeclib.Loops["zstd"]},
	// bgzip writes BGZF, a gzip member per 64 KiB block, and pzstd a zstd frame per few MiB:
	// objects s3io cuts into segments at their units when larger than SplitTargetBytes.
	{name: "bgzip", bin: "bgzip", ext: ".gz", writer: toolText("bgzip", "-c", "-@", "2") + " (BGZF: a member per 64 KiB)", write: tool("bgzip", "-c", "-@", "2"), lib: codeclib.Loops["gzip"]},
	{name: "pzstd", bin: "pzstd", ext: ".zst", writer: toolText("pzstd", "-c", "-p", "2") + " (a frame per few MiB)", write: tool("pzstd", "-c", "-q", "-p", "2"), lib: codeclib.Loops["zstd"]},
	// gzip-cat is what `split -b 8M` then `gzip` per chunk then `cat` writes: members of
	// ~1.5 MB, units large enough that the planner's probe budget limits the cuts.
	{name: "gzip-cat", bin: "gzip", ext: ".gz", writer: "`gzip -c` per 8 MiB chunk, concatenated (a member per ~1.5 MB)", write: toolChunks(8<<20, "gzip", "-c"), lib: codeclib.Loops["gzip"]},
	{name: "bzip2", bin: "bzip2", ext: ".bz2", writer: toolText("bzip2", "-c"), write: tool("bzip2", "-c"), lib: codeclib.Loops["bzip2"], target: "lib"},
	// pbzip2 writes one bzip2 stream per 900 kB block, concatenated; lbzip2 one stream of
	// many blocks (both are the parallel compressors people use on big logs).
	{name: "pbzip2", bin: "pbzip2", ext: ".bz2", writer: toolText("pbzip2", "-c") + " (one stream per 900 kB block)", write: tool("pbzip2", "-c"), lib: codeclib.Loops["bzip2"], target: "lib"},
	{name: "lbzip2", bin: "lbzip2", ext: ".bz2", writer: toolText("lbzip2", "-c") + " (one stream)", write: tool("lbzip2", "-c"), lib: codeclib.Loops["bzip2"], target: "lib"},
	{name: "xz", bin: "xz", ext: ".xz", writer: toolText("xz", "-c", "-T1"), write: tool("xz", "-c", "-T1"), lib: codeclib.Loops["xz"], target: "lib"},
	{name: "lz4", bin: "lz4", ext: ".lz4", writer: toolText("lz4", "-c"), write: tool("lz4", "-c"), lib: codeclib.Loops["lz4"], target: "plain"},
	// Snappy framing has no standard command-line tool: klauspost/compress/s2 writes it.
	{name: "snappy", ext: ".sz", writer: "klauspost/compress/s2 `s2.NewWriter(w, s2.WriterSnappyCompat())` (no CLI tool writes Snappy framing)",
		write: func(plain []byte) ([]byte, error) { return clitool.SnappyFramed(plain), nil }, lib: codeclib.Loops["snappy"], target: "plain"},
	{name: "zlib", bin: "pigz", ext: ".zz", writer: toolText("pigz", "-z", "-c"), write: tool("pigz", "-z", "-c"), lib: codeclib.Loops["zlib"]},
	{name: "deflate", bin: "python3", ext: ".deflate", writer: "python3's `zlib.compressobj(6, zlib.DEFLATED, -15)`",
		write: func(plain []byte) ([]byte, error) { return clitool.Deflate(plain, 6, -15) }, lib: codeclib.Loops["deflate"]},
	// brotli's default quality, 11, compresses under 1 MB/s (0.75 MB/s on the 2-core
	// machine of the README's tables, -q 9 8.7 MB/s): -q 9 writes the same format with the
	// tool's default window (lgwin 22, 4 MiB) and stores ~12% more bytes.
	{name: "brotli", bin: "brotli", ext: ".br", writer: toolText("brotli", "-c", "-q", "9") + " (not the default -q 11, ~12× slower to write)", write: tool("brotli", "-c", "-q", "9"), lib: codeclib.Loops["brotli"]},
	{name: codecPlain, ext: "", writer: "uncompressed (the reference of the lz4 and snappy targets)", write: func(plain []byte) ([]byte, error) { return plain, nil },
		lib: func() func(io.Reader) (io.Reader, error) {
			return func(r io.Reader) (io.Reader, error) { return r, nil }
		}},
}

func codecNames() []string {
	var out []string
	for _, c := range codecs {
		out = append(out, c.name)
	}
	return out
}

func codecByName(name string) *codec {
	for i := range codecs {
		if codecs[i].name == name {
			return &codecs[i]
		}
	}
	return nil
}

// codecOf is the codec of a codec-NAME prefix, else nil.
func codecOf(prefix string) *codec {
	if name, ok := strings.CutPrefix(prefix, codecPrefixPrefix); ok {
		return codecByName(name)
	}
	return nil
}

func codecPrefix(name string) string { return codecPrefixPrefix + name }

// parseCodecs reads --codecs: names, "all", in the order given.
func parseCodecs(s string) ([]string, error) {
	var names []string
	for _, v := range strings.Split(s, ",") {
		if strings.TrimSpace(v) == "all" {
			names = append(names, codecAll...)
		} else {
			names = append(names, v)
		}
	}
	return parseList("codec", strings.Join(names, ","), codecNames())
}

// codecPrefixes are the codec prefixes the runs read, in table order: the codecs, then the
// plain reference copy when a plain target needs it and plain/ does not hold the same bytes.
func (o *options) codecPrefixes() []string {
	var out []string
	for _, name := range o.codecs {
		out = append(out, codecPrefix(name))
	}
	if ref := o.plainReference(); ref != "" && !slices.Contains(out, ref) && ref != formatPlain {
		out = append(out, ref)
	}
	return out
}

// plainReference is the prefix of s3io's plain read that the lz4 and snappy rows are
// compared with: plain/ when it holds exactly the codec prefixes' records, else
// codec-plain/; "" when no selected codec has that target.
func (o *options) plainReference() string {
	if !slices.ContainsFunc(o.codecs, func(n string) bool { return codecByName(n).target == "plain" }) {
		return ""
	}
	if slices.Contains(o.formats, formatPlain) && o.size == o.codecSize {
		return formatPlain
	}
	return codecPrefix(codecPlain)
}

// checkCodecTools fails when a tool that writes the objects of a selected codec is missing,
// before the server starts or anything is generated.
func checkCodecTools(names []string) error {
	var missing []string
	for _, n := range names {
		if c := codecByName(n); c.bin != "" {
			if _, err := exec.LookPath(c.bin); err != nil {
				p := clitool.Package(c.bin)
				missing = append(missing, fmt.Sprintf("%s (for %s; Debian package %s)", c.bin, n, cmp.Or(p, "?")))
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("--codecs: command-line tools missing: %s", strings.Join(missing, ", "))
	}
	return nil
}
