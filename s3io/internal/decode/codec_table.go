package decode

import (
	"bytes"
	"io"
	"strings"
)

// codec is everything the package knows of one format, as archive/zip's register.go keeps a
// compression method's decompressor: Detect, NamesTar, Open, Codecs, CutAtUnits and
// Slow all read codecTable, so that a format is added, or its facts changed, in one row.
type codec struct {
	name Compression
	mode bool // a Config may ask for it by name: it is in Codecs

	// extensions are the key suffixes (lower-case, one leading dot and no other, so that a
	// key matches at most one of all the rows') that name the format; tarExtensions name a
	// tar compressed with it (.tgz), decoded as the codec and its tar read as entries.
	extensions, tarExtensions []string

	// magic reports whether an object starting with head is in the format; nil when the
	// format cannot be told by content (raw deflate and brotli have no header to check).
	// A lateMagic is a structural check that ordinary text, or another format's header,
	// can pass ("BZh" starts text, zlib's is two bytes, a tar has only a checksum): it is
	// tried only after every fixed magic failed, in table order (bzip2, zlib, then tar).
	magic     func(head []byte) bool
	lateMagic bool

	// open returns the decoded stream of an object of the format, head being its first
	// bytes, which stream starts with; nil when the stream is returned as stored (None, and
	// the archives the caller reads).
	open func(d *Decompressors, head []byte, stream io.Reader) (io.Reader, error)

	// advice, set for the formats the reader refuses (named unsupportedPrefix+format), is
	// what UnsupportedError tells the user to do instead.
	advice string

	// slow: it decodes at tens of MB/s on one core (Slow). units: it is made of independently
	// decodable units a planner may cut between (CutAtUnits).
	slow, units bool
}

// codecTable lists the formats in Codecs' documentation order, then the archives, then the
// formats refused. The order is also detectMagic's: the fixed magics row by row, then the
// late ones (gzip, zstd, xz, lz4, Snappy, zip, 7z, rar, .Z, lzip, lzop, legacy lz4, then
// bzip2, zlib, tar), the order of the switch the table replaced. An extension's row does
// not depend on the order: no suffix ends another.
var codecTable = []codec{
	{name: None, mode: true},
	{
		name: Gzip, mode: true, units: true,
		extensions: []string{".gz", ".gzip"}, tarExtensions: []string{".tgz"},
		magic: prefix(gzipMagic),
		open:  (*Decompressors).openGzip,
	},
	{
		name: Zstd, mode: true, units: true,
		extensions: []string{".zst", ".zstd"}, tarExtensions: []string{".tzst"},
		// A skippable frame (a seek table, metadata) may come before the data frames.
		magic: func(head []byte) bool { return bytes.HasPrefix(head, zstdMagic) || isZstdSkippable(head) },
		open:  (*Decompressors).openZstd,
	},
	{
		name: Bzip2, mode: true, units: true, slow: true,
		extensions: []string{".bz2", ".bzip2"}, tarExtensions: []string{".tbz2", ".tbz"},
		magic: isBzip2, lateMagic: true,
		open: (*Decompressors).openBzip2,
	},
	{
		name: Xz, mode: true, slow: true,
		extensions: []string{".xz"}, tarExtensions: []string{".txz"},
		magic: prefix([]byte{0xfd, '7', 'z', 'X', 'Z', 0x00}),
		open:  (*Decompressors).openXz,
	},
	{
		name: Lz4, mode: true, extensions: []string{".lz4"},
		magic: prefix([]byte{0x04, 0x22, 0x4d, 0x18}), // the frame format's
		open:  (*Decompressors).openLz4,
	},
	{
		name: Snappy, mode: true, extensions: []string{".sz"},
		magic: prefix([]byte{0xff, 0x06, 0x00, 0x00, 's', 'N', 'a', 'P', 'p', 'Y'}),
		open:  (*Decompressors).openSnappy,
	},
	{
		name: Zlib, mode: true, extensions: []string{".zz", ".zlib"},
		magic: isZlib, lateMagic: true,
		open: (*Decompressors).openZlib,
	},
	{name: Deflate, mode: true, extensions: []string{".deflate"}, open: (*Decompressors).openDeflate},
	{name: Brotli, mode: true, slow: true, extensions: []string{".br"}, open: (*Decompressors).openBrotli},

	{name: Tar, tarExtensions: []string{".tar"}, magic: IsTar, lateMagic: true},
	{
		name: Zip, extensions: []string{".zip"},
		magic: prefix([]byte("PK\x03\x04"), []byte("PK\x05\x06")), // a local file header; an empty zip's end record
	},

	// The formats refused are rows, not a list of their own: Detect must know them by
	// extension and magic exactly as it knows a codec (a 7z's bytes framed as text would
	// be garbage records, not an error), and one row keeps a format's name, extension,
	// magic and advice together. They have no open: Open refuses them first.
	{
		name:       unsupportedPrefix + "a 7z archive",
		advice:     "repack it as .tar.zst, .tar.xz or .zip (7z x, then tar)",
		extensions: []string{".7z"}, magic: prefix([]byte{'7', 'z', 0xbc, 0xaf, 0x27, 0x1c}),
	},
	{
		name:       unsupportedPrefix + "a RAR archive",
		advice:     "repack it as .tar.zst or .zip (unrar x, then tar)",
		extensions: []string{".rar"}, magic: prefix([]byte("Rar!\x1a\x07")),
	},
	{
		// LZMA-alone has no magic: its header is properties and sizes.
		name:       unsupportedPrefix + "a legacy .lzma (LZMA-alone) stream",
		advice:     "recompress it as .xz (xz -d, then xz)",
		extensions: []string{".lzma"},
	},
	{
		name:       unsupportedPrefix + "a Unix compress (.Z, LZW) stream",
		advice:     "recompress it as .gz (uncompress, then gzip)",
		extensions: []string{".z"}, magic: prefix([]byte{0x1f, 0x9d}), // .Z: keys are compared lower-cased
	},
	{
		name:       unsupportedPrefix + "an lzip (.lz) stream",
		advice:     "recompress it as .xz or .zst (lzip -d, then xz or zstd)",
		extensions: []string{".lz"}, magic: prefix([]byte("LZIP")),
	},
	{
		name:       unsupportedPrefix + "an lzop (.lzo) stream",
		advice:     "recompress it as .lz4 or .zst (lzop -d, then lz4 or zstd)",
		extensions: []string{".lzo"}, magic: prefix([]byte{0x89, 'L', 'Z', 'O', 0x00, 0x0d, 0x0a, 0x1a, 0x0a}),
	},
	{
		// No extension: a legacy stream is named .lz4, which names the frame format.
		name:   unsupportedPrefix + "a legacy lz4 stream (lz4 -l)",
		advice: "recompress it in the lz4 frame format (lz4 -d, then lz4 without -l)",
		magic:  prefix([]byte{0x02, 0x21, 0x4c, 0x18}),
	},
}

