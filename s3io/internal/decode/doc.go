// Package decode turns one object's stored bytes into records: it sniffs the compression,
// decompresses (gzip, zstd), and frames the stream with a Framer, on a goroutine of its own
// that runs ahead of the reader emitting the records.
package decode
