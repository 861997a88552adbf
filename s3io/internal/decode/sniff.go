package decode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spate-io/beam-s3/s3io/internal/tarfmt"
)

// Compression names how an object's bytes are decoded before framing; the values are those
// of s3io.Compression. Besides the codecs it names the stored archive formats (Tar, Zip) and,
// as Detect's answer only, the formats the reader refuses.
type Compression string

// The modes a Config may ask for. Auto decides per object: by key extension first, then by
// the object's leading magic bytes, else None.
const (
	Auto    Compression = "auto"
	None    Compression = "none"
	Gzip    Compression = "gzip"
	Zstd    Compression = "zstd"
	Bzip2   Compression = "bzip2"
	Xz      Compression = "xz"
	Lz4     Compression = "lz4"
	Snappy  Compression = "snappy"  // the Snappy framing format (.sz), not raw snappy blocks
	Zlib    Compression = "zlib"    // RFC 1950: a 2-byte header, deflate, an Adler-32
	Deflate Compression = "deflate" // RFC 1951 raw deflate, no header
	Brotli  Compression = "brotli"  // no magic bytes: by extension or by Config only
)

// Stored archives, which Detect reports in auto mode: a tar's members, or a zip's, are read
// entry by entry. A tar inside a compressed object is found after decompression instead.
const (
	Tar Compression = "tar"
	Zip Compression = "zip"
)

// Codecs lists the modes a Config may name, in the order documentation lists them: Auto,
// then codecTable's rows a Config may ask for.
var Codecs = modes()

// ErrUnsupported marks an object in a format the reader does not read (7z, rar, .Z, a zstd
// frame needing a dictionary, an encrypted zip entry, a window above the limit): it is
// refused by name, never framed as if it were text.
var ErrUnsupported = errors.New("s3io: unsupported format")

// unsupportedPrefix starts the Compression Detect gives an object in a format the reader
// refuses, followed by the format as the error names it ("a 7z archive"). Each such format
// is a row of codecTable, with the advice UnsupportedError gives.
const unsupportedPrefix = "unsupported:"

// IsUnsupported reports whether c is a format Detect refuses.
func IsUnsupported(c Compression) bool { return strings.HasPrefix(string(c), unsupportedPrefix) }

// UnsupportedError returns the error an object Detect refused as c fails with.
func UnsupportedError(c Compression) error {
	var format, advice string
	if k := lookup(c); k != nil && IsUnsupported(c) {
		format, advice = strings.TrimPrefix(string(c), unsupportedPrefix), k.advice
	}
	return fmt.Errorf("%w: the object is %s, which s3io does not read; %s", ErrUnsupported, format, advice)
}

// The magic bytes the unit finders look for too (units.go); the other formats' are in
// their codecTable rows.
var (
	gzipMagic  = []byte{0x1f, 0x8b}
	zstdMagic  = []byte{0x28, 0xb5, 0x2f, 0xfd}
	bzip2Magic = []byte("BZh")
)

// MagicLen is how many leading bytes of an object Detect needs to tell the formats apart:
// a tar is known by its first header block's checksum, which covers all 512 bytes.
const MagicLen = 512

// NamesTar reports whether key names a tar, plain or compressed (.tar, .tar.gz, .tgz,
// .tar.zst, .tbz2, ...): its records are its entries', found after decompression.
func NamesTar(key string) bool {
	lower := strings.ToLower(key)
	_, suffix, tar := byExtension(lower)
	return suffix != "" && (tar || strings.HasSuffix(strings.TrimSuffix(lower, suffix), ".tar"))
}

// Detect decides how to decode the object key whose first bytes are head (up to MagicLen of
// them). An explicit mode is obeyed; Auto goes by the key's extension, then by magic bytes.
// The answer is a codec, Tar or Zip, None, or a format the reader refuses (IsUnsupported).
func Detect(mode Compression, key string, head []byte) Compression {
	if mode != Auto {
		return mode
	}
	if comp, suffix, _ := byExtension(strings.ToLower(key)); suffix != "" {
		return comp
	}
	return detectMagic(head)
}

// isBzip2 checks "BZh", a block size digit and the first block's or the end-of-stream magic:
// "BZh" alone starts ordinary text too often.
func isBzip2(head []byte) bool {
	if len(head) < 10 || !bytes.HasPrefix(head, bzip2Magic) || head[3] < '1' || head[3] > '9' {
		return false
	}
	block := []byte{0x31, 0x41, 0x59, 0x26, 0x53, 0x59} // π
	eos := []byte{0x17, 0x72, 0x45, 0x38, 0x50, 0x90}   // √π: an empty stream
	return bytes.HasPrefix(head[4:], block) || bytes.HasPrefix(head[4:], eos)
}

// isZlib checks for the RFC 1950 headers zlib writes with its default 32 KiB window (78 01,
// 78 5e, 78 9c, 78 da) and a plausible first deflate block: any two bytes whose check bits
// pass would also match one text object in ~1,000 ("x^" is printable). The block's type
// must not be the reserved 11, and a stored block's length must match its complement.
func isZlib(head []byte) bool {
	if len(head) < 7 || head[0] != 0x78 {
		return false
	}
	switch head[1] {
	case 0x01, 0x5e, 0x9c, 0xda:
	default:
		return false
	}
	switch (head[2] >> 1) & 3 {
	case 3:
		return false
	case 0: // stored: LEN and NLEN follow the byte-aligned header
		return binary.LittleEndian.Uint16(head[3:]) == ^binary.LittleEndian.Uint16(head[5:])
	}
	return true
}

// IsTar reports whether head, the first bytes of a stream, is a tar header of any dialect
// (POSIX ustar and pax, GNU, v7 without magic): by its checksum.
func IsTar(head []byte) bool { return tarfmt.IsHeader(head) }

// isZstdSkippable reports a zstd skippable frame (magic 0x184D2A5?), which the seekable
// format and pzstd put before or after data frames.
func isZstdSkippable(head []byte) bool {
	return len(head) >= 4 && binary.LittleEndian.Uint32(head)&0xfffffff0 == 0x184d2a50
}

// sniff reads the first bytes of src and decides how the object key is decoded under mode.
// It returns the bytes read (head), a stream of all of src's bytes, the ones read included,
// and whether src is empty. The planner's probe (Detect on the first MagicLen bytes) and the
// reader's decoding decide alike, so they cannot disagree on what an object holds.
func sniff(mode Compression, key string, src io.Reader) (comp Compression, head []byte, stream io.Reader, empty bool, err error) {
	head = make([]byte, MagicLen)
	n, err := io.ReadFull(src, head)
	switch {
	case err == io.EOF:
		return None, nil, bytes.NewReader(nil), true, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return "", nil, nil, false, err
	}
	head = head[:n]
	return Detect(mode, key, head), head, io.MultiReader(bytes.NewReader(head), src), false, nil
}
