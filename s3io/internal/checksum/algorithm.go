package checksum

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/minio/crc64nvme"
)

// Algorithm is one of S3's checksum algorithms, named as S3 names it (x-amz-checksum-*,
// ChecksumAlgorithm in a listing).
type Algorithm string

// The algorithms S3 stores.
const (
	CRC32     Algorithm = "CRC32"
	CRC32C    Algorithm = "CRC32C"
	CRC64NVME Algorithm = "CRC64NVME"
	SHA1      Algorithm = "SHA1"
	SHA256    Algorithm = "SHA256"
)

// Polynomials, reflected, as hash/crc32 and hash/crc64 take them.
const (
	polyCRC32     = crc32.IEEE       // 0xedb88320
	polyCRC32C    = crc32.Castagnoli // 0x82f63b78
	polyCRC64NVME = crc64nvme.NVME   // 0x9a6c9329ac4bc9b5, of 0xad93d23594c93659
)

var (
	castagnoli = crc32.MakeTable(crc32.Castagnoli) // SSE4.2 / ARMv8 CRC32 instructions

	gfCRC32     = newGF2(32, polyCRC32)
	gfCRC32C    = newGF2(32, polyCRC32C)
	gfCRC64NVME = newGF2(64, polyCRC64NVME)
)

// Combinable reports whether a's values of adjacent byte ranges combine into their
// concatenation's (the CRCs); SHA-1 and SHA-256 only hash a stream whole, in order.
func (a Algorithm) Combinable() bool { return a == CRC32 || a == CRC32C || a == CRC64NVME }

// Size returns the bytes of a's value.
func (a Algorithm) Size() int {
	switch a {
	case CRC32, CRC32C:
		return 4
	case CRC64NVME:
		return 8
	case SHA1:
		return 20
	case SHA256:
		return 32
	}
	return 0
}

// Update returns crc extended with p, for a combinable algorithm (0 starts a value).
func (a Algorithm) Update(crc uint64, p []byte) uint64 {
	switch a {
	case CRC32:
		return uint64(crc32.Update(uint32(crc), crc32.IEEETable, p))
	case CRC32C:
		return uint64(crc32.Update(uint32(crc), castagnoli, p))
	case CRC64NVME:
		return crc64nvme.Update(crc, p)
	}
	panic("checksum: Update of " + string(a))
}

// Combine returns the value of A‖B from A's value, B's value and B's length in bytes.
func (a Algorithm) Combine(crcA, crcB uint64, lenB int64) uint64 {
	switch a {
	case CRC32:
		return gfCRC32.combine(crcA, crcB, lenB)
	case CRC32C:
		return gfCRC32C.combine(crcA, crcB, lenB)
	case CRC64NVME:
		return gfCRC64NVME.combine(crcA, crcB, lenB)
	}
	panic("checksum: Combine of " + string(a))
}

// Encode returns v as S3 carries it: base64 of its big-endian bytes.
func (a Algorithm) Encode(v uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return base64.StdEncoding.EncodeToString(b[8-a.Size():])
}

// Decode parses a combinable algorithm's value as S3 carries it, without the "-N" a
// composite value ends with (Stored parses both).
func (a Algorithm) Decode(s string) (uint64, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) != a.Size() || !a.Combinable() {
		return 0, fmt.Errorf("checksum: %q is not a %s value", s, a)
	}
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// ParseAlgorithm returns the algorithm S3 names s, in any case ("crc64nvme" in a
// listing's ChecksumAlgorithm, "CRC64NVME" in a header), or false.
func ParseAlgorithm(s string) (Algorithm, bool) {
	switch a := Algorithm(strings.ToUpper(s)); a {
	case CRC32, CRC32C, CRC64NVME, SHA1, SHA256:
		return a, true
	}
	return "", false
}
