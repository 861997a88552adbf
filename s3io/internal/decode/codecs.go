package decode

import (
	"bufio"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/spate-io/beam-s3/s3io/internal/xz"
)

// The libraries, chosen by decode speed over objects the command-line tools wrote (the
// module internal/codeccompare measures them) and by upkeep:
//
//   - bzip2: the standard library. It reads concatenated streams (pbzip2, lbzip2, cat a.bz2
//     b.bz2) to the end; github.com/dsnet/compress was within 5-20% and is unmaintained.
//   - xz: s3io/internal/xz, a copy of github.com/therootcompany/xz v1.0.1 (the tagged,
//     CC0-licensed copy of xi2/xz, a port of xz-embedded): twice the speed of
//     github.com/ulikunitz/xz, a dictionary bound of its own, one dictionary reused across
//     blocks and objects, and every truncation an error. v1.0.1 is the library's only
//     version and refuses the ARM64 BCJ filter xz-utils 5.4 writes; the copy adds ARM64 and
//     RISC-V (xz-utils 5.6), so that every filter xz-utils writes (Delta and the BCJ filters
//     x86, PowerPC, IA-64, ARM, ARM-Thumb, SPARC, ARM64, RISC-V) is decoded, and it names
//     the filter of a header it refuses (xzOptionsRefusal). It decodes as fast as v1.0.1.
//   - lz4: github.com/pierrec/lz4/v4, the only maintained pure-Go frame decoder.
//   - snappy framing: klauspost/compress/s2, already a dependency, as fast as golang/snappy.
//   - zlib, raw deflate: klauspost/compress, 1.5-2x the standard library.
//   - brotli: github.com/andybalholm/brotli, the only pure-Go decoder.

// DefaultMaxWindow is the window bound of a Decompressors whose MaxWindow is 0: 128 MiB
// admits everything `zstd --long=27`, `xz -9` (64 MiB) and brotli's standard windows
// (16 MiB) produce, while a corrupt or hostile header cannot make a worker allocate
// gigabytes. MaxWindowLimit is the largest bound a Config may set.
const (
	DefaultMaxWindow = 128 << 20
	MaxWindowLimit   = 2 << 30
)

func (d *Decompressors) maxWindow() int64 {
	switch {
	case d.MaxWindow <= 0:
		return DefaultMaxWindow
	case d.MaxWindow > MaxWindowLimit:
		return MaxWindowLimit
	}
	return d.MaxWindow
}

// windowError is the refusal of a stream whose header asks for a window (or dictionary)
// of asked bytes, above limit; asked 0 means the decoder refused without saying how much.
func windowError(what string, asked, limit int64) error {
	size := "a larger window"
	if asked > 0 {
		n := sizeString(asked)
		size = "a " + n + " window"
		if n[0] == '8' || strings.HasPrefix(n, "11 ") || strings.HasPrefix(n, "18 ") {
			size = "an " + n + " window"
		}
	}
	return fmt.Errorf("%w: the %s asks for %s, above Config.MaxDecoderWindowBytes (%s); raise it (up to 2 GiB) if the workers have the memory",
		ErrUnsupported, what, size, sizeString(limit))
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// errTrailing is the corruption of a stream whose format has a definite end (zlib, raw
// deflate) followed by more bytes.
var errTrailing = errors.New("unexpected data after the end of the stream")

// codecStream marks a decoder's errors, as gzipStream does: corruption is ErrCorrupt, a
// failed fetch stays its own error. With exact set the decoder reads its input from br
// byte by byte, never past its stream's end; any byte left at its end is trailing data.
type codecStream struct {
	r      io.Reader
	format string
	src    *source
	br     *bufio.Reader // exact: the decoder's input, checked for trailing data at EOF
	refuse func(error) error
}

func (s *codecStream) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF && s.br != nil {
		if _, e := s.br.ReadByte(); e == nil {
			err = errTrailing
		} else if e != io.EOF {
			err = e
		}
	}
	if s.refuse != nil && s.src.err == nil {
		if r := s.refuse(err); r != nil {
			return n, r
		}
	}
	return n, decodeError(s.format, err, s.src)
}

