// Package s3conformance holds tests, and only tests, that run the same S3 requests against
// both real servers the repository tests with, MinIO (internal/minio) and versitygw with a
// versioning directory (internal/versitygw), and assert how each answers where they differ
// from S3 or from each other: version listings and their paging, reads and deletes by
// version, null versions, conditional and ranged reads, and checksums. A server upgrade that
// changes an answer fails here first, with the request that changed.
//
// Version listings (ListObjectVersions):
//
//   - Order. S3 and MinIO: keys in order, each key's versions and delete markers together,
//     newest first. versitygw writes every delete marker of the page first, then the
//     versions; the SDK splits the two lists anyway, so a client that needs S3's order must
//     merge them per key itself (LastModified of versitygw's versions has whole seconds).
//   - IsLatest marks each key's newest entry on both, a delete marker included.
//   - Markers. S3 and MinIO resume after the whole key for KeyMarker alone and after the
//     version for KeyMarker with VersionIdMarker. versitygw includes the marker key, and
//     the marker version when it is the key's latest; paging with its own Next markers
//     repeats entries, and with MaxKeys 1 never gets past the first key. MinIO's
//     NextKeyMarker is the last key plus an opaque cache suffix, not a key.
//   - Unversioned bucket: GetBucketVersioning has no status; each object is listed once, as
//     version "null", IsLatest. Suspended: puts answer no version ID and replace the null
//     version, older versions stay; a delete leaves a null delete marker (versitygw says so,
//     MinIO answers no version ID and no delete-marker header).
//
// Reads and deletes by version (both servers alike unless said):
//
//   - GET and HEAD with versionId answer that version; If-Match is checked against that
//     version's ETag (412 PreconditionFailed otherwise) and Range gives 206 with
//     Content-Range. MinIO also sends x-amz-version-id on 412 and on delete-marker answers;
//     versitygw does not.
//   - A permanently deleted version (DeleteObject with VersionId, which answers that
//     VersionId and no delete marker): GET 404 NoSuchVersion, also with If-Match; HEAD 404.
//     Deleting it again: MinIO 204 as S3, versitygw 400 InvalidArgument. A well-formed
//     unknown version ID: 404 NoSuchVersion; a malformed one: 400 InvalidArgument.
//   - A key whose latest is a delete marker: GET 404 NoSuchKey with x-amz-delete-marker
//     (HEAD: MinIO sends the header, versitygw not); the marker by versionId: 405
//     MethodNotAllowed.
//   - Version "null" in an unversioned bucket: GET answers the object on both; HEAD answers
//     it on MinIO, 404 on versitygw. versitygw answers x-amz-version-id "null" when asked
//     for version null, MinIO no version header.
//
// Checksums (CRC32, CRC32C, CRC64NVME, SHA1, SHA256):
//
//   - A put's checksum is verified (wrong: 400 BadDigest on versitygw as S3,
//     XAmzContentChecksumMismatch on MinIO), stored, and answered as S3 does: by HEAD and by
//     a whole-object GET with ChecksumMode ENABLED, type FULL_OBJECT; not without
//     ChecksumMode, not for a ranged GET; and by GetObjectAttributes.
//   - A put without a checksum: versitygw computes and stores CRC64NVME, as S3 does; MinIO
//     stores none.
//   - Multipart uploads: both keep COMPOSITE checksums (CRC32, CRC32C, SHA256: the checksum
//     of the parts' checksums, "…-2") and FULL_OBJECT ones (CRC32, CRC32C, CRC64NVME: the
//     CRC of the whole object), answered by HEAD and GET with ChecksumMode. MinIO's
//     CompleteMultipartUpload answer leaves out ChecksumType. GetObjectAttributes: MinIO
//     gives the composite value without "-2" and each part's checksum (also answered to HEAD
//     with partNumber), as S3 does; versitygw keeps the "-2" and gives neither.
//   - ListObjectsV2 and ListObjectVersions carry ChecksumAlgorithm on versitygw, not on MinIO.
package s3conformance