// prefix is the magic of a format whose objects start with one of magics.
func prefix(magics ...[]byte) func(head []byte) bool {
	return func(head []byte) bool {
		for _, m := range magics {
			if bytes.HasPrefix(head, m) {
				return true
			}
		}
		return false
	}
}

// lookup returns c's row, or nil for a name no row has (Auto, or a mode no Config passes).
func lookup(c Compression) *codec {
	for i := range codecTable {
		if codecTable[i].name == c {
			return &codecTable[i]
		}
	}
	return nil
}

// byExtension returns the format the lower-cased key's extension names, the suffix that
// matched ("" for none) and whether it names a tar.
func byExtension(lower string) (comp Compression, suffix string, tar bool) {
	for i := range codecTable {
		c := &codecTable[i]
		if s := suffixIn(lower, c.extensions); s != "" {
			return c.name, s, false
		}
		if s := suffixIn(lower, c.tarExtensions); s != "" {
			return c.name, s, true
		}
	}
	return "", "", false
}

// suffixIn returns the one of suffixes that key ends with, or "".
func suffixIn(key string, suffixes []string) string {
	for _, s := range suffixes {
		if strings.HasSuffix(key, s) {
			return s
		}
	}
	return ""
}

// detectMagic names the format whose magic bytes head starts with, else None.
func detectMagic(head []byte) Compression {
	for _, late := range []bool{false, true} {
		for i := range codecTable {
			if c := &codecTable[i]; c.magic != nil && c.lateMagic == late && c.magic(head) {
				return c.name
			}
		}
	}
	return None
}

// modes is Codecs: Auto, then the formats a Config may name, in table order.
func modes() []Compression {
	m := []Compression{Auto}
	for _, c := range codecTable {
		if c.mode {
			m = append(m, c.name)
		}
	}
	return m
}

// Slow reports whether c decodes at tens of MB/s on one core (bzip2, xz, brotli), so that a
// reader decoding such an object ahead lends it part budget: it fills its window of decoded
// records long before the object being emitted is done, while its fetch, a few MB/s of
// stored bytes, leaves the part budget mostly unused. Measured on 16 MiB objects, a 4 MiB
// window held xz at 0.68x of a two-core decode loop (docs/performance.md).
func Slow(c Compression) bool {
	k := lookup(c)
	return k != nil && k.slow
}
