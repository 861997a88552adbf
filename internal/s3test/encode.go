package s3test

import (
	"bytes"
	"encoding/binary"
	"io"

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
// repository), as WriteZstdSeekable writes it.
func ZstdSeekable(data []byte, frameSize int, checksums bool) []byte {
	var out bytes.Buffer
	if err := WriteZstdSeekable(&out, bytes.NewReader(data), frameSize, checksums); err != nil {
		panic(err) // a bytes.Buffer and a bytes.Reader do not fail
	}
	return out.Bytes()
}

// WriteZstdSeekable writes what src holds to dst in the zstd seekable format: one frame per
// frameSize bytes, each with its content checksum, then a skippable frame holding the seek
// table (each frame's compressed and decompressed size and, with checksums, the low 32 bits
// of its XXH64). No Debian tool writes the format; this is written from the format's
// specification, not by the reader's code.
func WriteZstdSeekable(dst io.Writer, src io.Reader, frameSize int, checksums bool) error {
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true))
	if err != nil {
		return err
	}
	defer zw.Close()
	chunk := make([]byte, frameSize)
	var frame, table []byte
	frames := 0
	for {
		n, err := io.ReadFull(src, chunk)
		if n > 0 {
			frame = zw.EncodeAll(chunk[:n], frame[:0])
			if _, err := dst.Write(frame); err != nil {
				return err
			}
			table = binary.LittleEndian.AppendUint32(table, uint32(len(frame)))
			table = binary.LittleEndian.AppendUint32(table, uint32(n))
			if checksums {
				table = binary.LittleEndian.AppendUint32(table, uint32(xxhash.Sum64(chunk[:n])))
			}
			frames++
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	descriptor := byte(0)
	if checksums {
		descriptor = 0x80
	}
	table = binary.LittleEndian.AppendUint32(table, uint32(frames))
	table = append(table, descriptor)
	table = binary.LittleEndian.AppendUint32(table, 0x8F92EAB1)
	head := binary.LittleEndian.AppendUint32(nil, 0x184D2A5E)
	head = binary.LittleEndian.AppendUint32(head, uint32(len(table)))
	_, err = dst.Write(append(head, table...))
	return err
}
