package decode

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// A compressed object made of independent units — gzip members (concatenated .gz files,
// BGZF, WARC), zstd frames (pzstd, the seekable format, concatenated .zst files) or bzip2
// streams (pbzip2, concatenated .bz2 files) — can be decoded from the first byte of any of
// its units. The planner finds unit starts (FindUnit,
// ZstdSeekTable) and cuts the object there; a read of the span it owns decodes its own units
// and then the start of the next one, up to the end of the record in progress (OpenUnits).

// CutAtUnits reports whether objects compressed with c are made of units a reader can
// start at: gzip members, zstd frames and bzip2 streams (pbzip2 writes one per 900 kB
// block; the blocks inside a stream are not byte-aligned, so a one-stream file is one unit).
// xz blocks are not cut (yet): they need the xz index to find.
// The rows of codecTable say which (units).
func CutAtUnits(c Compression) bool {
	k := lookup(c)
	return k != nil && k.units
}

// unitProofBytes is how much a candidate unit must decode without error to count as a unit
// start, unless it ends cleanly before (a gzip member whose CRC and length check, or the
// object's end). Random bytes that happen to match a magic number fail far sooner: a
// back-reference before the first output byte, an invalid code, a bad block type.
const unitProofBytes = 64 << 10

// FindUnit returns the offset in r's bytes of the first unit of compression c that starts
// within the first window bytes, proven by decoding it (a magic number alone is not proof);
// found is false when none does. It reads at most window bytes plus what the proof of a
// candidate near the window's end needs. maxWindow bounds a zstd frame's window, as
// Decompressors.MaxWindow does. An error is r's, never a candidate's: a candidate that does
// not decode is not a unit start.
func FindUnit(c Compression, r io.Reader, window int, maxWindow int64) (off int64, found bool, err error) {
	if !CutAtUnits(c) {
		return 0, false, fmt.Errorf("s3io: %s objects are not cut at units", c)
	}
	return findUnit(c, &probe{r: r}, window, maxWindow)
}

// FindUnitIn is FindUnit over bytes already in memory, b: a candidate whose proof runs past
// b's end counts only if it decodes cleanly to there.
func FindUnitIn(c Compression, b []byte, window int, maxWindow int64) (off int64, found bool) {
	if !CutAtUnits(c) {
		return 0, false
	}
	off, found, _ = findUnit(c, &probe{buf: b, err: io.EOF}, window, maxWindow)
	return off, found
}

func findUnit(c Compression, p *probe, window int, maxWindow int64) (off int64, found bool, err error) {
	var zs *zstd.Decoder
	defer func() {
		if zs != nil {
			zs.Close()
		}
	}()
	magic := gzipMagic
	switch c {
	case Zstd:
		magic = zstdMagic
	case Bzip2:
		magic = bzip2Magic
	}
	for i := 0; i < window; i++ {
		if err := p.fill(i + len(magic) + 1); err != nil {
			if err == io.EOF {
				return 0, false, nil
			}
			return 0, false, err
		}
		j := bytes.Index(p.buf[i:], magic)
		if j < 0 {
			i = max(i, len(p.buf)-len(magic)) // the next fill brings what follows
			continue
		}
		i += j
		if i >= window {
			break
		}
		var ok bool
		switch c {
		case Gzip:
			ok, err = p.proveGzip(i)
		case Bzip2:
			ok, err = p.proveBzip2(i)
		default:
			if zs == nil {
				zs, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(uint64(max(maxWindow, 1<<20))))
				if err != nil {
					return 0, false, err
				}
			}
			ok, err = p.proveZstd(zs, i)
		}
		if err != nil {
			return 0, false, err
		}
		if ok {
			return int64(i), true, nil
		}
	}
	return 0, false, nil
}

// probe holds the bytes of a probe read so far, so that every candidate is decoded from the
// same bytes, read once.
type probe struct {
	r   io.Reader
	buf []byte
	err error // r's, once seen
}

