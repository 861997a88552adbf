package decode

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/flate"
)

// Inflate checkpoints. A gzip object is decoded from its first byte, so a read that resumes
// inside it (a split, a checkpoint, a retried bundle) would decode again everything before
// its first record. While it inflates, the checkpointing gzip reader keeps, about every
// Checkpoints.Every stored bytes, the state a decoder needs to start again there: the stored
// offset and bit of a deflate block boundary (klauspost/compress's flate.WithEobCallback),
// the 32 KiB window before it, the member's CRC-32 and length so far, and the decoded
// offset. A member's start is a checkpoint too, with no window. A resume reads from the
// checkpoint's stored byte (flate.WithResumeFrom) and checks the member's CRC and length at
// its end as a read from the start would.

// Checkpoint is a point of a compressed object where decoding can start again: inside a
// gzip member (a block boundary, with the window before it), or at the start of a unit (a
// gzip member, a zstd frame, a bzip2 stream) that decodes on its own.
type Checkpoint struct {
	Stored  int64 // stored offset of the first byte to read: the one holding Bit
	Bit     uint8 // bits of that byte already consumed
	Decoded int64 // decoded offset of the object at the checkpoint
	// Unit is true when a unit starts at Stored: no window, no CRC so far.
	Unit bool
	// CRC and MemberSize are the member's CRC-32 and length of output before the checkpoint.
	CRC        uint32
	MemberSize int64
	Window     []byte // the member's last output before the checkpoint, at most 32 KiB
}

// checkpointVersion starts an encoded checkpoint, so that a format change cannot be misread.
const checkpointVersion = 1

// Encode returns cp as a compact string: a few varints and the window deflated, in base64,
// since a runner may decode a restriction's schema row and read its strings as UTF-8. It is
// what a restriction's resume hint carries (its size: docs/design.md, "Inflate checkpoints").
func (cp Checkpoint) Encode() string {
	b := []byte{checkpointVersion, cp.Bit}
	if cp.Unit {
		b[0] |= 0x80
	}
	b = binary.AppendUvarint(b, uint64(cp.Stored))
	b = binary.AppendUvarint(b, uint64(cp.Decoded))
	b = binary.LittleEndian.AppendUint32(b, cp.CRC)
	b = binary.AppendUvarint(b, uint64(cp.MemberSize))
	if len(cp.Window) > 0 {
		var w bytes.Buffer
		w.Write(b)
		fw, _ := flate.NewWriter(&w, flate.BestSpeed) // only an invalid level fails
		fw.Write(cp.Window)                           // a bytes.Buffer does not fail
		fw.Close()
		b = w.Bytes()
	}
	return base64.RawStdEncoding.EncodeToString(b)
}

// DecodeCheckpoint reads what Encode wrote.
func DecodeCheckpoint(s string) (Checkpoint, error) {
	bad := func(what string) (Checkpoint, error) {
		return Checkpoint{}, fmt.Errorf("s3io: an inflate checkpoint in a resume hint is malformed (%s)", what)
	}
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0]&0x7f != checkpointVersion {
		return bad("version")
	}
	cp := Checkpoint{Unit: b[0]&0x80 != 0, Bit: b[1]}
	b = b[2:]
	next := func() (int64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return int64(v), true
	}
	var ok1, ok2, ok3 bool
	cp.Stored, ok1 = next()
	cp.Decoded, ok2 = next()
	if !ok1 || !ok2 || len(b) < 4 {
		return bad("offsets")
	}
	cp.CRC, b = binary.LittleEndian.Uint32(b), b[4:]
	if cp.MemberSize, ok3 = next(); !ok3 || cp.Bit > 7 {
		return bad("member")
	}
	if len(b) > 0 {
		w, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b)), 32<<10+1))
		if err != nil || len(w) > 32<<10 {
			return bad("window")
		}
		cp.Window = w
	}
	return cp, nil
}

// Checkpoints is where a checkpointing gzip reader keeps its latest checkpoints, for the
// goroutine that answers a split: Before may run while the reader adds.
type Checkpoints struct {
	Every int64 // stored bytes between two checkpoints
	Keep  int   // how many of the latest it keeps; 0 means keptCheckpoints

	mu   sync.Mutex
	list []Checkpoint // the latest, oldest first
	off  bool         // Disable was called
}

