// Package decode turns one object's stored bytes into records: it sniffs the compression,
// decompresses (gzip, zstd, bzip2, xz, lz4 frames, Snappy framing, zlib, raw deflate,
// brotli; tar and zip are passed through for the caller, 7z, rar, .Z, lzip, lzop, .lzma
// and legacy lz4 refused as ErrUnsupported), and frames the stream with a Framer, on a
// goroutine of its own that runs ahead of the reader emitting the records. Each format is
// one row of codecTable (codec_table.go): its name, key extensions, magic, decoder, traits.
package decode
