package s3test

import (
	"bytes"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Gzip returns members compressed as consecutive gzip members: one member per argument, as
// rotated-and-concatenated logs are.
func Gzip(members ...string) []byte {
	var buf bytes.Buffer
	for _, m := range members {
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(m))
		zw.Close() // writes to a bytes.Buffer cannot fail
	}
	return buf.Bytes()
}

// Zstd returns s compressed as one zstd frame.
func Zstd(s string) []byte {
	zw, err := zstd.NewWriter(nil)
	if err != nil {
		panic(err) // only invalid options fail
	}
	defer zw.Close()
	return zw.EncodeAll([]byte(s), nil)
}
