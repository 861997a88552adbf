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

// Codecs lists the modes a Config may name, in the order documentation lists them.
var Codecs = []Compression{Auto, None, Gzip, Zstd, Bzip2, Xz, Lz4, Snappy, Zlib, Deflate, Brotli}

// ErrUnsupported marks an object in a format the reader does not read (7z, rar, .Z, a zstd
// frame needing a dictionary, an encrypted zip entry, a window above the limit): it is
// refused by name, never framed as if it were text.
var ErrUnsupported = errors.New("s3io: unsupported format")

// unsupported is the Compression Detect gives an object the reader refuses; Open fails it
// with an ErrUnsupported error naming the format and what to do.
type unsupported struct {
	format string // "7z", "rar", …
	advice string
}

// unsupportedPrefix marks an unsupported format's Compression value.
const unsupportedPrefix = "unsupported:"

var refused = map[string]unsupported{}

// IsUnsupported reports whether c is a format Detect refuses.
func IsUnsupported(c Compression) bool { return strings.HasPrefix(string(c), unsupportedPrefix) }

// UnsupportedError returns the error an object Detect refused as c fails with.
func UnsupportedError(c Compression) error {
	u := refused[string(c)]
	return fmt.Errorf("%w: the object is %s, which s3io does not read; %s", ErrUnsupported, u.format, u.advice)
}

func refuse(format, advice string) Compression {
	c := Compression(unsupportedPrefix + format)
	refused[string(c)] = unsupported{format: format, advice: advice}
	return c
}

var (
	sevenZ   = refuse("a 7z archive", "repack it as .tar.zst, .tar.xz or .zip (7z x, then tar)")
	rar      = refuse("a RAR archive", "repack it as .tar.zst or .zip (unrar x, then tar)")
	lzma     = refuse("a legacy .lzma (LZMA-alone) stream", "recompress it as .xz (xz -d, then xz)")
	compress = refuse("a Unix compress (.Z, LZW) stream", "recompress it as .gz (uncompress, then gzip)")
	lzip     = refuse("an lzip (.lz) stream", "recompress it as .xz or .zst (lzip -d, then xz or zstd)")
	lzo      = refuse("an lzop (.lzo) stream", "recompress it as .lz4 or .zst (lzop -d, then lz4 or zstd)")
	lz4Block = refuse("a legacy lz4 stream (lz4 -l)", "recompress it in the lz4 frame format (lz4 -d, then lz4 without -l)")
)

// magic bytes, each at the start of the stored object unless noted.
var (
	gzipMagic      = []byte{0x1f, 0x8b}
	zstdMagic      = []byte{0x28, 0xb5, 0x2f, 0xfd}
	bzip2Magic     = []byte("BZh")
	xzMagic        = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	lz4Magic       = []byte{0x04, 0x22, 0x4d, 0x18}
	lz4LegacyMagic = []byte{0x02, 0x21, 0x4c, 0x18}
	snappyMagic    = []byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}
	zipMagic       = []byte("PK\x03\x04")
	zipEmptyMagic  = []byte("PK\x05\x06")
	sevenZMagic    = []byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}
	rarMagic       = []byte("Rar!\x1a\x07")
	compressMagic  = []byte{0x1f, 0x9d}
	lzipMagic      = []byte("LZIP")
	lzoMagic       = []byte{0x89, 'L', 'Z', 'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a}
)

// MagicLen is how many leading bytes of an object Detect needs to tell the formats apart:
// a tar is known by its first header block's checksum, which covers all 512 bytes.
const MagicLen = 512

// extensions maps a key's last extension (or the compound ones) to its format. Compound tar
// names (.tgz) decode as their codec; the tar inside is found after decompression.
var extensions = []struct {
	suffix string
	comp   Compression
	tar    bool // a tar's name (.tar, .tgz): the tar inside is read as its entries
}{
	{".gz", Gzip, false}, {".gzip", Gzip, false}, {".tgz", Gzip, true},
	{".zst", Zstd, false}, {".zstd", Zstd, false}, {".tzst", Zstd, true},
	{".bz2", Bzip2, false}, {".bzip2", Bzip2, false}, {".tbz2", Bzip2, true}, {".tbz", Bzip2, true},
	{".xz", Xz, false}, {".txz", Xz, true},
	{".lz4", Lz4, false},
	{".sz", Snappy, false},
	{".zz", Zlib, false}, {".zlib", Zlib, false},
	{".deflate", Deflate, false},
	{".br", Brotli, false},
	{".tar", Tar, true},
	{".zip", Zip, false},
	{".7z", sevenZ, false},
	{".rar", rar, false},
	{".lzma", lzma, false},
	{".z", compress, false}, // .Z; keys are compared lower-cased
	{".lz", lzip, false},
	{".lzo", lzo, false},
}

// NamesTar reports whether key names a tar, plain or compressed (.tar, .tar.gz, .tgz,
// .tar.zst, .tbz2, ...): its records are its entries', found after decompression.
func NamesTar(key string) bool {
	lower := strings.ToLower(key)
	for _, e := range extensions {
		if strings.HasSuffix(lower, e.suffix) {
			return e.tar || strings.HasSuffix(strings.TrimSuffix(lower, e.suffix), ".tar")
		}
	}
	return false
}

// Detect decides how to decode the object key whose first bytes are head (up to MagicLen of
// them). An explicit mode is obeyed; Auto goes by the key's extension, then by magic bytes.
// The answer is a codec, Tar or Zip, None, or a format the reader refuses (IsUnsupported).
func Detect(mode Compression, key string, head []byte) Compression {
	if mode != Auto {
		return mode
	}
	lower := strings.ToLower(key)
	for _, e := range extensions {
		if strings.HasSuffix(lower, e.suffix) {
			return e.comp
		}
	}
	return detectMagic(head)
}

// detectMagic names the format whose magic bytes head starts with, else None.
func detectMagic(head []byte) Compression {
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		return Gzip
	case bytes.HasPrefix(head, zstdMagic):
		return Zstd
	case isZstdSkippable(head):
		return Zstd // a skippable frame (a seek table, metadata) before the data frames
	case bytes.HasPrefix(head, xzMagic):
		return Xz
	case bytes.HasPrefix(head, lz4Magic):
		return Lz4
	case bytes.HasPrefix(head, snappyMagic):
		return Snappy
	case bytes.HasPrefix(head, zipMagic), bytes.HasPrefix(head, zipEmptyMagic):
		return Zip
	case bytes.HasPrefix(head, sevenZMagic):
		return sevenZ
	case bytes.HasPrefix(head, rarMagic):
		return rar
	case bytes.HasPrefix(head, compressMagic):
		return compress
	case bytes.HasPrefix(head, lzipMagic):
		return lzip
	case bytes.HasPrefix(head, lzoMagic):
		return lzo
	case bytes.HasPrefix(head, lz4LegacyMagic):
		return lz4Block
	case isBzip2(head):
		return Bzip2
	case isZlib(head):
		return Zlib
	case IsTar(head):
		return Tar
	}
	return None
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
