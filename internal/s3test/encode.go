package s3test

import (
	"bytes"
	"encoding/binary"

	"github.com/cespare/xxhash/v2"
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

// ZstdSeekable returns data in the zstd seekable format (contrib/seekable_format in the zstd
// repository): one frame per frameSize bytes of data, each with its content checksum, then a
// skippable frame holding the seek table (each frame's compressed and decompressed size and,
// with checksums, the low 32 bits of its XXH64). No Debian tool writes the format; this is
// written from the format's specification, not by the reader's code.
func ZstdSeekable(data []byte, frameSize int, checksums bool) []byte {
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		panic(err)
	}
	defer zw.Close()
	var out, table []byte
	frames := 0
	for off := 0; off < len(data); off += frameSize {
		chunk := data[off:min(off+frameSize, len(data))]
		start := len(out)
		out = zw.EncodeAll(chunk, out)
		table = binary.LittleEndian.AppendUint32(table, uint32(len(out)-start))
		table = binary.LittleEndian.AppendUint32(table, uint32(len(chunk)))
		if checksums {
			table = binary.LittleEndian.AppendUint32(table, uint32(xxhash.Sum64(chunk)))
		}
		frames++
	}
	descriptor := byte(0)
	if checksums {
		descriptor = 0x80
	}
	table = binary.LittleEndian.AppendUint32(table, uint32(frames))
	table = append(table, descriptor)
	table = binary.LittleEndian.AppendUint32(table, 0x8F92EAB1)
	out = binary.LittleEndian.AppendUint32(out, 0x184D2A5E)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(table)))
	return append(out, table...)
}