// fill reads until the probe holds n bytes. It returns io.EOF when r ends first, or r's error.
func (p *probe) fill(n int) error {
	for len(p.buf) < n {
		if p.err != nil {
			if p.err == io.EOF && len(p.buf) > 0 && n > len(p.buf) {
				return io.EOF
			}
			return p.err
		}
		if cap(p.buf)-len(p.buf) < 16<<10 {
			p.buf = append(make([]byte, 0, 2*cap(p.buf)+32<<10), p.buf...)
		}
		k, err := p.r.Read(p.buf[len(p.buf):cap(p.buf)])
		p.buf = p.buf[:len(p.buf)+k]
		if err != nil {
			p.err = err
		}
	}
	return nil
}

// from returns a reader of the probe's bytes from offset i on, reading more as it needs.
func (p *probe) from(i int) *bufio.Reader {
	return bufio.NewReaderSize(&probeReader{p: p, off: i}, 16<<10)
}

type probeReader struct {
	p   *probe
	off int
}

// errProbeSource marks the probe's source failing under a candidate's decoder: that is the
// read's error, not the candidate's.
var errProbeSource = errors.New("probe source failed")

func (r *probeReader) Read(b []byte) (int, error) {
	if r.off >= len(r.p.buf) {
		if err := r.p.fill(r.off + 1); err != nil {
			if err != io.EOF {
				return 0, errProbeSource
			}
			return 0, io.EOF
		}
	}
	n := copy(b, r.p.buf[r.off:])
	r.off += n
	return n, nil
}

// proveGzip decodes the member that would start at offset i: its header must parse (no
// reserved flags) and its deflate data decode unitProofBytes, or end with a matching CRC and
// length.
func (p *probe) proveGzip(i int) (bool, error) {
	if i+4 > len(p.buf) || p.buf[i+3]&0xe0 != 0 {
		return false, nil
	}
	zr, err := gzip.NewReader(p.from(i))
	if err != nil {
		return false, p.sourceErr()
	}
	zr.Multistream(false)
	return p.proof(zr)
}

// bzip2EndMagic is bzip2's 48-bit end-of-stream magic (the digits of the square root of pi).
const bzip2EndMagic = 0x177245385090

// proveBzip2 checks the stream that would start at offset i from both sides: its header
// ("BZh", a level, then a block's or the end's 48-bit magic) and, right before it, the
// previous stream's end (the 48-bit end magic and 32-bit CRC, then 0-7 bits of padding to
// the byte boundary). Decoding is no cheaper proof for bzip2: a block yields no byte until
// all of it (up to 900 kB) is read, so each cut would cost a block. A wrong cut cannot make
// up records either way: the reader checks every block's and stream's CRC. A candidate
// fewer than 11 bytes past the probe's start, whose previous end the probe did not read,
// is passed over.
func (p *probe) proveBzip2(i int) (bool, error) {
	if i < 11 {
		return false, nil
	}
	if err := p.fill(i + 10); err != nil {
		return false, p.sourceErr()
	}
	if !isBzip2(p.buf[i : i+10]) {
		return false, nil
	}
	// The 88 bits before i, high 24 and low 64: the end magic ends 32 + pad bits before i.
	b := p.buf[i-11 : i]
	hi, lo := uint64(b[0])<<16|uint64(b[1])<<8|uint64(b[2]), binary.BigEndian.Uint64(b[3:])
	for shift := uint(32); shift < 40; shift++ {
		if (lo>>shift|hi<<(64-shift))&(1<<48-1) == bzip2EndMagic {
			return true, nil
		}
	}
	return false, nil
}

// proveZstd decodes the frames that would start at offset i.
func (p *probe) proveZstd(zs *zstd.Decoder, i int) (bool, error) {
	if err := zs.Reset(p.from(i)); err != nil {
		return false, p.sourceErr()
	}
	return p.proof(zs)
}

