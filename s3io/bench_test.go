package s3io

import (
	"bytes"
	"io"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// benchLines returns about 32 MiB of 200-byte NDJSON-like lines.
func benchLines() []byte {
	line := append(bytes.Repeat([]byte("x"), 199), '\n')
	return bytes.Repeat(line, 32<<20/200)
}

func benchFrame(b *testing.B, data []byte, open func(io.Reader) io.Reader, decompressed int) {
	b.SetBytes(int64(decompressed))
	b.ReportAllocs()
	for b.Loop() {
		rr := newRecordReader(open(bytes.NewReader(data)), FramerFunc(frameLines), DefaultMaxRecordBytes, 0)
		for {
			if _, _, err := rr.next(); err != nil {
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
	var d decompressors
	benchFrame(b, buf.Bytes(), func(r io.Reader) io.Reader {
		s, _, err := d.open(CompressionGzip, "x.gz", r)
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
	var d decompressors
	defer d.close()
	benchFrame(b, comp, func(r io.Reader) io.Reader {
		s, _, err := d.open(CompressionZstd, "x.zst", r)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}, len(data))
}

// BenchmarkTrackerClaim measures the per-record claim the reader makes through the
// LockRTracker Beam hands it.
func BenchmarkTrackerClaim(b *testing.B) {
	rt := sdf.NewLockRTracker(NewTracker(Restriction{End: Position{Member: 1}, Sizes: []int64{1}}))
	b.ReportAllocs()
	claim := &Position{}
	for b.Loop() {
		if !rt.TryClaim(claim) {
			b.Fatal("claim failed")
		}
		claim.Record++
	}
}