// Disable empties the log and keeps it empty: the reader found that its records' offsets
// are not the gzip stream's (an archive's entries), so no checkpoint can resume them.
func (c *Checkpoints) Disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list, c.off = nil, true
}

// keptCheckpoints is how many checkpoints a log keeps: decoding runs ahead of the records
// claimed by a window of a few MiB, so the checkpoint before the last claimed record is
// among the last few.
const keptCheckpoints = 4

func (c *Checkpoints) add(cp Checkpoint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off {
		return
	}
	if len(c.list) >= cmp.Or(c.Keep, keptCheckpoints) {
		c.list = append(c.list[:0], c.list[1:]...)
	}
	c.list = append(c.list, cp)
}

// Before returns the latest checkpoint at or before the decoded offset off.
func (c *Checkpoints) Before(off int64) (Checkpoint, bool) {
	if c == nil {
		return Checkpoint{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.list) - 1; i >= 0; i-- {
		if c.list[i].Decoded <= off {
			return c.list[i], true
		}
	}
	return Checkpoint{}, false
}

// storedRing counts the stored bytes read through it and keeps the last ringBytes of them,
// from which a checkpoint's stored offset is confirmed (verify).
type storedRing struct {
	r    io.Reader
	n    int64 // bytes read
	ring []byte
}

const ringBytes = 256 << 10

func (c *storedRing) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		at := int(c.n % ringBytes)
		k := copy(c.ring[at:], b)
		b, c.n = b[k:], c.n+int64(k)
	}
	return n, err
}

// from returns the kept stored bytes from stream offset off on (nil if no longer kept).
func (c *storedRing) from(off int64) []byte {
	if off < c.n-ringBytes || off > c.n {
		return nil
	}
	out := make([]byte, 0, c.n-off)
	for off < c.n {
		at := int(off % ringBytes)
		k := min(int64(ringBytes-at), c.n-off)
		out = append(out, c.ring[at:at+int(k)]...)
		off += k
	}
	return out
}

// verifyBytes is how much output a checkpoint's candidate offsets must reproduce.
const verifyBytes = 4 << 10

// pendingCheckpoint is a block end whose checkpoint waits for the output after it: its CRC
// is that of the output before it, and the output after it tells which stored byte it is.
type pendingCheckpoint struct {
	Checkpoint
	taken  int64  // stream offset of the bytes the inflater had taken at the block end
	after  []byte // output after it, up to verifyBytes
	hashed bool
}

// inflateStream decodes a gzip object member by member, keeping checkpoints.
type inflateStream struct {
	cps     *Checkpoints
	fetched *source
	cnt     storedRing
	br      *bufio.Reader
	base    int64 // stored offset of the stream's first byte

	fl       io.ReadCloser // the member's inflater; nil between members
	flBase   int64         // stored offset its compressed offsets count from
	member   int64         // stored offset of the member's header
	memBase  int64         // decoded offset of the member's first byte
	crc      uint32
	size     int64 // the member's output so far
	decoded  int64 // decoded offset of the next byte Read returns
	lastCP   int64 // stored offset of the last checkpoint kept
	pending  []pendingCheckpoint
	members  int
	trailer  [8]byte
	callback bool  // fl reports block ends (a new inflater per member; see nextMember)
	prevLen  int64 // stored bytes of the member before
	plain    io.ReadCloser
}

// OpenGzip returns the decoded stream of the gzip object whose stored bytes src holds, from
// its first byte, keeping checkpoints in cps. An object that holds no bytes is an empty
// stream; errors are classified as Open's (ErrCorrupt for bytes that do not decode, the
// fetch's own error otherwise).
func OpenGzip(src io.Reader, cps *Checkpoints) (io.Reader, error) {
	s := newInflateStream(src, cps, 0)
	if _, err := s.br.Peek(1); err == io.EOF {
		return bytes.NewReader(nil), nil
	}
	if err := s.nextMember(); err != nil {
		return nil, err
	}
	return s, nil
}

