// Package codeclib holds each codec library's own decode loop, with no s3io code in
// between: the limit that s3io's decoding is measured against, by the decode package's
// benchmarks and by cmd/s3io-bench's lib variant. The libraries are the ones s3io decodes
// with.
package codeclib

import (
	"compress/bzip2"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/therootcompany/xz"
)

// A Loop makes one goroutine's decoder: it returns the decoded stream of each compressed
// stream it is given, reusing the library's state across calls as the library allows.
type Loop func() func(r io.Reader) (io.Reader, error)

// Loops are the decode loops by codec name (the names of s3io's Compression values).
var Loops = map[string]Loop{
	"gzip": func() func(io.Reader) (io.Reader, error) {
		var z *gzip.Reader
		return func(r io.Reader) (io.Reader, error) {
			if z == nil {
				var err error
				z, err = gzip.NewReader(r)
				return z, err
			}
			return z, z.Reset(r)
		}
	},
	"zstd": func() func(io.Reader) (io.Reader, error) {
		z, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1)) // fails only on invalid options
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	},
	"bzip2": func() func(io.Reader) (io.Reader, error) {
		return func(r io.Reader) (io.Reader, error) { return bzip2.NewReader(r), nil }
	},
	"xz": func() func(io.Reader) (io.Reader, error) {
		z, _ := xz.NewReader(nil, 0) // fails only on invalid options
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	},
	"lz4": func() func(io.Reader) (io.Reader, error) {
		z := lz4.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { z.Reset(r); return z, nil }
	},
	"snappy": func() func(io.Reader) (io.Reader, error) {
		z := s2.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { z.Reset(r); return z, nil }
	},
	"zlib": func() func(io.Reader) (io.Reader, error) {
		var z io.ReadCloser
		return func(r io.Reader) (io.Reader, error) {
			if z == nil {
				var err error
				z, err = zlib.NewReader(r)
				return z, err
			}
			return z, z.(zlib.Resetter).Reset(r, nil)
		}
	},
	"deflate": func() func(io.Reader) (io.Reader, error) {
		z := flate.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { return z, z.(flate.Resetter).Reset(r, nil) }
	},
	"brotli": func() func(io.Reader) (io.Reader, error) {
		z := brotli.NewReader(nil)
		return func(r io.Reader) (io.Reader, error) { return z, z.Reset(r) }
	},
}
