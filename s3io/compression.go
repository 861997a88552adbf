package s3io

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// zstdMaxWindow bounds the memory one zstd stream may ask for. 128 MiB admits everything
// `zstd --long=27` and the default levels produce, while a corrupt or hostile frame header
// cannot make a worker allocate gigabytes.
const zstdMaxWindow = 128 << 20

// compressionFor decides how to decompress the object key whose first bytes are head.
func compressionFor(mode Compression, key string, head []byte) Compression {
	if mode != CompressionAuto {
		return mode
	}
	lower := strings.ToLower(key)
	switch {
	case strings.HasSuffix(lower, ".gz"), strings.HasSuffix(lower, ".gzip"):
		return CompressionGzip
	case strings.HasSuffix(lower, ".zst"), strings.HasSuffix(lower, ".zstd"):
		return CompressionZstd
	case bytes.HasPrefix(head, gzipMagic):
		return CompressionGzip
	case bytes.HasPrefix(head, zstdMagic):
		return CompressionZstd
	}
	return CompressionNone
}

// decompressors keeps one gzip and one zstd decoder per DoFn instance and resets them per
// object: a zstd decoder's buffers are the expensive part, and a DoFn instance reads one
// object at a time.
type decompressors struct {
	gz *gzip.Reader
	zs *zstd.Decoder
}

// magicLen is how many leading bytes tell the compressions apart.
const magicLen = 4

// sniff reads the first bytes of src and decides how the object key is compressed under
// mode. It returns a stream of all of src's bytes, the ones read included, and whether src
// is empty. The planner's probe of an object and the reader's decoding use it alike, so
// they cannot disagree on what an object holds.
func sniff(mode Compression, key string, src io.Reader) (comp Compression, stream io.Reader, empty bool, err error) {
	head := make([]byte, magicLen)
	n, err := io.ReadFull(src, head)
	switch {
	case err == io.EOF:
		return CompressionNone, bytes.NewReader(nil), true, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return "", nil, false, err
	}
	return compressionFor(mode, key, head[:n]), io.MultiReader(bytes.NewReader(head[:n]), src), false, nil
}

// open returns the decompressed stream of an object and the compression it found. An object
// with no bytes is an empty stream whatever its name says: empty .gz files are common where
// a log rotated idle.
func (d *decompressors) open(mode Compression, key string, src io.Reader) (io.Reader, Compression, error) {
	comp, src, empty, err := sniff(mode, key, src)
	if err != nil || empty {
		return src, comp, err
	}
	switch comp {
	case CompressionGzip:
		if d.gz == nil {
			d.gz, err = gzip.NewReader(src)
		} else {
			err = d.gz.Reset(src)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a few bytes that start like gzip but hold no header
		}
		if err != nil {
			return nil, comp, decodeError("gzip", err)
		}
		// Multistream is the default: concatenated gzip members (rotated-and-appended logs,
		// parallel gzip) are read to the end, not just the first member.
		return gzipStream{d.gz}, comp, nil
	case CompressionZstd:
		if d.zs == nil {
			d.zs, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, comp, err
			}
		}
		if err := d.zs.Reset(src); err != nil {
			return nil, comp, decodeError("zstd", err)
		}
		return zstdStream{d.zs}, comp, nil
	}
	return src, comp, nil
}

func (d *decompressors) close() {
	if d.zs != nil {
		d.zs.Close()
		d.zs = nil
	}
}

func corruptError(format string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, format, err)
}

// gzipStream and zstdStream mark decoding errors as corruption. A truncated stream is
// corrupt too: its decoder reports io.ErrUnexpectedEOF.
type gzipStream struct{ r *gzip.Reader }

func (s gzipStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	return n, decodeError("gzip", err)
}

type zstdStream struct{ r *zstd.Decoder }

func (s zstdStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	return n, decodeError("zstd", err)
}

// decodeError marks err as corruption unless it is the end of the stream or a failure to
// read the source, which a retry may cure.
func decodeError(format string, err error) error {
	var src *sourceReadError
	if err == nil || err == io.EOF || errors.As(err, &src) {
		return err
	}
	return corruptError(format, err)
}