// OpenGzipAt returns the decoded stream of a gzip object from checkpoint cp on: src holds its
// stored bytes from cp.Stored. The stream's first byte is the object's decoded byte
// cp.Decoded.
func OpenGzipAt(src io.Reader, cp Checkpoint, cps *Checkpoints) (io.Reader, error) {
	s := newInflateStream(src, cps, cp.Stored)
	s.decoded, s.lastCP = cp.Decoded, cp.Stored
	s.members = 1 // not the object's first member: its end may be the object's
	cps.add(cp)
	if cp.Unit {
		if err := s.nextMember(); err != nil {
			return nil, err
		}
		return s, nil
	}
	s.member, s.memBase, s.crc, s.size = -1, cp.Decoded-cp.MemberSize, cp.CRC, cp.MemberSize
	s.flBase, s.callback = cp.Stored, true
	s.fl = flate.NewReaderOpts(s.br, flate.WithEobCallback(s.onBlock), flate.WithResumeFrom(flate.InflateCheckpoint{
		UncompressedOffset: cp.MemberSize, BitOffset: cp.Bit, Window: cp.Window}))
	return s, nil
}

func newInflateStream(src io.Reader, cps *Checkpoints, base int64) *inflateStream {
	s := &inflateStream{cps: cps, fetched: &source{r: src}, base: base}
	s.cnt.r, s.cnt.ring = s.fetched, make([]byte, ringBytes)
	s.br = bufio.NewReaderSize(&s.cnt, 64<<10)
	return s
}

// consumed is the stored offset of the next byte the inflater takes.
func (s *inflateStream) consumed() int64 { return s.base + s.cnt.n - int64(s.br.Buffered()) }

// nextMember reads the next member's header and starts inflating it. A member's inflater
// reports block ends only if the previous member was long enough to hold a checkpoint:
// klauspost/compress drops the callback on Reset, so each such member costs a new inflater
// (~40 KiB), which BGZF's 64 KiB members must not pay.
func (s *inflateStream) nextMember() error {
	s.member, s.memBase, s.crc, s.size = s.consumed(), s.decoded, 0, 0
	if err := s.header(); err != nil {
		return err
	}
	if s.member > 0 && s.member-s.lastCP >= s.cps.Every {
		s.cps.add(Checkpoint{Stored: s.member, Decoded: s.decoded, Unit: true})
		s.lastCP = s.member
	}
	s.flBase = s.consumed()
	long := s.members == 0 || s.prevLen >= s.cps.Every
	s.members++
	switch {
	case long:
		s.fl, s.callback = flate.NewReaderOpts(s.br, flate.WithEobCallback(s.onBlock)), true
	case s.plain == nil:
		s.plain = flate.NewReader(s.br)
		s.fl, s.callback = s.plain, false
	default:
		s.plain.(flate.Resetter).Reset(s.br, nil)
		s.fl, s.callback = s.plain, false
	}
	return nil
}

