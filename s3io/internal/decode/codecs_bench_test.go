package decode

import (
	"bytes"
	"compress/bzip2"
	"io"
	"sync"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/therootcompany/xz"

	"github.com/spate-io/beam-s3/internal/clitool"
)

// benchCodec is one codec's benchmark input: benchLines as a command-line tool writes it,
// and the library's own decode loop over it.
type benchCodec struct {
	name string
	comp Compression
	key  string
	make func(plain []byte) ([]byte, error)
	// lib returns the library's decoder of r, reusing its state across calls as the
	// library allows.
	lib func() func(r io.Reader) (io.Reader, error)
}

func tool(name string, args ...string) func([]byte) ([]byte, error) {
	return func(plain []byte) ([]byte, error) { return clitool.Output(plain, name, args...) }
}

var benchCodecs = []benchCodec{
	{"gzip", Gzip, "x.gz", tool("gzip", "-c"), func() func(io.Reader) (io.Reader, error) {
		var z *gzip.Reader
		return func(r io.Reader) (io.Reader, error) {
			if z == nil {
				var err error
				z, err = gzip.NewReader(r)
				return z, err
			}
			return z, z.Reset(r)
		}
	}},
	{"zstd", Zstd, "x.zst", tool("zstd", "-c"), func() func(io.Reader) (io.Reader, error) {
		z, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	}},
	{"bzip2", Bzip2, "x.bz2", tool("bzip2", "-9", "-c"), func() func(io.Reader) (io.Reader, error) {
		return func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }
	}},
	{"pbzip2", Bzip2, "x.bz2", tool("pbzip2", "-p2", "-9", "-c"), func() func(io.Reader) (io.Reader, error) {
		return func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }
	}},
	{"xz", Xz, "x.xz", tool("xz", "-6", "-c"), func() func(io.Reader) (io.Reader, error) {
		z, _ := xz.NewReader(nil, 0)
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	}},
	{"xz-T2", Xz, "x.xz", tool("xz", "-6", "-T2", "--block-size=8MiB", "-c"), func() func(io.Reader) (io.Reader, error) {
		z, _ := xz.NewReader(nil, 0)
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	}},
	{"lz4", Lz4, "x.lz4", tool("lz4", "-c"), func() func(io.Reader) (io.Reader, error) {
		z := lz4.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { z.Reset(r); return z, nil }
	}},
	{"snappy", Snappy, "x.sz", func(plain []byte) ([]byte, error) {
		var b bytes.Buffer
		w := s2.NewWriter(&b, s2.WriterSnappyCompat())
		if _, err := w.Write(plain); err != nil {
			return nil, err
		}
		err := w.Close()
		return b.Bytes(), err
	}, func() func(io.Reader) (io.Reader, error) {
		z := s2.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { z.Reset(r); return z, nil }
	}},
	{"zlib", Zlib, "x.zz", tool("pigz", "-z", "-c"), func() func(io.Reader) (io.Reader, error) {
		var z io.ReadCloser
		return func(r io.Reader) (io.Reader, error) {
			if z == nil {
				var err error
				z, err = zlib.NewReader(r)
				return z, err
			}
			return z, z.(zlib.Resetter).Reset(r, nil)
		}
	}},
	{"deflate", Deflate, "x.deflate", func(plain []byte) ([]byte, error) {
		return clitool.Output(plain, "python3", "-c",
			"import zlib,sys; c=zlib.compressobj(6,zlib.DEFLATED,-15); d=sys.stdin.buffer.read(); sys.stdout.buffer.write(c.compress(d)+c.flush())")
	}, func() func(io.Reader) (io.Reader, error) {
		z := flate.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { return z, z.(flate.Resetter).Reset(r, nil) }
	}},
	// brotli -q 9: the default -q 11 takes minutes over 32 MiB; decoding speed differs little.
	{"brotli", Brotli, "x.br", tool("brotli", "-q", "9", "-c"), func() func(io.Reader) (io.Reader, error) {
		z := brotli.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	}},
}

var benchInputs struct {
	once  sync.Once
	plain []byte
	mu    sync.Mutex
	comp  map[string][]byte
}

func benchInput(b *testing.B, c benchCodec) (plain, comp []byte) {
	benchInputs.once.Do(func() {
		benchInputs.plain = benchLines()
		benchInputs.comp = map[string][]byte{}
	})
	benchInputs.mu.Lock()
	defer benchInputs.mu.Unlock()
	if data, ok := benchInputs.comp[c.name]; ok {
		return benchInputs.plain, data
	}
	data, err := c.make(benchInputs.plain)
	if err != nil {
		b.Fatalf("%s: %v", c.name, err)
	}
	benchInputs.comp[c.name] = data
	return benchInputs.plain, data
}

// BenchmarkCodecs reads benchLines, as each codec's command-line tool writes it, through
// the library's own decode loop ("lib") and through Decompressors.Open ("open"), both into
// io.Discard from a plain io.Reader (as an S3 body is). MB/s are of decompressed bytes; the
// target is open ≥ 0.8 × lib.
func BenchmarkCodecs(b *testing.B) {
	for _, c := range benchCodecs {
		b.Run(c.name, func(b *testing.B) {
			plain, comp := benchInput(b, c)
			b.Run("lib", func(b *testing.B) {
				open := c.lib()
				b.SetBytes(int64(len(plain)))
				b.ReportAllocs()
				for b.Loop() {
					r, err := open(onlyReader{bytes.NewReader(comp)})
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(plain)) {
						b.Fatal(n, err)
					}
				}
			})
			b.Run("open", func(b *testing.B) {
				var d Decompressors
				defer d.Close()
				b.SetBytes(int64(len(plain)))
				b.ReportAllocs()
				for b.Loop() {
					r, _, err := d.Open(Auto, c.key, onlyReader{bytes.NewReader(comp)})
					if err != nil {
						b.Fatal(err)
					}
					if n, err := io.Copy(io.Discard, r); err != nil || n != int64(len(plain)) {
						b.Fatal(n, err)
					}
				}
			})
		})
	}
}
