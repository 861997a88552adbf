package checksum

import (
	"crypto/sha1"
	"crypto/sha256"
	"hash/crc32"
	"hash/crc64"
	"testing"
)

// BenchmarkCRC measures each algorithm over 8 MiB parts, with the CRC-64/NVME candidates:
// the standard library's hash/crc64 with a table of the polynomial (byte at a time: it
// slices by 8 only for its own ISO and ECMA tables) and github.com/minio/crc64nvme
// (PCLMULQDQ, or VPCLMULQDQ with AVX-512; build with -tags noasm for its slicing-by-8).
func BenchmarkCRC(b *testing.B) {
	buf := randomBytes(8<<20, 9)
	nvme := crc64.MakeTable(polyCRC64NVME)
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, c := range []struct {
		name string
		f    func([]byte) uint64
	}{
		{"CRC32", func(p []byte) uint64 { return uint64(crc32.ChecksumIEEE(p)) }},
		{"CRC32C", func(p []byte) uint64 { return uint64(crc32.Checksum(p, castagnoli)) }},
		{"CRC64NVME/minio", func(p []byte) uint64 { return CRC64NVME.Update(0, p) }},
		{"CRC64NVME/hash-crc64", func(p []byte) uint64 { return crc64.Checksum(p, nvme) }},
		{"SHA1", func(p []byte) uint64 { s := sha1.Sum(p); return uint64(s[0]) }},
		{"SHA256", func(p []byte) uint64 { s := sha256.Sum256(p); return uint64(s[0]) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			for b.Loop() {
				c.f(buf)
			}
		})
	}
}

// BenchmarkCombine is the cost of folding one part's value into an object's.
func BenchmarkCombine(b *testing.B) {
	for _, a := range []Algorithm{CRC32C, CRC64NVME} {
		b.Run(string(a), func(b *testing.B) {
			var v uint64 = 12345
			for b.Loop() {
				v = a.Combine(v, 0x1234, 8<<20)
			}
		})
	}
}
