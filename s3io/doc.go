// Package s3io reads everything under an S3 bucket/prefix into an Apache Beam Go pipeline.
//
//	records := s3io.Read(s, s3io.Config{Bucket: "logs", Prefix: "2026/11/", Framer: "ndjson"})
//
// records is a PCollection<[]byte>: every record of every object under the prefix, exactly
// as stored. Decoding stays downstream.
//
// # What it reads
//
// Objects are plain or compressed — gzip (every member, as concatenated .gz files, pigz and
// bgzip write), zstd (every frame), bzip2 (every stream, as pbzip2 and lbzip2 write), xz,
// the lz4 frame format, the Snappy framing format, zlib, raw deflate or brotli — chosen by
// extension, then by magic bytes, or fixed by Config.Compression. Tar (stored or inside any
// of those) and zip archives are read entry by entry, in archive order, the record index
// running on across entries (Record.Entry names a record's entry). A format s3io does not
// read (7z, rar, .Z, .lzma, lzip, a zstd dictionary, an encrypted zip entry, a decoder
// window over Config.MaxDecoderWindowBytes) fails its object as ReasonUnsupported, before a
// record is framed when its first bytes or a zip's directory tell: it is never read as if it
// were text. A compressed object, a tarball included, is read to its codec's last check. A framer cuts the decompressed
// bytes into records: "lines" (the default), "ndjson", "csv" (RFC 4180 records, quoted
// newlines included), "json-array" (the elements of a top-level JSON array, or of an object's
// first array member such as CloudTrail's Records), "u32be" (a 4-byte big-endian length
// before each record), or one of your own registered with RegisterFramer;
// Config.SkipHeaderRecords drops a header. Config.Match, Config.StartAfter and a
// LastModified window choose the keys in the planner, so nothing left out is requested.
//
// # Which transform
//
//	Read               a prefix; fail the job if any object could not be read
//	ReadWithFailures   a prefix, with the unreadable objects as a PCollection<Failure>
//	ReadWithPositions  a prefix as Records, each record with its identity
//	ReadBatches        a prefix as RecordBatches, for a next step that takes records in bulk
//	ReadAll            the s3:// prefixes of a PCollection<string>
//	Plan, PlanAll      plan only: a PCollection<SplitDescriptor> to keep or read later
//	PlanDescriptors    the same plan outside a pipeline
//	ReadSplits         read descriptors (ReadSplitBatches: in batches)
//	Except             drop the descriptors an earlier run read: re-run what changed
//	ReadContinuously   watch a prefix and read each new object version once (streaming)
//
// ReadAll, ReadSplits, ReadBatches, ReadSplitBatches and ReadContinuously have WithFailures
// variants too.
//
// # Guarantees
//
// Every GET carries If-Match with the ETag the planner listed, so an object overwritten or
// deleted after planning fails its read and its new bytes never reach the output. Every
// answer is checked against its request before a byte of it is used, for servers and
// proxies that ignore If-Match or Range: an ETag other than the planned one, an object size
// (Content-Range, Content-Length) other than the listed one, or a 416 to a range within it,
// is an overwrite; a 206 for another range or any status but 200 and 206 fails the object
// as unreadable; a 200 with the whole object to a ranged GET is read from the requested
// byte to the requested end (exact, at the cost of the bytes before the range; counted as
// range_ignored). A record is bytes of the object as stored, never a made-up one: a broken
// compressed stream, an object that ends inside a record, or a record over
// Config.MaxRecordBytes fails its object instead. An object that cannot be read is
// quarantined: the records it emitted stay, the rest is read on, and a Failure names it
// with a Reason. Read, ReadWithPositions, ReadAll, ReadSplits, ReadBatches and
// ReadSplitBatches then fail the job, after everything else was read; the WithFailures
// variants return the Failures and let the job succeed (ReadContinuously: see its doc). Credential and configuration errors fail the job at once, saying what to check;
// a Config that does not validate panics at pipeline construction, naming the field.
// Transient errors are retried, and a response body that breaks is resumed from its next
// byte, with the same pin.
//
// Delivery is at least once: a bundle a runner retries may emit records again; none is lost.
// Emitted slices are never written again, so downstream DoFns may keep them (a kept record
// keeps its 256 KiB read buffer alive). Credentials are never part of the pipeline: each
// worker resolves them with the AWS SDK's default chain.
//
// # How it works
//
// Plan lists the prefix once, on one worker, with many LIST requests in flight, and packs the
// objects into SplitDescriptors at content-defined points, so a replan of a prefix that
// changed a little keeps most IDs (what Except relies on). Readers never list. One
// splittable DoFn reads each descriptor; its restriction is a range of (member, record)
// positions, so a runner can checkpoint and split a descriptor between records, and a read
// resumed inside an uncompressed object starts with a ranged GET at its next record, one
// inside a gzip object at the inflate checkpoint before it (Config.CheckpointBytes). Large
// uncompressed objects, and large gzip, zstd and bzip2 objects made of units (BGZF,
// concatenated members, pzstd, the zstd seekable format, pbzip2), are read as parallel
// segments (Member.Codec).
// Each reader fetches ahead, many ranged
// GETs in flight within a memory bound, and decodes the next object on another goroutine
// while the current one is emitted. The design notes and measurements are in the
// repository's docs/design.md and docs/performance.md.
package s3io
