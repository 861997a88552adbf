// Package s3io reads everything under an S3 bucket/prefix into an Apache Beam Go pipeline.
//
//	records := s3io.Read(s, s3io.Config{Bucket: "logs", Prefix: "2026/11/", Framer: "ndjson"})
//
// records is a PCollection<[]byte>: every record of every object under the prefix, exactly
// as stored, after gzip or zstd decompression, cut by a framer. Decoding stays downstream.
//
// # Shape
//
//   - Plan once. Plan lists the prefix on a worker with Config.ListParallelism LIST
//     requests in flight (the keyspace cut at folders and at points spread over the keys'
//     alphabet), hands the keys to the packer in key order and packs objects into
//     SplitDescriptors of Config.SplitTargetBytes on average (64 MiB by default), emitted
//     as their key range is listed, so planner memory does not grow with the prefix. A
//     descriptor carries each member's key, size and ETag, and an ID that digests them
//     (SplitID): replanning an unchanged prefix yields the same IDs, whatever the
//     parallelism. Readers never list.
//   - Stable boundaries. Descriptors are cut after anchor keys chosen by a hash of the key,
//     not where the previous descriptor filled up, so one object added, removed or
//     overwritten changes the IDs of its descriptor and at most one neighbour. Except
//     drops the descriptors a previous run read, so a re-run reads only what is new,
//     changed or failed; ReadContinuously lists a prefix every interval and reads each
//     object version once, remembering what it read in Beam state.
//   - Choose what to read. Config.Match (a glob whose literal prefix is all that is
//     listed), Config.StartAfter and the LastModified window select keys in the planner.
//     Archived objects (GLACIER, DEEP_ARCHIVE, not restored) become Failures with reason
//     "archived" without a request, or are left out with Config.SkipArchived. ReadAll and
//     PlanAll take s3:// URLs from a PCollection; PlanDescriptors plans outside a pipeline.
//   - One splittable DoFn. ReadSplits reads descriptors; each one's restriction is a range
//     of (member ordinal, record index) positions weighed in stored bytes, so the runner can
//     checkpoint a descriptor and split it between records. Splits prefer object
//     boundaries; a residual that starts inside an object carries a resume hint, so an
//     uncompressed object resumes with a ranged GET at the next record instead of at byte 0.
//     Read is Plan, a Reshuffle and ReadSplits.
//   - Segments. An uncompressed object larger than SplitTargetBytes, framed by lines or
//     ndjson, is planned as segments that own the records starting in their byte range, and
//     are read in parallel.
//   - Pinned reads. Every GET carries If-Match with the planned ETag: an object overwritten
//     after planning fails with PreconditionFailed, a deleted one with NoSuchKey, and neither
//     can splice new bytes into the output. Objects are never buffered whole.
//   - Many requests in flight. Each reader fetches ahead: the members of its restriction are
//     cut into ranged GETs of Config.PartBytes, up to Config.MaxRequestsInFlight at once
//     within Config.ReadBufferBytes, handed to each object's decoder in order; the next
//     object is decoded on another goroutine while the current one is emitted. A split
//     cancels what it takes away. Throttling answers slow the worker through the AWS SDK's
//     adaptive retry mode; Config.MaxRequestsPerSecond caps its rate outright.
//   - Framed records. A RecordFramer ("lines", "ndjson", "u32be" or one registered with
//     RegisterFramer) cuts the decompressed stream; a record longer than
//     Config.MaxRecordBytes fails its object instead of exhausting memory.
//
// # Guarantees
//
// Records are delivered at least once: a bundle the runner retries may emit records again;
// none is lost. An object that cannot be read — deleted or overwritten since planning,
// corrupt, a record over MaxRecordBytes, unreadable within MaxAttempts, archived — is quarantined: its
// emitted records stay, the rest of the split is read on, and a Failure reports it. Read
// then fails the job after everything else was read; ReadWithFailures returns the Failures
// as a dead-letter PCollection instead. Credential and configuration errors fail the job at
// once. ReadWithPositions gives each record an identity that does not depend on how
// the work was split. A response body that breaks mid-stream is resumed with a pinned
// ranged GET from the byte where it broke. Errors carry an *ObjectError naming the bucket,
// key, ETag and record position. Credentials are never part of the pipeline: each worker
// resolves them with the AWS SDK's default chain.
//
// # Runners
//
// The DoFns hold only a Config, serialized as JSON; clients, framers and decoders are built
// in Setup on the worker. Prism and Dataflow split descriptors dynamically through the
// restriction tracker; Flink does not split splittable DoFns dynamically, so there the
// planner's descriptors and segments, and the initial splits of Config.InitialSplitBytes,
// are the parallelism.
package s3io