// header reads a gzip member header (RFC 1952): the magic, deflate, the flags' fields.
func (s *inflateStream) header() error {
	var h [10]byte
	if _, err := io.ReadFull(s.br, h[:]); err != nil {
		return s.corrupt(noEOF(err), "header")
	}
	if h[0] != 0x1f || h[1] != 0x8b || h[2] != 8 || h[3]&0xe0 != 0 {
		return s.corrupt(errors.New("invalid header"), "header")
	}
	flg := h[3]
	if flg&4 != 0 { // FEXTRA
		var x [2]byte
		if _, err := io.ReadFull(s.br, x[:]); err != nil {
			return s.corrupt(noEOF(err), "header")
		}
		if _, err := s.br.Discard(int(binary.LittleEndian.Uint16(x[:]))); err != nil {
			return s.corrupt(noEOF(err), "header")
		}
	}
	for _, bit := range []byte{8, 16} { // FNAME, FCOMMENT: zero-terminated
		if flg&bit != 0 {
			if _, err := s.br.ReadSlice(0); err != nil {
				return s.corrupt(noEOF(err), "header")
			}
		}
	}
	if flg&2 != 0 { // FHCRC
		if _, err := s.br.Discard(2); err != nil {
			return s.corrupt(noEOF(err), "header")
		}
	}
	return nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// corrupt classifies err, naming the member and the part of it.
func (s *inflateStream) corrupt(err error, where string) error {
	err = decodeError("gzip", err, s.fetched)
	if !errors.Is(err, ErrCorrupt) {
		return err
	}
	if s.member < 0 {
		return fmt.Errorf("%w (%s of the gzip member resumed at stored offset %d)", err, where, s.flBase)
	}
	return fmt.Errorf("%w (%s of the gzip member at stored offset %d)", err, where, s.member)
}

// onBlock is the inflater's block-end callback: it keeps a checkpoint every cps.Every
// stored bytes. The checkpoint's CRC is known once Read has returned the output before it,
// and its stored byte once the output after it is known (verify).
func (s *inflateStream) onBlock(cp flate.InflateCheckpoint) {
	if s.flBase+cp.CompressedOffset-s.lastCP < s.cps.Every {
		return
	}
	taken := s.consumed()
	s.lastCP = taken
	s.pending = append(s.pending, pendingCheckpoint{taken: taken - s.base, Checkpoint: Checkpoint{Bit: cp.BitOffset,
		Decoded: s.memBase + cp.UncompressedOffset, MemberSize: cp.UncompressedOffset, Window: bytes.Clone(cp.Window)}})
}

// verify finds the stored byte of a checkpoint and keeps it. The inflater's own offset
// cannot be trusted: klauspost/compress v1.20.4 counts again, at each stored block, the
// bytes of its bit buffer it reuses (flate's dataBlock adds offBytes to roffset), so a
// checkpoint after a stored block (pigz writes one every 128 KiB) points past its block.
// The bit within the byte is right (the error is whole bytes), and the block end lies at
// most 8 bytes before what the inflater had taken: the candidate that reproduces the
// output after the block end is the checkpoint. One that none reproduces is dropped.
func (s *inflateStream) verify(pc *pendingCheckpoint) {
	for j := int64(0); j <= 8; j++ {
		off := pc.taken - j
		src := s.cnt.from(off)
		if src == nil || s.base+off < s.flBase {
			continue
		}
		r := flate.NewReaderOpts(bytes.NewReader(src), flate.WithResumeFrom(flate.InflateCheckpoint{
			UncompressedOffset: pc.MemberSize, BitOffset: pc.Bit, Window: pc.Window}))
		got := make([]byte, len(pc.after))
		n, _ := io.ReadFull(r, got)
		if n == len(got) && bytes.Equal(got, pc.after) {
			pc.Stored = s.base + off
			s.cps.add(pc.Checkpoint)
			return
		}
	}
}

func (s *inflateStream) Read(p []byte) (int, error) {
	for {
		if s.fl == nil {
			if _, err := s.br.Peek(1); err == io.EOF {
				return 0, io.EOF
			}
			if err := s.nextMember(); err != nil {
				return 0, err
			}
		}
		n, err := s.fl.Read(p)
		s.account(p[:n])
		if err == io.EOF {
			if err := s.endMember(); err != nil {
				return n, err
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			return n, s.corrupt(noEOF(err), "deflate data")
		}
		return n, nil
	}
}

// account checksums output, completing the pending checkpoints it reaches: their CRC,
// then the output after them.
func (s *inflateStream) account(out []byte) {
	h := 0
	for i := range s.pending {
		pc := &s.pending[i]
		k := int(pc.Decoded - s.decoded)
		if k > len(out) {
			break
		}
		if !pc.hashed {
			s.crc = crc32.Update(s.crc, crc32.IEEETable, out[h:max(k, h)])
			h = max(k, h)
			pc.CRC, pc.hashed = s.crc, true
		}
		pc.after = append(pc.after, out[max(k, 0):min(len(out), max(k, 0)+verifyBytes-len(pc.after))]...)
	}
	s.crc = crc32.Update(s.crc, crc32.IEEETable, out[h:])
	s.size += int64(len(out))
	s.decoded += int64(len(out))
	for len(s.pending) > 0 && len(s.pending[0].after) == verifyBytes {
		s.verify(&s.pending[0])
		s.pending = append(s.pending[:0], s.pending[1:]...)
	}
}

// endMember checks the member's trailer.
func (s *inflateStream) endMember() error {
	if _, err := io.ReadFull(s.br, s.trailer[:]); err != nil {
		return s.corrupt(noEOF(err), "trailer")
	}
	if binary.LittleEndian.Uint32(s.trailer[:4]) != s.crc || binary.LittleEndian.Uint32(s.trailer[4:]) != uint32(s.size) {
		return s.corrupt(errors.New("checksum or length mismatch"), "trailer")
	}
	s.prevLen = s.cps.Every // a resumed member counts as long
	if s.member >= 0 {
		s.prevLen = s.consumed() - s.member
	}
	for i := range s.pending {
		if s.pending[i].hashed && len(s.pending[i].after) > 0 {
			s.verify(&s.pending[i]) // the member's end came first: what it had is the proof
		}
	}
	s.fl, s.pending = nil, s.pending[:0]
	return nil
}