// proof reads dec until it has decoded unitProofBytes or ends cleanly.
func (p *probe) proof(dec io.Reader) (bool, error) {
	n, err := io.CopyN(io.Discard, dec, unitProofBytes)
	switch {
	case n == unitProofBytes || err == io.EOF:
		return true, nil
	case p.err != nil && p.err != io.EOF:
		return false, p.err
	}
	return false, nil
}

func (p *probe) sourceErr() error {
	if p.err != nil && p.err != io.EOF {
		return p.err
	}
	return nil
}

// zstd seekable format (contrib/seekable_format in the zstd repository): a skippable frame
// at the object's end holds one entry per frame, then a 9-byte footer.
const (
	seekTableMagic    = 0x8F92EAB1
	seekTableFooter   = 9
	skippableSeekable = 0x184D2A5E
	// ZstdSeekTail is how many trailing bytes the planner reads to find a seek table: its
	// footer, and the whole table of an object of up to ~5,000 frames in the same request.
	ZstdSeekTail = 64 << 10
)

// ZstdSeekTable returns the stored offsets of the frames listed in the seek table that ends
// tail, the last bytes of an object of size bytes (at least seekTableFooter of them); ok is
// false when tail does not end with a seek table, and need, when more than len(tail), is how
// many trailing bytes the table takes. The offsets are the table's word, checked against the
// object's size: a table whose frames do not add up to the bytes before it is not used.
func ZstdSeekTable(tail []byte, size int64) (starts []int64, need int, ok bool) {
	if len(tail) < seekTableFooter {
		return nil, 0, false
	}
	f := tail[len(tail)-seekTableFooter:]
	if binary.LittleEndian.Uint32(f[5:]) != seekTableMagic || f[4]&0x7c != 0 {
		return nil, 0, false
	}
	frames := int64(binary.LittleEndian.Uint32(f))
	entry := int64(8)
	if f[4]&0x80 != 0 {
		entry = 12
	}
	tableBytes := frames*entry + seekTableFooter + 8 // + the skippable frame's header
	if tableBytes > size || tableBytes > 1<<30 {
		return nil, 0, false
	}
	if tableBytes > int64(len(tail)) {
		return nil, int(tableBytes), false
	}
	t := tail[int64(len(tail))-tableBytes:]
	if binary.LittleEndian.Uint32(t) != skippableSeekable || int64(binary.LittleEndian.Uint32(t[4:])) != tableBytes-8 {
		return nil, 0, false
	}
	starts = make([]int64, frames)
	var off int64
	for k := range frames {
		starts[k] = off
		off += int64(binary.LittleEndian.Uint32(t[8+k*entry:]))
	}
	if off != size-tableBytes {
		return nil, 0, false
	}
	return starts, 0, true
}

// OpenUnits returns the decoded stream of the caller's span of a compressed object cut at
// unit starts: src holds the span's stored bytes from its first unit on; the first own bytes
// of them are the read's own units, which must end exactly there; when more, what follows
// them is the object's next units, decoded only up to and including the first LF, which
// ends the record in progress at the span's end. start is the span's stored offset, named
// in errors: a corrupt unit fails as ErrCorrupt with the stored offset of the gzip member
// it is in (for zstd and bzip2, of the span and of the bytes read when it failed).
func (d *Decompressors) OpenUnits(comp Compression, src io.Reader, start, own int64, more bool) (io.Reader, error) {
	if !CutAtUnits(comp) {
		return nil, fmt.Errorf("s3io: %s objects are not cut at units", comp)
	}
	u := &unitsStream{d: d, comp: comp, start: start, own: own, more: more, fetched: source{r: src}}
	u.lim = io.LimitedReader{R: &u.fetched, N: own}
	u.cnt = storedCounter{r: &u.lim}
	if err := u.openOwn(); err != nil {
		return nil, err
	}
	return u, nil
}

// unitsStream is OpenUnits' stream: the read's own units, then the next units' bytes up to
// their first LF.
type unitsStream struct {
	d          *Decompressors
	comp       Compression
	start, own int64
	more       bool
	fetched    source // the span's bytes as fetched, past the own units too
	lim        io.LimitedReader
	cnt        storedCounter
	br         *bufio.Reader
	member     int64 // stored offset of the gzip member being decoded
	cur        io.Reader
	tail, done bool
}

