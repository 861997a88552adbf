// Package minio runs a MinIO S3 server process for tests: a second real S3 implementation
// beside internal/versitygw, and the one whose object versioning behaves like S3's. Start
// gives a test a server over a fresh single drive on a loopback port, with fixed root
// credentials, killed when the test ends (or when the test binary dies, on Linux) and whose
// output is logged when the test fails.
//
// MinIO is licensed under the GNU AGPL v3. This package only starts the separately built
// minio binary (found by FindBinary; .ci/run builds the pinned Version from the Go module
// proxy into .cache/bin) and talks S3 to it over HTTP; no MinIO code is imported or linked
// into this module.
//
// A single drive is MinIO's "xl-single" mode, which supports versioning: no erasure set of
// four drives is needed. What this Version does, checked by this package's tests and by
// internal/s3conformance, which also sets it beside versitygw:
//
//   - If-Match (also with versionId, on GET and HEAD) and Range are honoured: 412
//     PreconditionFailed, 206 with Content-Range.
//   - ListObjectVersions lists keys in order, each key's versions newest first, delete
//     markers in place among them, IsLatest on the newest entry. KeyMarker alone starts after
//     the key; KeyMarker with VersionIdMarker starts after that version. NextKeyMarker is not
//     a key: it is the last key with an opaque suffix such as "a[minio_cache:v2,return:]",
//     to be passed back verbatim and never compared with keys.
//   - An unversioned bucket's objects list as version "null"; GET and HEAD with versionId
//     "null" answer them. Puts while versioning is suspended replace the null version and
//     return no version ID.
//   - Checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256) sent with a put are verified (400
//     XAmzContentChecksumMismatch, not S3's BadDigest), stored, and returned by HEAD, by a
//     whole-object GET with ChecksumMode ENABLED, and by GetObjectAttributes. A put without a
//     checksum stores none: MinIO computes no default CRC64NVME as S3 does. Multipart
//     uploads keep COMPOSITE ("…-N") and FULL_OBJECT checksums, and per-part checksums in
//     GetObjectAttributes ObjectParts and HEAD with partNumber. ListObjectsV2 and
//     ListObjectVersions carry no ChecksumAlgorithm.
package minio
