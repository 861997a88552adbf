// Package s3io reads everything under an S3 bucket/prefix into an Apache Beam Go pipeline.
//
//	records := s3io.Read(s, s3io.Config{Bucket: "logs", Prefix: "2026/11/", Framer: "ndjson"})
//
// records is a PCollection<[]byte>: every record of every object under the prefix, exactly
// as stored. Decoding stays downstream.
//
// # What it reads
//
// Objects are plain, compressed (Compression), or tar (stored or compressed) and zip
// archives, read entry by entry in archive order. A compressed object, a tarball included, is read to its codec's last
// check. A format s3io does not read fails its object as ReasonUnsupported: it is never read
// as if it were text. A framer (Config.Framer, or your own with RegisterFramer) cuts the
// decompressed bytes into records. Config.Match, Config.StartAfter and a LastModified window
// choose the keys in the planner, so nothing left out is requested.
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
// Every GET carries If-Match with the ETag the planner listed, and every answer is checked
// against its request before a byte of it is used, so an object overwritten or deleted
// after planning fails its read and its new bytes never reach the output. A record is bytes
// of the object as stored, never a made-up one. An object that cannot be read is
// quarantined: the records it emitted stay, the rest is read on, and a Failure names it
// with a Reason. Read, ReadWithPositions, ReadAll, ReadSplits, ReadBatches and
// ReadSplitBatches then fail the job, after everything else was read; the WithFailures
// variants return the Failures and let the job succeed (ReadContinuously: see its doc).
// Credential and configuration errors (no such bucket, wrong region) fail the job at once,
// saying what to check. Transient errors are retried, and a broken response body is resumed
// from its next byte, with the same pin (Config.MaxAttempts).
//
// Delivery is at least once: a bundle a runner retries may emit records again; none is lost.
// Emitted slices are never written again, so downstream DoFns may keep them (a kept record
// keeps its 256 KiB read buffer alive).
//
// # How it works
//
// Plan lists the prefix once, on one worker, and packs the objects into SplitDescriptors
// whose IDs survive a replan that changed a little (what Except relies on); readers never
// list. A runner can checkpoint and split a descriptor between records, and large objects
// are cut and their parts read in parallel (Config.SplitTargetBytes). Each reader fetches ahead within
// a memory bound (Config.ReadBufferBytes, WorkerBufferBytes). Each worker process logs a
// line of its reads' progress every Config.ProgressInterval, with the plan's totals, which
// the planner writes into every descriptor. The design notes and
// measurements are in the repository's docs/design.md and docs/performance.md.
//
// # Directory buckets
//
// An S3 Express One Zone directory bucket (a Bucket named "base--zone-id--x-s3") lists in
// no order, pages by continuation token only, and takes only "/" as a delimiter. s3io lists
// it folder by folder (delimiter "/", ListParallelism folders at once), sorts each folder
// in memory, and hands the keys to the packer in key order: the plan, descriptors and IDs
// are the same in every run and at every ListParallelism, and cut where a general-purpose
// bucket's with the same keys are. StartAfter and a Prefix not ending in "/" are applied
// to the listing of the folder they lie in, and Match prunes folders as it does elsewhere.
// It costs one LIST per folder (and per 1,000 keys of it) where a general-purpose bucket
// needs one per 1,000 keys: a prefix of many small folders lists in more requests, and one
// large folder lists one page after another, since its pages cannot be cut apart. A
// folder is held in memory until its keys are planned, so one holding more than 1,000,000
// keys and subfolders directly fails the plan, naming it; list a deeper prefix. Requests
// carry CreateSession's session credentials, which the AWS SDK obtains and refreshes by
// itself; the S3 clients of a worker process share them, so a worker sends one
// CreateSession per bucket every few minutes. ETags of directory buckets are not MD5s;
// s3io only compares them.
//
// # Versioned buckets
//
// With Config.Versions, a versioned bucket is planned by its object versions: each key's
// latest version, or the one current at Versions.AsOf, pinned by version ID as well as ETag,
// so that what is overwritten or deleted after planning is still read as planned, and a
// plan as of an instant is the same on every run. It lists every version and delete marker
// under the prefix (versions_listed counts them); see Versions.
//
// # Runners
//
// The same pipelines run on prism, Flink and Dataflow. On a Flink cluster the Go workers are
// processes each TaskManager starts (cmd/s3io-boot), and a watch needs Flink's streaming
// and checkpointing options, which the Go SDK's runner cannot send: submit it with package
// jobserver. docs/deploy.md has the cluster's settings and failure drills.
package s3io
