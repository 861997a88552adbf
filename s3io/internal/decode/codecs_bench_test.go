package decode

import (
	"bytes"
	"io"
	"sync"
	"testing"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/codeclib"
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
	lib codeclib.Loop
}

func tool(name string, args ...string) func([]byte) ([]byte, error) {
	return func(plain []byte) ([]byte, error) { return clitool.Output(plain, name, args...) }
}

var benchCodecs = []benchCodec{
	{"gzip", Gzip, "x.gz", tool("gzip", "-c"), codeclib.Loops["gzip"]},
	{"zstd", Zstd, "x.zst", tool("zstd", "-c"), codeclib.Loops["zstd"]},
	{"bzip2", Bzip2, "x.bz2", tool("bzip2", "-9", "-c"), codeclib.Loops["bzip2"]},
	{"pbzip2", Bzip2, "x.bz2", tool("pbzip2", "-p2", "-9", "-c"), codeclib.Loops["bzip2"]},
	{"xz", Xz, "x.xz", tool("xz", "-6", "-c"), codeclib.Loops["xz"]},
	{"xz-T2", Xz, "x.xz", tool("xz", "-6", "-T2", "--block-size=8MiB", "-c"), codeclib.Loops["xz"]},
	{"lz4", Lz4, "x.lz4", tool("lz4", "-c"), codeclib.Loops["lz4"]},
	{"snappy", Snappy, "x.sz", func(plain []byte) ([]byte, error) { return clitool.SnappyFramed(plain), nil }, codeclib.Loops["snappy"]},
	{"zlib", Zlib, "x.zz", tool("pigz", "-z", "-c"), codeclib.Loops["zlib"]},
	{"deflate", Deflate, "x.deflate", func(plain []byte) ([]byte, error) { return clitool.Deflate(plain, 6, -15) }, codeclib.Loops["deflate"]},
	// brotli -q 9: the default -q 11 takes minutes over 32 MiB; decoding speed differs little.
	{"brotli", Brotli, "x.br", tool("brotli", "-q", "9", "-c"), codeclib.Loops["brotli"]},
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
