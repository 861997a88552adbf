// Package clitool runs the command-line compressors (gzip, bzip2, xz, lz4, zstd, brotli, …)
// for tests, so that the objects a test reads are the bytes the real tools write rather
// than what a Go encoder makes of the same format. It is test support: a missing tool
// fails the test (naming the Debian package that installs it), never skips it, so a CI
// image without the tools cannot pass by reading nothing.
package clitool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/s2"
)

// packages names the Debian package of each tool the tests use.
var packages = map[string]string{
	"gzip":     "gzip",
	"pigz":     "pigz",
	"bgzip":    "tabix",
	"bzip2":    "bzip2",
	"lbzip2":   "lbzip2",
	"pbzip2":   "pbzip2",
	"xz":       "xz-utils",
	"lz4":      "lz4",
	"zstd":     "zstd",
	"pzstd":    "zstd",
	"brotli":   "brotli",
	"zip":      "zip",
	"unzip":    "unzip",
	"bsdtar":   "libarchive-tools",
	"tar":      "tar",
	"od":       "coreutils",
	"7z":       "p7zip-full (or 7zip)",
	"compress": "ncompress",
	"lzip":     "lzip",
	"python3":  "python3",
	"split":    "coreutils",
	"xargs":    "findutils",
}

// Package names the Debian package that installs tool, or "" if this package does not know.
func Package(tool string) string { return packages[tool] }

// Need fails t unless every tool is on PATH.
func Need(t testing.TB, tools ...string) {
	t.Helper()
	var missing []string
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, describe(tool))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("command-line tools missing: %s; install them (apt-get install the package named); the test does not skip without them",
			strings.Join(missing, ", "))
	}
}

func describe(tool string) string {
	if p := Package(tool); p != "" {
		return tool + " (Debian package " + p + ")"
	}
	return tool
}

// Run runs name with args, stdin as its standard input, and returns its standard output.
// It fails t if the tool is missing or exits non-zero, with the tool's standard error.
func Run(t testing.TB, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := run(stdin, "", name, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// RunIn is Run with the working directory dir, for tools that write files (zip, 7z).
func RunIn(t testing.TB, dir string, stdin []byte, name string, args ...string) []byte {
	t.Helper()
	out, err := run(stdin, dir, name, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// Output is Run without a testing.TB, for benchmarks' and programs' set-up code.
func Output(stdin []byte, name string, args ...string) ([]byte, error) {
	return run(stdin, "", name, args...)
}

func run(stdin []byte, dir, name string, args ...string) ([]byte, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, errors.New("command-line tool " + describe(name) + " is not installed: " + err.Error())
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(name + " " + strings.Join(args, " ") + ": " + err.Error() + ": " + strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// OutputIn is Output with the working directory dir, for tools that read or write files.
func OutputIn(dir string, stdin []byte, name string, args ...string) ([]byte, error) {
	return run(stdin, dir, name, args...)
}

// Deflate compresses data with python3's zlib at level and wbits (-15: raw deflate, no
// header; 15: zlib): Debian ships no tool that writes raw deflate.
func Deflate(data []byte, level, wbits int) ([]byte, error) {
	return Output(data, "python3", "-c", fmt.Sprintf(
		"import sys, zlib; c = zlib.compressobj(%d, zlib.DEFLATED, %d); sys.stdout.buffer.write(c.compress(sys.stdin.buffer.read()) + c.flush())", level, wbits))
}

// SnappyFramed writes data in the Snappy framing format with klauspost/compress/s2's
// Snappy-compatible writer, the one format here no Debian tool writes.
func SnappyFramed(data []byte) []byte {
	var b bytes.Buffer
	w := s2.NewWriter(&b, s2.WriterSnappyCompat())
	w.Write(data) // a bytes.Buffer never fails
	w.Close()
	return b.Bytes()
}

// WriteFiles writes files (path: content) into a fresh temporary directory and returns it,
// for the archivers to pack.
func WriteFiles(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// RunChunks compresses data in chunks of chunk bytes (cut anywhere, not at records) with the
// tool, one output per chunk, concatenated as `cat a.gz b.gz` concatenates them, and returns
// the stored offset where each output starts: the units of a multi-unit object, known
// exactly.
func RunChunks(t testing.TB, data []byte, chunk int, name string, args ...string) (out []byte, starts []int64) {
	t.Helper()
	for off := 0; off < len(data); off += chunk {
		starts = append(starts, int64(len(out)))
		out = append(out, Run(t, data[off:min(off+chunk, len(data))], name, args...)...)
	}
	return out, starts
}

// BGZFBlocks returns the stored offsets of the blocks of a file bgzip wrote, walked by their
// BSIZE fields; it fails t at bytes that are not a BGZF block.
func BGZFBlocks(t testing.TB, data []byte) []int64 {
	t.Helper()
	var starts []int64
	for off := 0; off < len(data); {
		if len(data)-off < 18 || data[off] != 0x1f || data[off+12] != 'B' || data[off+13] != 'C' {
			t.Fatalf("no BGZF block at %d", off)
		}
		starts = append(starts, int64(off))
		off += int(binary.LittleEndian.Uint16(data[off+16:])) + 1
	}
	return starts
}
