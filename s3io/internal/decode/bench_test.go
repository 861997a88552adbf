package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// benchLines returns about 32 MiB of NDJSON lines of about 200 bytes, varied enough that
// gzip and zstd compress them about as well as real event logs (4-6x), not to nothing.
func benchLines() []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	types := []string{"page_view", "click", "scroll", "search", "add_to_cart", "purchase"}
	var b []byte
	for len(b) < 32<<20 {
		start := len(b)
		b = fmt.Appendf(b, `{"ts":"2026-11-%02dT%02d:%02d:%02dZ","type":%q,"user":"u%07d","path":"/p/%d","ms":%d,"pad":"`,
			1+rng.IntN(30), rng.IntN(24), rng.IntN(60), rng.IntN(60), types[rng.IntN(len(types))], rng.IntN(10_000_000), rng.IntN(100_000), rng.IntN(5000))
		for len(b)-start < 197 {
			b = append(b, byte('a'+rng.IntN(26)))
		}
		b = append(b, '"', '}', '\n')
	}
	return b
}

func benchFrame(b *testing.B, data []byte, open func(io.Reader) io.Reader, decompressed int) {
	b.SetBytes(int64(decompressed))
	b.ReportAllocs()
	for b.Loop() {
		rr := NewRecordReader(open(bytes.NewReader(data)), FramerFunc(FrameLines), 16<<20, 0)
		for {
			if _, _, err := rr.Next(); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}

func BenchmarkFrameLines(b *testing.B) {
	data := benchLines()
	benchFrame(b, data, func(r io.Reader) io.Reader { return r }, len(data))
}

func BenchmarkGzipFrameLines(b *testing.B) {
	data := benchLines()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	var d Decompressors
	benchFrame(b, buf.Bytes(), func(r io.Reader) io.Reader {
		s, _, err := d.Open(Gzip, "x.gz", r)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}, len(data))
}

func BenchmarkZstdFrameLines(b *testing.B) {
	data := benchLines()
	zw, _ := zstd.NewWriter(nil)
	comp := zw.EncodeAll(data, nil)
	var d Decompressors
	defer d.Close()
	benchFrame(b, comp, func(r io.Reader) io.Reader {
		s, _, err := d.Open(Zstd, "x.zst", r)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}, len(data))
}

// BenchmarkFramers measures the built-in framers alone, over data already in memory: the
// cost per record of finding it, without reading or slab allocation.
func BenchmarkFramers(b *testing.B) {
	lines := benchLines()
	var u32 []byte
	for i := 0; i < len(lines)/200; i++ {
		u32 = binary.BigEndian.AppendUint32(u32, 196)
		u32 = append(u32, lines[i*200:i*200+196]...)
	}
	for _, tc := range []struct {
		name string
		fn   FramerFunc
		data []byte
	}{{"lines", FrameLines, lines}, {"ndjson", FrameNDJSON, lines}, {"u32be", FrameU32BE, u32}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				data := tc.data
				for len(data) > 0 {
					n, _, err := tc.fn(data, true)
					if err != nil || n == 0 {
						b.Fatal(n, err)
					}
					data = data[n:]
				}
			}
		})
	}
}
