package decode

import (
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
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
	gz  *gzip.Reader
	zs  *zstd.Decoder
	src source // the current object's bytes
}

// source is the compressed stream of one object, as fetched: it keeps the first error the
// fetch returned, so that the decompressor's account of the bytes that did not come (a
// truncated block, an unexpected EOF, the error itself wrapped or not) is not taken for
// corruption. A 412 or an answer of another version on a later part must surface as what it
// is, not as "corrupt".
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// Open returns the decompressed stream of an object and the compression it found. An object
// with no bytes is an empty stream whatever its name says: empty .gz files are common where
// a log rotated idle.
func (d *Decompressors) Open(mode Compression, key string, src io.Reader) (io.Reader, Compression, error) {
	d.src = source{r: src}
	fetched := &d.src
	comp, stream, empty, err := sniff(mode, key, fetched)
	if err != nil || empty {
		return stream, comp, err
	}
	switch comp {
	case Gzip:
		if d.gz == nil {
			d.gz, err = gzip.NewReader(stream)
		} else {
			err = d.gz.Reset(stream)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a few bytes that start like gzip but hold no header
		}
		if err != nil {
			return nil, comp, decodeError("gzip", err, fetched)
		}
		// Multistream is the default: concatenated gzip members (rotated-and-appended logs,
		// parallel gzip) are read to the end, not just the first member.
		return gzipStream{d.gz, fetched}, comp, nil
	case Zstd:
		if d.zs == nil {
			d.zs, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
			if err != nil {
				return nil, comp, err
			}
		}
		if err := d.zs.Reset(stream); err != nil {
			return nil, comp, decodeError("zstd", err, fetched)
		}
		return zstdStream{d.zs, fetched}, comp, nil
	}
	return stream, comp, nil
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
type gzipStream struct {
	r   *gzip.Reader
	src *source
}

func (s gzipStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	return n, decodeError("gzip", err, s.src)
}

type zstdStream struct {
	r   *zstd.Decoder
	src *source
}

func (s zstdStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	return n, decodeError("zstd", err, s.src)
}

// decodeError marks err as corruption unless it is the end of the stream or the source
// failed: then the source's error is the cause, whatever the decoder made of it (a body that
// broke, which a retry may cure, or a GET refused, which classifies by its own error).
func decodeError(format string, err error, src *source) error {
	switch {
	case err == nil || err == io.EOF:
		return err
	case src.err != nil:
		return src.err
	}
	return corruptError(format, err)
}
