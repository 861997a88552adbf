// Command codeccompare measures the decode speed of the pure-Go decoders s3io could use
// for each codec, over objects the real command-line tools wrote, in one run: MB/s of
// decompressed output, best of -runs, single goroutine unless the library is parallel by
// design. It is a module of its own so that the candidates that lose stay out of
// beam-s3's go.mod. See README.md for how the inputs are made.
//
//	go run . -dir /tmp/cc -runs 3
package main

import (
	"bytes"
	"compress/bzip2"
	stdflate "compress/flate"
	stdzlib "compress/zlib"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/cosnicolaou/pbzip2"
	dsbzip2 "github.com/dsnet/compress/bzip2"
	"github.com/golang/snappy"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/pierrec/lz4/v4"
	rootxz "github.com/therootcompany/xz"
	ukxz "github.com/ulikunitz/xz"
	xi2xz "github.com/xi2/xz"
)

type candidate struct {
	name string
	open func(io.Reader) (io.Reader, error)
}

func main() {
	dir := flag.String("dir", "/tmp/cc", "directory with t.ndjson and its compressed copies")
	runs := flag.Int("runs", 3, "runs per library and file; the best is reported")
	only := flag.String("only", "", "only files whose name contains this")
	flag.Parse()
	plain, err := os.ReadFile(filepath.Join(*dir, "t.ndjson"))
	if err != nil {
		panic(err)
	}
	want := sha256.Sum256(plain)

	bz := []candidate{
		{"compress/bzip2 (std)", func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }},
		{"dsnet/compress/bzip2", func(r io.Reader) (io.Reader, error) { return dsbzip2.NewReader(r, nil) }},
		{"cosnicolaou/pbzip2 (2 goroutines)", func(r io.Reader) (io.Reader, error) {
			return pbzip2.NewReader(context.Background(), r, pbzip2.DecompressionOptions(pbzip2.BZConcurrency(2))), nil
		}},
	}
	xz := []candidate{
		{"ulikunitz/xz", func(r io.Reader) (io.Reader, error) { return ukxz.NewReader(r) }},
		{"xi2/xz", func(r io.Reader) (io.Reader, error) { return xi2xz.NewReader(r, 0) }},
		{"therootcompany/xz", func(r io.Reader) (io.Reader, error) { return rootxz.NewReader(r, 0) }},
	}
	lz := []candidate{
		{"pierrec/lz4/v4", func(r io.Reader) (io.Reader, error) { return lz4.NewReader(r), nil }},
	}
	sz := []candidate{
		{"klauspost/compress/s2", func(r io.Reader) (io.Reader, error) { return s2.NewReader(r), nil }},
		{"golang/snappy", func(r io.Reader) (io.Reader, error) { return snappy.NewReader(r), nil }},
	}
	zl := []candidate{
		{"klauspost/compress/zlib", func(r io.Reader) (io.Reader, error) { return zlib.NewReader(r) }},
		{"compress/zlib (std)", func(r io.Reader) (io.Reader, error) { return stdzlib.NewReader(r) }},
	}
	df := []candidate{
		{"klauspost/compress/flate", func(r io.Reader) (io.Reader, error) { return flate.NewReader(r), nil }},
		{"compress/flate (std)", func(r io.Reader) (io.Reader, error) { return stdflate.NewReader(r), nil }},
	}
	br := []candidate{
		{"andybalholm/brotli", func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
	}
	files := []struct {
		file, cmd string
		cands     []candidate
	}{
		{"t.bz2", "bzip2 -9", bz},
		{"t.lbzip2.bz2", "lbzip2 -n2 -9", bz},
		{"t.pbzip2.bz2", "pbzip2 -p2 -9", bz},
		{"t.xz", "xz -6", xz},
		{"t.T2.xz", "xz -6 -T2 --block-size=8MiB", xz},
		{"t.lz4", "lz4", lz},
		{"t.9.lz4", "lz4 -9", lz},
		{"t.s2snappy.sz", "s2.NewWriter(w, s2.WriterSnappyCompat())", sz},
		{"t.golang-snappy.sz", "snappy.NewBufferedWriter", sz},
		{"t.zz", "pigz -z", zl},
		{"t.deflate", "python3 zlib.compressobj(6, DEFLATED, -15)", df},
		{"t.q9.br", "brotli -q 9", br},
		{"t.q11.br", "brotli (-q 11)", br},
	}
	writeSnappy(*dir, plain)
	fmt.Printf("input: %d bytes of NDJSON; MB/s = 1e6 bytes of decompressed output per second, best of %d\n", len(plain), *runs)
	for _, f := range files {
		if *only != "" && !bytes.Contains([]byte(f.file), []byte(*only)) {
			continue
		}
		comp, err := os.ReadFile(filepath.Join(*dir, f.file))
		if err != nil {
			fmt.Printf("%-20s missing: %v\n", f.file, err)
			continue
		}
		fmt.Printf("%s (%s, %d bytes, ratio %.2f)\n", f.file, f.cmd, len(comp), float64(len(plain))/float64(len(comp)))
		for _, c := range f.cands {
			best := time.Duration(0)
			var fail error
			// Run 0 checks the output's SHA-256; the timed runs write to io.Discard.
			for i := 0; i <= *runs && fail == nil; i++ {
				start := time.Now()
				r, err := c.open(bytes.NewReader(comp))
				if err != nil {
					fail = err
					break
				}
				h := sha256.New()
				var dst io.Writer = io.Discard
				if i == 0 {
					dst = h
				}
				n, err := io.Copy(dst, r)
				el := time.Since(start)
				switch {
				case err != nil:
					fail = fmt.Errorf("after %d bytes: %w", n, err)
				case i == 0 && !bytes.Equal(h.Sum(nil), want[:]):
					fail = fmt.Errorf("wrong output: %d bytes of %d", n, len(plain))
				case i > 0 && (best == 0 || el < best):
					best = el
				}
			}
			if fail != nil {
				fmt.Printf("    %-36s FAILS: %v\n", c.name, fail)
				continue
			}
			fmt.Printf("    %-36s %8.1f MB/s\n", c.name, float64(len(plain))/best.Seconds()/1e6)
		}
	}
}

// writeSnappy writes the two Snappy framing-format inputs, there being no snappy CLI.
func writeSnappy(dir string, plain []byte) {
	var b bytes.Buffer
	w := s2.NewWriter(&b, s2.WriterSnappyCompat(), s2.WriterConcurrency(1))
	w.Write(plain)
	w.Close()
	os.WriteFile(filepath.Join(dir, "t.s2snappy.sz"), b.Bytes(), 0o644)
	b.Reset()
	sw := snappy.NewBufferedWriter(&b)
	sw.Write(plain)
	sw.Close()
	os.WriteFile(filepath.Join(dir, "t.golang-snappy.sz"), b.Bytes(), 0o644)
}
