// Package checksum computes the checksums S3 stores with an object — CRC32, CRC32C and
// CRC64NVME — over bytes that arrive in pieces, and combines the values of adjacent
// pieces into the value of their concatenation without touching the bytes again.
//
// An object read in ranged parts, in parallel, hashes each part on its own goroutine and
// combines the parts' values in order into the object's full-object checksum (S3's
// FULL_OBJECT type), or into the value of each part of its multipart upload (COMPOSITE,
// whose stored value is a checksum of those values). Combining a value with one of n bytes
// costs a multiplication modulo the polynomial by x^(8n), found by squaring: O(log n)
// carry-less multiplications of 32 or 64 bits, a microsecond, against the bytes'
// hashing at gigabytes per second.
//
// SHA-1 and SHA-256 do not combine: an object stored with one of those is verified by
// hashing its bytes in order as they are read (Sequential).
package checksum