// The open functions of codecTable's rows, gzip's and zstd's in decompressors.go: each
// returns its codec's decoder over stream, reusing d's; head is the object's first bytes,
// which stream starts with.

// openBzip2 returns the bzip2 decoder. The standard library's reader has no Reset; it reads
// every concatenated stream (one per block from pbzip2) to the end, and each stream's
// end-of-stream marker and CRC, so a cut is an io.ErrUnexpectedEOF. Bytes after a stream's
// end that are not another stream's "BZh" header are corruption. It reads its input a byte
// at a time: given the reused buffer (an io.ByteReader), it takes it as it is rather than
// wrapping stream in a fresh 4 KiB bufio.Reader per object.
func (d *Decompressors) openBzip2(_ []byte, stream io.Reader) (io.Reader, error) {
	return &codecStream{r: bzip2.NewReader(d.buffered(stream)), format: "bzip2", src: &d.src}, nil
}

// openLz4 returns the lz4 frame decoder: frames are read one after another to the end of
// the object; each ends with an end mark, so a cut is an io.ErrUnexpectedEOF. Blocks are at
// most 4 MiB: no window to bound.
func (d *Decompressors) openLz4(_ []byte, stream io.Reader) (io.Reader, error) {
	if d.lz == nil {
		d.lz = lz4.NewReader(nil)
	}
	d.lz.Reset(stream)
	return &codecStream{r: d.lz, format: "lz4", src: &d.src}, nil
}

// openSnappy returns the decoder of the Snappy framing format: chunks of at most 64 KiB,
// each with a CRC. The format has no end marker: a cut between two chunks is not detectable
// in the stream (the fetch checks the object's length), a cut inside one is corruption.
func (d *Decompressors) openSnappy(_ []byte, stream io.Reader) (io.Reader, error) {
	if d.sz == nil {
		d.sz = s2.NewReader(nil, s2.ReaderMaxBlockSize(64<<10))
	}
	d.sz.Reset(stream)
	return &codecStream{r: d.sz, format: "snappy", src: &d.src}, nil
}

// openDeflate returns the raw deflate decoder, reading the reused buffer byte by byte so
// that bytes after the stream's end are seen (codecStream's exact mode).
func (d *Decompressors) openDeflate(_ []byte, stream io.Reader) (io.Reader, error) {
	br := d.buffered(stream)
	if d.fl == nil {
		d.fl = flate.NewReader(br)
	} else if err := d.fl.(flate.Resetter).Reset(br, nil); err != nil {
		return nil, decodeError("deflate", err, &d.src)
	}
	return &codecStream{r: d.fl, format: "deflate", src: &d.src, br: br}, nil
}

// openBrotli returns the brotli decoder; a stream whose window (in head) exceeds the bound
// is refused before decoding.
func (d *Decompressors) openBrotli(head []byte, stream io.Reader) (io.Reader, error) {
	limit := d.maxWindow()
	if w := brotliWindow(head); w > limit {
		return nil, windowError("brotli stream", w, limit)
	}
	if d.br == nil {
		// Large-window streams (RFC 9841, brotli --large_window) are read when their
		// window is within the bound, which brotliWindow checked.
		d.br = brotli.NewReaderOptions(stream, brotli.ReaderOptions{LargeWindow: true})
	} else {
		d.br.Reset(stream)
	}
	return &codecStream{r: d.br, format: "brotli", src: &d.src}, nil
}

