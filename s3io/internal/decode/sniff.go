package decode

import (
	"bytes"
	"io"
	"strings"
)

// Compression names how an object's bytes are decompressed before framing; the values are
// those of s3io.Compression.
type Compression string

// The compression modes. Auto decides per object: by key extension first (.gz/.gzip,
// .zst/.zstd), then by the object's leading magic bytes, else none.
const (
	Auto Compression = "auto"
	None Compression = "none"
	Gzip Compression = "gzip"
	Zstd Compression = "zstd"
)

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// MagicLen is how many leading bytes of an object Detect needs to tell the compressions
// apart.
const MagicLen = 4

// Detect decides how to decompress the object key whose first bytes are head.
func Detect(mode Compression, key string, head []byte) Compression {
	if mode != Auto {
		return mode
	}
	lower := strings.ToLower(key)
	switch {
	case strings.HasSuffix(lower, ".gz"), strings.HasSuffix(lower, ".gzip"):
		return Gzip
	case strings.HasSuffix(lower, ".zst"), strings.HasSuffix(lower, ".zstd"):
		return Zstd
	case bytes.HasPrefix(head, gzipMagic):
		return Gzip
	case bytes.HasPrefix(head, zstdMagic):
		return Zstd
	}
	return None
}

// sniff reads the first bytes of src and decides how the object key is compressed under
// mode. It returns a stream of all of src's bytes, the ones read included, and whether src
// is empty. The planner's probe (Detect on the first MagicLen bytes) and the reader's
// decoding decide alike, so they cannot disagree on what an object holds.
func sniff(mode Compression, key string, src io.Reader) (comp Compression, stream io.Reader, empty bool, err error) {
	head := make([]byte, MagicLen)
	n, err := io.ReadFull(src, head)
	switch {
	case err == io.EOF:
		return None, bytes.NewReader(nil), true, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return "", nil, false, err
	}
	return Detect(mode, key, head[:n]), io.MultiReader(bytes.NewReader(head[:n]), src), false, nil
}
