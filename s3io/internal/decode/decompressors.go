package decode

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// ErrCorrupt marks an object whose compressed bytes cannot be decoded.
var ErrCorrupt = errors.New("s3io: corrupt compressed data")

// zstdMaxWindow bounds the memory one zstd stream may ask for. 128 MiB admits everything
// `zstd --long=27` and the default levels produce, while a corrupt or hostile frame header
// cannot make a worker allocate gigabytes.
const zstdMaxWindow = 128 << 20

// Decompressors holds one gzip and one zstd decoder, reset per object: a zstd decoder's
// buffers are the expensive part. It decodes one object at a time; a reader keeps a pool
// of them, one per object being decoded at once.
type Decompressors struct {
	gz *gzip.Reader
	zs *zstd.Decoder
}

// Open returns the decompressed stream of an object and the compression it found. An object
// with no bytes is an empty stream whatever its name says: empty .gz files are common where
// a log rotated idle.
func (d *Decompressors) Open(mode Compression, key string, src io.Reader) (io.Reader, Compression, error) {
	comp, src, empty, err := sniff(mode, key, src)
	if err != nil || empty {
		return src, comp, err
	}
	switch comp {
	case Gzip:
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
	case Zstd:
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

// Close frees the zstd decoder's buffers; d can be used again.
func (d *Decompressors) Close() {
	if d.zs != nil {
		d.zs.Close()
		d.zs = nil
	}
}

// corruptError is err marked as the corruption of a format's stream.
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
	var src *fetch.ReadError
	if err == nil || err == io.EOF || errors.As(err, &src) {
		return err
	}
	return corruptError(format, err)
}