// openXz returns the xz decoder over stream, reusing d's while its dictionary bound holds;
// a first stream whose dictionary (in head) exceeds the bound is refused before decoding.
func (d *Decompressors) openXz(head []byte, stream io.Reader) (io.Reader, error) {
	fetched := &d.src
	limit := d.maxWindow()
	if dict := xzFirstDict(head); dict > limit {
		return nil, windowError("xz stream's LZMA2 dictionary", dict, limit)
	}
	var err error
	if d.xz == nil || d.xzMax != limit {
		d.xz, err = xz.NewReader(nil, uint32(min(limit, 1<<32-1)))
		d.xzMax = limit
		if err != nil {
			return nil, err
		}
	}
	// Reset reads the stream header. Multistream (concatenated .xz files) and stream
	// padding are the reader's default.
	if err = d.xz.Reset(stream); err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	refuse := func(err error) error {
		if errors.Is(err, xz.ErrMemlimit) {
			return windowError("xz stream's LZMA2 dictionary", 0, limit)
		}
		return xzOptionsRefusal(err)
	}
	if err != nil {
		if r := refuse(err); r != nil && fetched.err == nil {
			return nil, r
		}
		return nil, decodeError("xz", err, fetched)
	}
	return &codecStream{r: d.xz, format: "xz", src: fetched, refuse: refuse}, nil
}

// openZlib returns the zlib decoder over stream, reusing d's.
func (d *Decompressors) openZlib(_ []byte, stream io.Reader) (io.Reader, error) {
	fetched := &d.src
	br := d.buffered(stream)
	// The reader reads the 2-byte header here; a failed NewReader returns no reader,
	// a failed Reset leaves its reader to reuse.
	var err error
	if d.zl == nil {
		var zr io.ReadCloser
		if zr, err = zlib.NewReader(br); err == nil {
			d.zl = zr
		}
	} else {
		err = d.zl.(zlib.Resetter).Reset(br, nil)
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, decodeError("zlib", err, fetched)
	}
	return &codecStream{r: d.zl, format: "zlib", src: fetched, br: br}, nil
}

// buffered is a buffered reader of stream, its buffer kept for the next object. zlib and
// flate read it byte by byte (they take an io.ByteReader as it is), so that they stop at
// their stream's end and what follows is seen; bzip2 reads it byte by byte too, and zstd
// in small pieces.
func (d *Decompressors) buffered(stream io.Reader) *bufio.Reader {
	if d.bufr == nil {
		d.bufr = bufio.NewReaderSize(stream, 64<<10)
	} else {
		d.bufr.Reset(stream)
	}
	return d.bufr
}

// xzFirstDict returns the dictionary size the first block of the xz stream starting head
// declares in its LZMA2 filter, or 0 if head does not hold that block header.
func xzFirstDict(head []byte) int64 {
	const streamHeader = 12
	if len(head) < streamHeader+2 || head[streamHeader] == 0 {
		return 0
	}
	h := head[streamHeader:]
	size := (int(h[0]) + 1) * 4
	if len(h) < size {
		return 0
	}
	h = h[1 : size-4] // without the size byte and the CRC32
	flags := h[0]
	h = h[1:]
	varint := func() (uint64, bool) {
		v, n := binary.Uvarint(h)
		if n <= 0 {
			return 0, false
		}
		h = h[n:]
		return v, true
	}
	for _, present := range []bool{flags&0x40 != 0, flags&0x80 != 0} {
		if present {
			if _, ok := varint(); !ok {
				return 0
			}
		}
	}
	for f := 0; f <= int(flags&3); f++ {
		id, ok1 := varint()
		n, ok2 := varint()
		if !ok1 || !ok2 || uint64(len(h)) < n {
			return 0
		}
		props := h[:n]
		h = h[n:]
		if id == 0x21 && n == 1 {
			bits := props[0] & 0x3f
			switch {
			case bits > 40:
				return 0 // invalid: the decoder reports it
			case bits == 40:
				return 1<<32 - 1
			}
			return int64(2|bits&1) << (bits/2 + 11)
		}
	}
	return 0
}

