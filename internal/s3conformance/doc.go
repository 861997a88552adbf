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
package s3conformance