// storedCounter counts the stored bytes read through it.
type storedCounter struct {
	r io.Reader
	n int64
}

func (c *storedCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// consumed is the stored offset of the next byte the decoder takes.
func (u *unitsStream) consumed() int64 { return u.start + u.cnt.n - int64(u.br.Buffered()) }

func (u *unitsStream) openOwn() error {
	// A buffer of the stream's own, not the decoders' shared one: zstd's Open buffers its
	// walker with that. gzip reads a *bufio.Reader through its fast path.
	u.br = bufio.NewReaderSize(&u.cnt, 64<<10)
	switch u.comp {
	case Gzip:
		return u.nextMember(true)
	case Bzip2:
		// The standard library's reader decodes the concatenated streams to the end of the
		// own bytes, reading them a byte at a time from u.br (an io.ByteReader), so that
		// endOwn sees exactly what it left.
		u.cur = bzip2.NewReader(u.br)
		return nil
	}
	s, _, err := u.d.Open(Zstd, "", u.br)
	if err != nil {
		return u.unitError(err)
	}
	u.cur = s
	return nil
}

// nextMember starts the next gzip member of the own bytes; members are decoded one
// by one so that an error names the member it is in. It reports io.EOF after the last.
func (u *unitsStream) nextMember(first bool) error {
	u.member = u.consumed()
	var err error
	if u.d.gz == nil {
		u.d.gz, err = gzip.NewReader(u.br)
	} else {
		err = u.d.gz.Reset(u.br)
	}
	if err == io.EOF && !first {
		return io.EOF
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return u.unitError(decodeError("gzip", err, &u.fetched))
	}
	u.d.gz.Multistream(false)
	u.cur = u.d.gz
	return nil
}

// unitError names where a decoding error happened.
func (u *unitsStream) unitError(err error) error {
	if err == nil || err == io.EOF || !errors.Is(err, ErrCorrupt) {
		return err
	}
	if u.comp == Gzip && !u.tail {
		return fmt.Errorf("%w (gzip member at stored offset %d)", err, u.member)
	}
	return fmt.Errorf("%w (%s units stored from offset %d, failing before offset %d)", err, u.comp, u.start, u.start+u.cnt.n)
}

func (u *unitsStream) Read(p []byte) (int, error) {
	for {
		if u.done {
			return 0, io.EOF
		}
		n, err := u.cur.Read(p)
		if u.tail {
			if i := bytes.IndexByte(p[:n], '\n'); i >= 0 {
				u.done = true
				return i + 1, nil
			}
			if err == io.EOF {
				u.done = true
			}
			if err != nil && err != io.EOF {
				err = u.unitError(err)
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		if u.comp != Zstd && err != nil && err != io.EOF {
			err = decodeError(string(u.comp), err, &u.fetched)
		}
		if err != io.EOF {
			return n, u.unitError(err)
		}
		if u.comp == Gzip {
			if err := u.nextMember(false); err != io.EOF {
				if err != nil {
					return n, err
				}
				if n > 0 {
					return n, nil
				}
				continue
			}
		}
		if err := u.endOwn(); err != nil {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// endOwn checks that the own units ended exactly at the span's end, and starts decoding
// the next units, if any.
func (u *unitsStream) endOwn() error {
	if left := u.lim.N + int64(u.br.Buffered()); left != 0 {
		return fmt.Errorf("%w: %s: the own units stored from offset %d end %d bytes before offset %d", ErrCorrupt, u.comp, u.start, left, u.start+u.own)
	}
	if !u.more {
		u.done = true
		return nil
	}
	u.tail = true
	s, _, err := u.d.Open(u.comp, "", &u.fetched)
	if err != nil {
		return u.unitError(err)
	}
	if s == nil {
		u.done = true
		return nil
	}
	u.cur = s
	return nil
}