// xzOptionsRefusal is the ErrUnsupported error of an xz stream one of whose intact
// headers (their CRC32s match: a flipped byte is corruption) asks for what the decoder
// does not decode, xz.ErrOptions: a filter of an ID it does not know, a BCJ start offset
// off the filter's alignment, bits the format reserves. It names the filter by name and
// ID. xz-utils refuses the same headers ("Unsupported options"). nil for other errors.
func xzOptionsRefusal(err error) error {
	if !errors.Is(err, xz.ErrOptions) {
		return nil
	}
	what := "options the decoder does not know"
	var oe *xz.OptionsError
	if errors.As(err, &oe) {
		name := xz.FilterName(oe.Filter)
		switch {
		case oe.Filter == 0:
			what = oe.Detail
		case name == "":
			what = fmt.Sprintf("an xz filter of unknown ID 0x%02x", oe.Filter)
		case xz.IsBCJ(oe.Filter):
			what = fmt.Sprintf("the xz BCJ filter %s (ID 0x%02x)", name, oe.Filter)
		default:
			what = fmt.Sprintf("the xz filter %s (ID 0x%02x)", name, oe.Filter)
		}
		if oe.Filter != 0 && oe.Detail != "" {
			what += " " + oe.Detail
		}
	}
	return fmt.Errorf("%w: the xz stream asks for %s, which s3io does not decode; recompress it with xz's standard filters",
		ErrUnsupported, what)
}

// brotliWindow returns the window a brotli stream starting head declares (its WBITS), or 0
// if head is too short.
func brotliWindow(head []byte) int64 {
	if len(head) == 0 {
		return 0
	}
	b := head[0]
	switch {
	case b&1 == 0:
		return 1 << 16
	case b>>1&7 != 0:
		return 1 << (17 + b>>1&7)
	}
	switch n := b >> 4 & 7; {
	case n == 1: // large window: 6 more bits of WBITS follow bit 7, which must be 0
		if b&0x80 != 0 || len(head) < 2 {
			return 0
		}
		return 1 << (head[1] & 0x3f)
	case n != 0:
		return 1 << (8 + n)
	}
	return 1 << 17
}

// zstdHeader is what a zstd frame header asks of the decoder.
type zstdHeader struct {
	window int64  // bytes of history; 0 if head does not hold the header
	dict   uint32 // Dictionary_ID, 0 for none
}

// zstdFirstHeader parses the header of the first data frame in head, past any skippable
// frames.
func zstdFirstHeader(head []byte) zstdHeader {
	for len(head) >= 8 && isZstdSkippable(head) {
		n := binary.LittleEndian.Uint32(head[4:])
		if uint64(len(head)) < 8+uint64(n) {
			return zstdHeader{}
		}
		head = head[8+n:]
	}
	if len(head) < 5 || binary.LittleEndian.Uint32(head) != 0xfd2fb528 {
		return zstdHeader{}
	}
	fhd := head[4]
	single := fhd>>5&1 == 1
	didSize := []int{0, 1, 2, 4}[fhd&3]
	fcsSize := []int{0, 2, 4, 8}[fhd>>6]
	if fcsSize == 0 && single {
		fcsSize = 1
	}
	h := head[5:]
	need := didSize + fcsSize
	if !single {
		need++
	}
	if len(h) < need {
		return zstdHeader{}
	}
	var z zstdHeader
	if !single {
		wd := h[0]
		h = h[1:]
		log := 10 + uint(wd>>3)
		base := int64(1) << log
		z.window = base + base/8*int64(wd&7)
	}
	switch didSize {
	case 1:
		z.dict = uint32(h[0])
	case 2:
		z.dict = uint32(binary.LittleEndian.Uint16(h))
	case 4:
		z.dict = binary.LittleEndian.Uint32(h)
	}
	h = h[didSize:]
	if single {
		// No window descriptor: the window is the whole content.
		switch fcsSize {
		case 1:
			z.window = int64(h[0])
		case 2:
			z.window = int64(binary.LittleEndian.Uint16(h)) + 256
		case 4:
			z.window = int64(binary.LittleEndian.Uint32(h))
		case 8:
			z.window = int64(min(binary.LittleEndian.Uint64(h), 1<<62))
		}
	}
	return z
}

// zstdRefusal is the ErrUnsupported error of a zstd stream whose first frame header asks
// for more than the decoder gives, or nil.
func zstdRefusal(head []byte, limit int64) error {
	z := zstdFirstHeader(head)
	switch {
	case z.dict != 0:
		return zstdDictError(z.dict)
	case z.window > limit:
		return windowError("zstd frame", z.window, limit)
	}
	return nil
}

