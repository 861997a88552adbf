package decode

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/spate-io/beam-s3/s3io/internal/xz"
)

// ErrCorrupt marks an object whose compressed bytes cannot be decoded.
var ErrCorrupt = errors.New("s3io: corrupt compressed data")

// Decompressors holds one decoder per codec (gzip, zstd, bzip2, xz, lz4, Snappy framing,
// zlib, raw deflate, brotli), each made on first use and reset per object where its library
// allows: a zstd decoder's buffers and an xz dictionary are the expensive part. It decodes
// one object at a time; a reader keeps a pool of them, one per object being decoded at once.
type Decompressors struct {
	// MaxWindow bounds the window (history, dictionary) any decoder may allocate for one
	// stream: zstd's window, xz's LZMA2 dictionary, a large-window brotli stream's. 0 means
	// DefaultMaxWindow (128 MiB); it is capped at MaxWindowLimit (2 GiB). The caller sets
	// it from Config.MaxDecoderWindowBytes before the first Open. A stream asking for more
	// fails with an error wrapping ErrUnsupported that names the size it asks for.
	MaxWindow int64

	gz    *gzip.Reader
	zs    *zstd.Decoder
	zsMax int64 // the window bound zs was made with
	zw    zstdWalker
	xz    *xz.Reader
	xzMax int64
	lz    *lz4.Reader
	sz    *s2.Reader
	zl    io.ReadCloser // a zlib.Resetter
	fl    io.ReadCloser // a flate.Resetter
	br    *brotli.Reader
	bufr  *bufio.Reader // zlib's, flate's, bzip2's and zstd's input, see buffered
	src   source        // the current object's bytes
	// Checkpoints, when set, makes a gzip object decode through the checkpointing reader
	// (OpenGzip), which keeps its inflate checkpoints there. The caller sets it per object.
	Checkpoints *Checkpoints

	// An archive's entries are decoded by decoders of their own, kept for the next archive:
	// entries by their compression method (zip), and by their own names (auto mode).
	methods, entries *Decompressors
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
//
// A format Detect refuses (IsUnsupported) fails with UnsupportedError before more is read;
// so does a stream whose header asks for a window above MaxWindow, or a zstd frame that
// needs a dictionary (errors wrapping ErrUnsupported). Tar and Zip are returned as they are,
// with comp Tar or Zip: the caller reads the archive. Reading the stream fails with an error
// wrapping ErrCorrupt when the bytes do not decode, are cut short (every codec's end is
// checked: a truncated object is never a short, clean stream) or are followed by bytes the
// format does not allow (xz stream padding, zstd skippable frames and further gzip members,
// zstd frames, xz streams, bzip2 streams and lz4 frames are allowed); a failed fetch
// surfaces as its own error.
func (d *Decompressors) Open(mode Compression, key string, src io.Reader) (io.Reader, Compression, error) {
	d.src = source{r: src}
	comp, head, stream, empty, err := sniff(mode, key, &d.src)
	if err != nil || empty {
		return stream, comp, err
	}
	if IsUnsupported(comp) {
		return nil, comp, UnsupportedError(comp)
	}
	c := lookup(comp)
	if c == nil || c.open == nil {
		return stream, comp, nil // None, Tar and Zip (the caller reads the archive)
	}
	s, err := c.open(d, head, stream)
	if err != nil {
		return nil, comp, err
	}
	return s, comp, nil
}

// openGzip returns the gzip decoder over stream, reusing d's; d.src counts the stored
// bytes it read, for its errors.
func (d *Decompressors) openGzip(_ []byte, stream io.Reader) (io.Reader, error) {
	fetched := &d.src
	if d.Checkpoints != nil {
		return OpenGzip(stream, d.Checkpoints)
	}
	var err error
	if d.gz == nil {
		d.gz, err = gzip.NewReader(stream)
	} else {
		err = d.gz.Reset(stream)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // a few bytes that start like gzip but hold no header
	}
	if err != nil {
		return nil, decodeError("gzip", err, fetched)
	}
	// Multistream is the default: concatenated gzip members (rotated-and-appended logs,
	// parallel gzip) are read to the end, not just the first member.
	return gzipStream{d.gz, fetched}, nil
}

// openZstd returns the zstd decoder over stream, reusing d's while its window bound holds.
// The first frame's header (in head) is checked here, so that a window above the bound or a
// dictionary is refused by its size or id; a later frame's is refused by the decoder, which
// zstdStream classifies.
func (d *Decompressors) openZstd(head []byte, stream io.Reader) (io.Reader, error) {
	fetched := &d.src
	limit := d.maxWindow()
	if err := zstdRefusal(head, limit); err != nil {
		return nil, err
	}
	if d.zs == nil || d.zsMax != limit {
		if d.zs != nil {
			d.zs.Close()
		}
		zs, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(limit)))
		if err != nil {
			d.zs = nil
			return nil, err
		}
		d.zs, d.zsMax = zs, limit
	}
	// The decoder reads block headers 3 bytes at a time: a buffer spares those reads
	// the walk through the walker, sniff's reader and source.
	d.zw.reset(stream, limit)
	if err := d.zs.Reset(d.buffered(&d.zw)); err != nil {
		return nil, decodeError("zstd", err, fetched)
	}
	return zstdStream{d.zs, fetched, &d.zw}, nil
}

// Close frees the decoders' buffers; d can be used again.
func (d *Decompressors) Close() {
	if d.zs != nil {
		d.zs.Close()
		d.zs = nil
	}
	d.xz, d.lz, d.sz, d.zl, d.fl, d.br, d.bufr = nil, nil, nil, nil, nil, nil, nil
	for _, inner := range []*Decompressors{d.methods, d.entries} {
		if inner != nil {
			inner.Close()
		}
	}
	d.methods, d.entries = nil, nil
}

// corruptError is err marked as the corruption of a format's stream.
func corruptError(format string, err error) error {
	return fmt.Errorf("%w: %s: %v", ErrCorrupt, format, err)
}

// gzipStream and zstdStream mark decoding errors as corruption. A truncated stream is
// corrupt too: its decoder reports io.ErrUnexpectedEOF. zstdStream reports a frame header
// its walker refused (a window above the bound, a dictionary) as that ErrUnsupported error.
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
	w   *zstdWalker
}

func (s zstdStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.src.err == nil {
		if s.w.err != nil {
			return n, s.w.err // a frame header the walker refused
		}
		if r := zstdUnknownDict(err); r != nil {
			return n, r
		}
	}
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