func zstdDictError(id uint32) error {
	which := "a dictionary"
	if id != 0 {
		which = fmt.Sprintf("dictionary %d", id)
	}
	return fmt.Errorf("%w: the zstd frame needs %s; s3io reads frames without dictionaries (decompress it with zstd -D, and store it without)", ErrUnsupported, which)
}

// zstdWalker passes a zstd stream to the decoder and follows its structure as it goes:
// frame headers, block headers (skipping the blocks' contents), checksums and skippable
// frames. It refuses, with an ErrUnsupported error, a frame header that asks for a window
// above limit or names a dictionary, before the decoder reads it: the decoder's own
// refusal (ErrWindowSizeExceeded) says no size, and it also reports a corrupt block's match
// beyond the window so, which is corruption. Bytes it cannot place stop the walk; the
// decoder reports them.
type zstdWalker struct {
	r     io.Reader
	limit int64
	skip  uint64 // bytes still to pass before the next header
	hdr   [18]byte
	nh    int // bytes of hdr collected
	want  int // bytes of hdr the state needs
	state uint8
	fhd   byte
	err   error // the refusal, once made
}

const (
	zwMagic uint8 = iota
	zwSkipSize
	zwFHD
	zwFrameHeader
	zwBlock
	zwOff
)

func (w *zstdWalker) reset(r io.Reader, limit int64) {
	*w = zstdWalker{r: r, limit: limit, want: 4}
}

func (w *zstdWalker) Read(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.r.Read(p)
	w.walk(p[:n])
	if w.err != nil {
		return 0, w.err
	}
	return n, err
}

func (w *zstdWalker) walk(p []byte) {
	for len(p) > 0 && w.state != zwOff {
		if w.skip > 0 {
			k := min(w.skip, uint64(len(p)))
			p, w.skip = p[k:], w.skip-k
			continue
		}
		k := copy(w.hdr[w.nh:w.want], p)
		w.nh += k
		p = p[k:]
		if w.nh < w.want {
			return
		}
		w.step()
		w.nh = 0
	}
}

// step acts on a complete header piece in w.hdr[:w.want].
func (w *zstdWalker) step() {
	h := w.hdr[:w.want]
	switch w.state {
	case zwMagic:
		switch m := binary.LittleEndian.Uint32(h); {
		case m == 0xfd2fb528:
			w.state, w.want = zwFHD, 1
		case m&0xfffffff0 == 0x184d2a50:
			w.state, w.want = zwSkipSize, 4
		default:
			w.state = zwOff
		}
	case zwSkipSize:
		w.skip = uint64(binary.LittleEndian.Uint32(h))
		w.state, w.want = zwMagic, 4
	case zwFHD:
		w.fhd = h[0]
		single := w.fhd>>5&1 == 1
		need := []int{0, 1, 2, 4}[w.fhd&3] + []int{0, 2, 4, 8}[w.fhd>>6]
		if single && w.fhd>>6 == 0 {
			need++
		}
		if !single {
			need++
		}
		w.state, w.want = zwFrameHeader, need
	case zwFrameHeader:
		var buf [5 + 14]byte
		binary.LittleEndian.PutUint32(buf[:], 0xfd2fb528)
		buf[4] = w.fhd
		n := copy(buf[5:], h)
		if err := zstdRefusal(buf[:5+n], w.limit); err != nil {
			w.err, w.state = err, zwOff
			return
		}
		w.state, w.want = zwBlock, 3
	case zwBlock:
		b := uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16
		switch b >> 1 & 3 {
		case 0, 2: // raw, compressed
			w.skip = uint64(b >> 3)
		case 1: // RLE: one byte
			w.skip = 1
		default:
			w.state = zwOff
			return
		}
		if b&1 == 1 { // the frame's last block
			if w.fhd>>2&1 == 1 {
				w.skip += 4 // Content_Checksum
			}
			w.state, w.want = zwMagic, 4
		}
	}
}

// zstdUnknownDict classifies the decoder's refusal of a dictionary the walker did not see
// named (it always should).
func zstdUnknownDict(err error) error {
	if errors.Is(err, zstd.ErrUnknownDictionary) {
		return zstdDictError(0)
	}
	return nil
}
