package s3io

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spate-io/beam-s3/s3io/internal/decode"
	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/listing"
	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// Compression names how object bytes are decompressed before framing.
type Compression string

// The compression modes. Auto, the default, decides per object: by key extension first,
// then by the object's leading magic bytes (brotli has none: by extension only), else none;
// it also finds tar and zip archives and refuses the formats s3io does not read
// (ReasonUnsupported). An explicit codec decodes every object with it. Every gzip member
// (concatenated files, pigz, bgzip), zstd frame and bzip2 stream (pbzip2, lbzip2) is read.
const (
	CompressionAuto    Compression = "auto"
	CompressionNone    Compression = "none"
	CompressionGzip    Compression = "gzip"
	CompressionZstd    Compression = "zstd"
	CompressionBzip2   Compression = "bzip2"
	CompressionXz      Compression = "xz"
	CompressionLz4     Compression = "lz4"     // the frame format (lz4's default)
	CompressionSnappy  Compression = "snappy"  // the Snappy framing format (.sz)
	CompressionZlib    Compression = "zlib"    // RFC 1950 (.zz, .zlib)
	CompressionDeflate Compression = "deflate" // raw RFC 1951 (.deflate)
	CompressionBrotli  Compression = "brotli"
)

// FormatByName is what mode makes of an object from its key alone, as the planner and the
// readers decide before reading a byte: a codec ("gzip", "bzip2", …), "tar", "zip",
// "unsupported" (a format s3io refuses, such as .7z), or "" when auto mode goes by the
// object's magic bytes (or reads it as it is stored). cmd/s3io-plan's compression mix uses it.
func FormatByName(mode Compression, key string) string {
	if mode == "" {
		mode = CompressionAuto
	}
	c := decode.Detect(decode.Compression(mode), key, nil)
	switch {
	case decode.IsUnsupported(c):
		return "unsupported"
	case mode == CompressionAuto && c == decode.None:
		return ""
	}
	return string(c)
}

// Defaults applied to zero-valued Config fields by WithDefaults; each field's doc states its own.
const (
	defaultFramer           = "lines"
	defaultSplitTargetBytes = 64 << 20
	defaultMaxSplitMembers  = 1024
	defaultMaxRecordBytes   = 16 << 20
	// defaultBatchRecords and defaultBatchBytes bound ReadBatches' batches: at 1024 records
	// Beam's per-element cost (~170 ns on a 2-core worker) is under 0.2 ns a record, and a
	// batch of ~200-byte records holds ~200 KiB, the size of the framer's own batches; more
	// only holds more memory per element. cmd/s3io-bench's s3io-batches variant at 128,
	// 1024 and 8192 records showed no difference beyond the run-to-run noise of a shared
	// machine (docs/performance.md, "Batches"): the read is bound elsewhere.
	defaultBatchRecords = 1024
	defaultBatchBytes   = 1 << 20
	// defaultMaxDecoderWindowBytes admits what the codecs' default levels and `zstd
	// --long=27` write, while a corrupt or hostile header cannot make a worker allocate
	// gigabytes.
	defaultMaxDecoderWindowBytes = decode.DefaultMaxWindow
	// defaultCheckpointBytes keeps a 32 KiB window per 4 MiB of gzip input (<1% of the
	// bytes), and bounds what a resume decodes again to ~2 × 4 MiB of input.
	defaultCheckpointBytes = 4 << 20
	// minCheckpointBytes keeps the window copies a small share of what is inflated.
	minCheckpointBytes    = 256 << 10
	maxDecoderWindowLimit = decode.MaxWindowLimit
	defaultMaxAttempts    = 8
	defaultReadTimeout    = time.Minute
	// defaultProgressInterval is two lines a minute per worker: often enough to follow a read,
	// rarely enough not to crowd the worker's other logs.
	defaultProgressInterval = 30 * time.Second
	// defaultReadBufferBytes, defaultPartBytes and defaultMaxRequestsInFlight were chosen by
	// measurement through a proxy that adds 30 ms per request and paces each connection to
	// 90 MB/s, as S3 does (README, "Performance"): enough parts in flight to hide the
	// latency of each and to add up many connections' bandwidth, within a memory bound.
	defaultReadBufferBytes     = 136 << 20
	defaultWorkerBufferBytes   = 48 << 20
	defaultPartBytes           = 8 << 20
	defaultMaxRequestsInFlight = 32
	// defaultListParallelism keeps 16 LIST requests in flight: S3 answers a 1,000-key page
	// in ~75–300 ms, so one request at a time lists a million keys in several minutes.
	defaultListParallelism = 16
)

// Hard limits: maxSplitMembersLimit bounds what one descriptor and its restriction take in
// the runner's memory and on the wire whatever MaxSplitMembers asks (a restriction carries
// 8 bytes of weight per member: 8 MiB at the limit), and maxRecordBytesLimit keeps a record
// buffer, and a RecordBatch (whose Ends are int32), allocatable.
const (
	maxSplitMembersLimit = 1 << 20
	maxRecordBytesLimit  = 1 << 30
)

// Config says what to read and how. Every field is a plain value: the Config travels inside
// the pipeline graph to every worker, so it must never hold a credential. Credentials come
// from the standard AWS chain on each worker (environment, shared config and profile, web
// identity, IMDS / container roles).
//
// Zero values mean defaults; Validate reports a field that cannot work, naming it.
type Config struct {
	// What to read.

	// Bucket is the S3 bucket to read (required; S3 bucket naming rules). A directory
	// bucket (S3 Express One Zone, named "base--zone-id--x-s3") is planned folder by folder
	// into the same descriptors as a general-purpose bucket with the same keys; a folder of
	// more than 1,000,000 keys directly under it fails the plan, naming it (see the package
	// documentation, "Directory buckets").
	Bucket string
	// Prefix selects the keys to read; empty reads the whole bucket.
	Prefix string
	// Match, when set, keeps only the keys that match this glob (the whole key, prefix
	// included): "*" and "?" match any run of characters and one character within a path
	// element (never "/"), "**" any run including "/", "[...]" a class of characters as in
	// path.Match (negated with "^" or "!"; never "/"), and "\" escapes the next character.
	// A key must also be under Prefix; Validate fails a Match no key under Prefix can match.
	Match string
	// StartAfter, when set, plans only the keys that sort strictly after it.
	StartAfter string
	// ModifiedAfter and ModifiedBefore, when not zero, keep only the objects whose
	// LastModified t is in [ModifiedAfter, ModifiedBefore); when both are set, ModifiedAfter
	// must be before ModifiedBefore.
	ModifiedAfter, ModifiedBefore time.Time
	// SkipArchived leaves out of the plan the objects the listing shows in an archive
	// storage class (GLACIER, DEEP_ARCHIVE) and not restored; they are counted
	// (objects_skipped_archived) and logged. By default they are planned and each becomes
	// a Failure with reason "archived", without a request, so Read fails after reading
	// everything else, naming them.
	SkipArchived bool
	// Versions, on a versioned bucket, plans one version of each key, its latest or the one
	// current at a time, and pins every read to it (see Versions). The zero value plans the
	// current objects, pinned to their ETags.
	Versions Versions

	// Where it is, and how to ask.

	// Region is the bucket's AWS region. Empty takes the region from the worker's AWS
	// configuration (AWS_REGION, profile), or "us-east-1" when Endpoint is set.
	Region string
	// Endpoint is the URL of an S3-compatible service (http or https). Empty uses AWS S3.
	// Plain http is only ever used when it is spelled out here.
	Endpoint string
	// UsePathStyle addresses the bucket as https://endpoint/bucket instead of
	// https://bucket.endpoint, as most S3-compatible servers need.
	UsePathStyle bool
	// ExpectedBucketOwner, when set, is a 12-digit AWS account ID sent with every request:
	// S3 refuses it with 403 if the bucket belongs to another account, so a typo or a
	// hijacked name cannot feed the job someone else's data.
	ExpectedBucketOwner string
	// RequesterPays acknowledges that the job's account pays for requests and transfer on a
	// requester-pays bucket (S3 refuses requests without it).
	RequesterPays bool
	// MaxAttempts bounds the attempts at one request, and separately the ranged GETs that
	// resume one object's broken or stalled bodies (default 8, 1 to 100). 5xx answers, 503
	// SlowDown, timeouts and dropped connections are retried with backoff; an object still
	// unreadable after that is quarantined as "unreadable".
	MaxAttempts int
	// ReadTimeout is how long a GET may wait for response headers, or a body for its next
	// bytes, before the attempt is abandoned and retried (default 1 minute).
	ReadTimeout time.Duration
	// MaxRequestsPerSecond caps the requests (every attempt, LIST and GET) one worker
	// process sends (0, the default: no cap), for prefixes whose request rate must stay
	// under S3's per-prefix limits. 503 SlowDown answers slow the worker down in any case.
	MaxRequestsPerSecond float64
	// VerifyChecksums checks every byte of each object read whole against the checksum S3
	// stores with it — CRC32, CRC32C or CRC64NVME, of the full object or composite per
	// upload part — while still reading it in parallel ranged parts: each part is hashed as
	// it arrives and the parts' values are combined in order. A mismatch fails the object
	// as corrupt, naming the algorithm and both values. It costs one GetObjectAttributes
	// per object (a HeadObject where a server lacks it; on a server that lists no parts,
	// also one per part of a composite object), counted in checksum_lookups, and the CPU of
	// hashing (docs/performance.md, "Verifying checksums"). Objects with no stored checksum
	// are read and counted (checksums_missing). SHA-1 and SHA-256 checksums, which do not
	// combine across parts, are hashed in order by the reader as it takes the parts (one
	// core's ~1.8 GB/s). So that every object ends verified, each is read whole by one
	// reader: the planner cuts no segments and the runner's splits fall between objects (a
	// checkpoint waits for the object being read to end). Descriptors planned without it (a
	// stored plan) may hold segments, which are read unverified (checksums_unchecked;
	// docs/design.md, "Stored checksums"). Off by default: reads are pinned to the planned
	// ETag already.
	VerifyChecksums bool

	// How bytes become records.

	// Framer names the registered RecordFramer that cuts decompressed bytes into records:
	// "lines" (default; LF-terminated, one CR before the LF dropped), "ndjson" (lines
	// without blank ones), "u32be" (4-byte big-endian length prefixes), "csv" (RFC 4180
	// records, raw: quoted fields may hold commas, "" and newlines; empty lines skipped),
	// "json-array" (each element of a top-level JSON array, or of a top-level object's first
	// array member such as CloudTrail's "Records", as raw JSON; malformed JSON is corrupt),
	// or one added with RegisterFramer. Only lines and ndjson let a large object be cut and
	// read in parallel; json-array's residuals re-frame their member from its start.
	Framer string
	// Compression is CompressionAuto (default), CompressionNone (the stored bytes are the
	// records) or one codec for every object.
	Compression Compression
	// SkipHeaderRecords drops the first records of every object, and of every entry of an
	// archive (a CSV header: 1), before they are numbered; counted in headers_skipped.
	SkipHeaderRecords int
	// MaxRecordBytes bounds one record (default 16 MiB, at most 1 GiB). A longer record
	// fails its object instead of growing memory without bound.
	MaxRecordBytes int
	// MaxDecoderWindowBytes is the largest window any decoder may allocate for one object
	// (zstd, xz, brotli; default 128 MiB, at most 2 GiB). A stream asking for more fails
	// its object as "unsupported", naming the window it asks for: `zstd --long=28` and up
	// write such frames. Each object being decoded may hold one window.
	MaxDecoderWindowBytes int64
	// CheckpointBytes is how many stored bytes of a gzip object a reader inflates between
	// two inflate checkpoints (default 4 MiB; -1 keeps none). A split, checkpoint or retry
	// inside a gzip object resumes at the checkpoint before its first record, with a ranged
	// GET there, instead of decoding the object again from its first byte; keeping them
	// costs ~5 % of gzip decoding throughput (docs/design.md, "Inflate checkpoints").
	CheckpointBytes int64

	// How the plan is cut.

	// ListParallelism is how many LIST requests the planner keeps in flight (default 16;
	// 1 lists sequentially; at most 256). The plan, descriptors and IDs are the same whatever
	// it is.
	ListParallelism int
	// SplitTargetBytes is the mean stored size of a split descriptor (default 64 MiB). A
	// descriptor of several objects holds at least about SplitTargetBytes/e of them and
	// never more than 4×SplitTargetBytes, cut at content-defined points so that a replan
	// keeps its IDs (docs/design.md, "Stable split boundaries"); an object over that bound
	// gets a descriptor of its own. An object larger than SplitTargetBytes is read in
	// segments of about this size or less where it can be: an uncompressed one framed by
	// lines or ndjson, and a gzip, zstd or bzip2 one made of independent units, cut at unit
	// starts (docs/design.md, "Segments of compressed objects"); others stay whole.
	SplitTargetBytes int64
	// MaxSplitMembers bounds the objects in one descriptor (default 1024, at most 2^20),
	// which bounds the size of a descriptor and of its restriction whatever the object
	// sizes. Descriptors of many tiny objects hold about half of it on average.
	MaxSplitMembers int
	// InitialSplitBytes is the weight above which a descriptor's restriction is cut at
	// member boundaries before reading, into pieces of about equal weight, about this much
	// each (default SplitTargetBytes: descriptors above their mean are cut). Runners that
	// split dynamically (prism, Dataflow) balance on their own; on Flink, which does not, a
	// smaller value lets the members of one descriptor be read in parallel. Smaller
	// restrictions cost more where a runner reads them one after another (prism): each
	// begins with one request's latency.
	InitialSplitBytes int64

	// Batches (ReadBatches and ReadSplitBatches; Read and ReadWithPositions ignore them).

	// BatchRecords and BatchBytes bound a batch: at most BatchRecords records (default
	// 1024) and at most BatchBytes bytes of them (default 1 MiB, at most 1 GiB), whichever
	// is reached first; a record longer than BatchBytes is a batch of its own. Batches that
	// large make Beam's per-element cost negligible per record; larger ones only hold more
	// memory per element.
	BatchRecords int
	BatchBytes   int

	// Memory and requests in flight. How a reader moves within these bounds is in
	// docs/design.md, "Fetching ahead".

	// ReadBufferBytes bounds the bytes one reader holds ahead of what it emits (default
	// 136 MiB, at least 8 MiB + 64 KiB): parts fetched and not yet decoded, and up to 4 MiB
	// of decoded records for each of the two objects being decoded at a time. It is a bound,
	// not what a reader takes, which follows the network within it and WorkerBufferBytes.
	ReadBufferBytes int64
	// WorkerBufferBytes caps the fetched parts of all the readers of one worker process
	// together (default 48 MiB, at least 64 KiB); a runner runs a reader per bundle thread.
	// The default keeps a two-core worker under 256 MiB of resident memory; it is also what
	// bounds an uncompressed read through a network of S3's latency, where a larger cap
	// reads faster for more memory (docs/performance.md, "Reading through a shaped
	// network").
	WorkerBufferBytes int64
	// PartBytes bounds the ranged GETs that read an object (default 8 MiB, as AWS advises,
	// or ReadBufferBytes less 8 MiB if that is less): a large object is read as several
	// parts in flight, a small one in one GET. Parts are smaller while a reader starts, or
	// while its budget is small (docs/design.md, "Fetching ahead").
	PartBytes int64
	// MaxRequestsInFlight bounds one reader's concurrent GETs (default 32, at most 1024):
	// parts of the current object and of the objects after it, started ahead of their
	// records.
	MaxRequestsInFlight int

	// What the workers say.

	// ProgressInterval is how often each worker process logs a line of what its reads did,
	// through Beam's log package, so that it shows with the worker's logs on every runner:
	// objects done, bytes fetched and decompressed, records, failures, rates, and the plan's
	// totals and an ETA where they are known (docs/design.md, "Progress lines"). A worker
	// also logs a line when its reads end. Default 30 seconds; negative logs no lines. The
	// lines are the process's: with reads of several Configs, the shortest interval of
	// those asking for lines applies.
	ProgressInterval time.Duration
}

// WithDefaults returns c with every zero-valued field replaced by its default, as the
// transforms read it: what a job will actually use, for logging it or for estimates such as
// cmd/s3io-plan's. Each field's doc names its default.
func (c Config) WithDefaults() Config {
	c.Framer = cmp.Or(c.Framer, defaultFramer)
	c.Compression = cmp.Or(c.Compression, CompressionAuto)
	c.SplitTargetBytes = cmp.Or(c.SplitTargetBytes, defaultSplitTargetBytes)
	c.InitialSplitBytes = cmp.Or(c.InitialSplitBytes, c.SplitTargetBytes)
	c.MaxSplitMembers = cmp.Or(c.MaxSplitMembers, defaultMaxSplitMembers)
	c.MaxRecordBytes = cmp.Or(c.MaxRecordBytes, defaultMaxRecordBytes)
	c.BatchRecords = cmp.Or(c.BatchRecords, defaultBatchRecords)
	c.BatchBytes = cmp.Or(c.BatchBytes, defaultBatchBytes)
	c.MaxDecoderWindowBytes = cmp.Or(c.MaxDecoderWindowBytes, defaultMaxDecoderWindowBytes)
	c.CheckpointBytes = cmp.Or(c.CheckpointBytes, defaultCheckpointBytes)
	c.MaxAttempts = cmp.Or(c.MaxAttempts, defaultMaxAttempts)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, defaultReadTimeout)
	c.ReadBufferBytes = cmp.Or(c.ReadBufferBytes, defaultReadBufferBytes)
	c.WorkerBufferBytes = cmp.Or(c.WorkerBufferBytes, defaultWorkerBufferBytes)
	// A small ReadBufferBytes bounds the default part too, so that it needs no PartBytes.
	c.PartBytes = cmp.Or(c.PartBytes, min(defaultPartBytes, max(c.ReadBufferBytes-decodeWindows, fetch.MinPartClass)))
	c.MaxRequestsInFlight = cmp.Or(c.MaxRequestsInFlight, defaultMaxRequestsInFlight)
	c.ListParallelism = cmp.Or(c.ListParallelism, defaultListParallelism)
	c.ProgressInterval = cmp.Or(c.ProgressInterval, defaultProgressInterval)
	return c
}

// Validate reports the first field of c that cannot work, with what to do about it.
// Read, Plan and ReadSplits call it at pipeline construction and panic with its error, as
// Beam transforms do, so a bad Config never reaches a worker.
func (c Config) Validate() error {
	if err := validateBucketName(c.Bucket); err != nil {
		return err
	}
	if err := c.validateSelection(c.Prefix); err != nil {
		return err
	}
	return c.validateReading()
}

// validateReading checks every field but the bucket and the prefix, which ReadSplits and
// ReadAll take from their input.
func (c Config) validateReading() error {
	c = c.WithDefaults()
	for _, check := range []func() error{c.validateConnection, c.validateFormat, c.validatePlanning, c.validateBatches, c.validateMemory} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// validateConnection checks where and how requests are made: the endpoint, retries, timeouts, the request rate and the bucket owner.
func (c Config) validateConnection() error {
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return configErrorf("Endpoint", "s3io: Config.Endpoint %q is not an http(s) URL such as https://s3.example.com or http://127.0.0.1:9000", c.Endpoint)
		}
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 100 {
		return configErrorf("MaxAttempts", "s3io: Config.MaxAttempts is %d; it must be between 1 and 100 (0 means the default, %d)", c.MaxAttempts, defaultMaxAttempts)
	}
	if c.ReadTimeout < 0 {
		return configErrorf("ReadTimeout", "s3io: Config.ReadTimeout is %v; it must be positive (0 means the default, %v)", c.ReadTimeout, defaultReadTimeout)
	}
	if c.MaxRequestsPerSecond < 0 {
		return configErrorf("MaxRequestsPerSecond", "s3io: Config.MaxRequestsPerSecond is %v; it must be positive, or 0 for no cap", c.MaxRequestsPerSecond)
	}
	if o := c.ExpectedBucketOwner; o != "" && (len(o) != 12 || strings.Trim(o, "0123456789") != "") {
		return configErrorf("ExpectedBucketOwner", "s3io: Config.ExpectedBucketOwner %q is not a 12-digit AWS account ID", o)
	}
	return nil
}

// validateFormat checks how bytes become records: the framer, the compression, the decoder window, inflate checkpoints, header records and the record bound.
func (c Config) validateFormat() error {
	if _, ok := lookupFramer(c.Framer); !ok {
		return configErrorf("Framer", "s3io: Config.Framer %q is not registered; use one of %s, or call s3io.RegisterFramer in an init function", c.Framer, strings.Join(framerNames(), ", "))
	}
	if !slices.Contains(decode.Codecs, decode.Compression(c.Compression)) {
		names := make([]string, len(decode.Codecs))
		for i, m := range decode.Codecs {
			names[i] = fmt.Sprintf("%q", m)
		}
		return configErrorf("Compression", "s3io: Config.Compression %q is unknown; use one of %s", c.Compression, strings.Join(names, ", "))
	}
	if c.MaxDecoderWindowBytes < 0 || c.MaxDecoderWindowBytes > maxDecoderWindowLimit {
		return configErrorf("MaxDecoderWindowBytes", "s3io: Config.MaxDecoderWindowBytes is %d; it must be between 1 and %d (0 means the default, %d)", c.MaxDecoderWindowBytes, int64(maxDecoderWindowLimit), defaultMaxDecoderWindowBytes)
	}
	if c.CheckpointBytes < -1 || c.CheckpointBytes > 0 && c.CheckpointBytes < minCheckpointBytes {
		return configErrorf("CheckpointBytes", "s3io: Config.CheckpointBytes is %d; it must be at least %d, or -1 to keep no inflate checkpoints (0 means the default, %d)", c.CheckpointBytes, minCheckpointBytes, defaultCheckpointBytes)
	}
	if c.SkipHeaderRecords < 0 {
		return configErrorf("SkipHeaderRecords", "s3io: Config.SkipHeaderRecords is %d; it must not be negative", c.SkipHeaderRecords)
	}
	if c.MaxRecordBytes < 0 || c.MaxRecordBytes > maxRecordBytesLimit {
		return configErrorf("MaxRecordBytes", "s3io: Config.MaxRecordBytes is %d; it must be between 1 and %d (0 means the default, %d)", c.MaxRecordBytes, maxRecordBytesLimit, defaultMaxRecordBytes)
	}
	return nil
}

// validatePlanning checks how the prefix is listed and packed: split sizes, members per split, listing parallelism, Match and the modification window.
func (c Config) validatePlanning() error {
	if c.SplitTargetBytes < 0 {
		return configErrorf("SplitTargetBytes", "s3io: Config.SplitTargetBytes is %d; it must be positive (0 means the default, %d)", c.SplitTargetBytes, defaultSplitTargetBytes)
	}
	if c.InitialSplitBytes < 0 {
		return configErrorf("InitialSplitBytes", "s3io: Config.InitialSplitBytes is %d; it must be positive (0 means the default, SplitTargetBytes)", c.InitialSplitBytes)
	}
	if c.MaxSplitMembers < 0 || c.MaxSplitMembers > maxSplitMembersLimit {
		return configErrorf("MaxSplitMembers", "s3io: Config.MaxSplitMembers is %d; it must be between 1 and %d (0 means the default, %d)", c.MaxSplitMembers, maxSplitMembersLimit, defaultMaxSplitMembers)
	}
	if c.ListParallelism < 0 || c.ListParallelism > 256 {
		return configErrorf("ListParallelism", "s3io: Config.ListParallelism is %d; it must be between 1 and 256 (0 means the default, %d)", c.ListParallelism, defaultListParallelism)
	}
	if _, err := c.glob(); err != nil {
		return err
	}
	if err := c.Versions.validate(time.Now()); err != nil {
		return err
	}
	if !c.ModifiedAfter.IsZero() && !c.ModifiedBefore.IsZero() && !c.ModifiedAfter.Before(c.ModifiedBefore) {
		return configErrorf("ModifiedAfter", "s3io: Config.ModifiedAfter (%v) is not before Config.ModifiedBefore (%v): no object can be in that window", c.ModifiedAfter, c.ModifiedBefore)
	}
	return nil
}

// validateBatches checks the batches ReadBatches emits.
func (c Config) validateBatches() error {
	if c.BatchRecords < 0 {
		return configErrorf("BatchRecords", "s3io: Config.BatchRecords is %d; it must be positive (0 means the default, %d)", c.BatchRecords, defaultBatchRecords)
	}
	if c.BatchBytes < 0 || c.BatchBytes > maxRecordBytesLimit {
		return configErrorf("BatchBytes", "s3io: Config.BatchBytes is %d; it must be between 1 and %d (0 means the default, %d)", c.BatchBytes, maxRecordBytesLimit, defaultBatchBytes)
	}
	return nil
}

// validateMemory checks a reader's memory and requests in flight; c has its defaults, so
// PartBytes is checked against the ReadBufferBytes the read will have.
func (c Config) validateMemory() error {
	if c.ReadBufferBytes != 0 && c.ReadBufferBytes < minReadBufferBytes {
		return configErrorf("ReadBufferBytes", "s3io: Config.ReadBufferBytes is %d; it must be at least %d, room for the decoding windows and one part (0 means the default, %d)", c.ReadBufferBytes, minReadBufferBytes, defaultReadBufferBytes)
	}
	if c.WorkerBufferBytes < 0 || c.WorkerBufferBytes > 0 && c.WorkerBufferBytes < fetch.MinPartClass {
		return configErrorf("WorkerBufferBytes", "s3io: Config.WorkerBufferBytes is %d; it must be at least %d, room for one part (0 means the default, %d)", c.WorkerBufferBytes, fetch.MinPartClass, defaultWorkerBufferBytes)
	}
	if c.PartBytes < 0 || c.PartBytes > c.ReadBufferBytes-decodeWindows {
		return configErrorf("PartBytes", "s3io: Config.PartBytes is %d; it must be positive and at most Config.ReadBufferBytes less %d for decoding (0 means the default, %d)", c.PartBytes, decodeWindows, defaultPartBytes)
	}
	if c.MaxRequestsInFlight < 0 || c.MaxRequestsInFlight > 1024 {
		return configErrorf("MaxRequestsInFlight", "s3io: Config.MaxRequestsInFlight is %d; it must be between 1 and 1024 (0 means the default, %d)", c.MaxRequestsInFlight, defaultMaxRequestsInFlight)
	}
	return nil
}

// glob compiles Config.Match; nil when it is empty.
func (c Config) glob() (*listing.Glob, error) {
	g, err := listing.CompileGlob(c.Match)
	if err != nil {
		return nil, configErrorf("Match", "s3io: Config.Match %w", err)
	}
	return g, nil
}

// validateSelection checks that Match can select keys under prefix, and returns the
// prefix the listing asks for.
func (c Config) validateSelection(prefix string) error {
	_, err := c.listPrefix(prefix)
	return err
}

// listPrefix is the longer of prefix and Match's literal prefix: every key both select
// starts with it. When neither is a prefix of the other, no key can be selected, which is
// a mistake worth failing on.
func (c Config) listPrefix(prefix string) (string, error) {
	g, err := c.glob()
	if err != nil || g == nil {
		return prefix, err
	}
	lit := g.LiteralPrefix()
	switch {
	case strings.HasPrefix(lit, prefix):
		return lit, nil
	case strings.HasPrefix(prefix, lit):
		return prefix, nil
	}
	return "", configErrorf("Match", "s3io: Config.Match %q selects only keys under %q, and the prefix %q has none of them: nothing could be read", c.Match, lit, prefix)
}

// A reader's memory: objects are decoded decodeDepth at a time beyond the one being emitted,
// each into a window of at most decodeWindowBytes of framed records, so that decompression
// runs on other cores than the one emitting. Those windows come out of ReadBufferBytes;
// the rest (fetchBudget) bounds the fetched parts, and must hold at least a small one.
const (
	decodeDepth        = 1
	decodeWindowBytes  = 4 << 20
	decodeWindows      = (decodeDepth + 1) * decodeWindowBytes
	minReadBufferBytes = decodeWindows + 64<<10
)

// fetchBudget is the most a reader may hold in fetched parts.
func (c *Config) fetchBudget() int64 { return c.ReadBufferBytes - decodeWindows }

// initialFetchBytes is where a reader's fetch budget starts, and minFetchBytes the least it
// shrinks to: 32 MiB of 2 MiB parts hides S3's latency at ~600 MB/s (real-s3.md).
const (
	initialFetchBytes = 32 << 20
	minFetchBytes     = 8 << 20
)

// newBudget returns a reader's share of pool, as c bounds it.
func (c *Config) newBudget(pool *fetch.Pool) *fetch.Budget {
	hi := min(c.fetchBudget(), c.WorkerBufferBytes)
	return fetch.NewBudget(pool, initialFetchBytes, minFetchBytes, hi)
}

// decoding returns how many objects a reader decodes ahead of the one it emits, and the
// bytes of framed records each may hold.
func (c *Config) decoding() (depth, windowBytes int) { return decodeDepth, decodeWindowBytes }

// memberReader is what a reader instance reads members with, as c says: framed by
// newFramer, a slow decoder borrowing from budget, slabs recycled when copies is set.
func (c *Config) memberReader(newFramer func() RecordFramer, budget *fetch.Budget, copies bool) *member.Reader {
	_, window := c.decoding()
	return &member.Reader{
		NewFramer: func() decode.Framer { return newFramer() }, Compression: string(c.Compression),
		MaxRecordBytes: c.MaxRecordBytes, SkipHeaderRecords: c.SkipHeaderRecords,
		CheckpointBytes: c.CheckpointBytes, MaxDecoderWindowBytes: c.MaxDecoderWindowBytes,
		WindowBytes: window, Budget: budget, BudgetBytes: c.fetchBudget(), RecycleSlabs: copies,
	}
}

// fetchSettings are what c says of the fetch layer's reads.
func (c *Config) fetchSettings() fetch.Settings {
	return fetch.Settings{ReadTimeout: c.ReadTimeout, MaxAttempts: c.MaxAttempts, VerifyChecksums: c.VerifyChecksums,
		PartBytes: c.PartBytes, MaxRequestsInFlight: c.MaxRequestsInFlight}
}

// validateBucketName applies the general-purpose bucket naming rules, so that a typo fails
// at construction instead of as a signature or DNS error on a worker.
func validateBucketName(b string) error {
	bad := func(why string) error {
		return configErrorf("Bucket", "s3io: Config.Bucket %q is not a valid S3 bucket name: %s", b, why)
	}
	if b == "" {
		return configErrorf("Bucket", "s3io: Config.Bucket is empty; set it to the bucket to read (the part after s3:// and before the first /)")
	}
	if len(b) < 3 || len(b) > 63 {
		return bad("it must be 3 to 63 characters long")
	}
	for i := 0; i < len(b); i++ {
		ch := b[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || ch == '.' || ch == '-') {
			return bad("it may contain only lowercase letters, digits, dots and hyphens")
		}
	}
	if !isAlnum(b[0]) || !isAlnum(b[len(b)-1]) {
		return bad("it must begin and end with a letter or digit")
	}
	if strings.Contains(b, "..") {
		return bad("it must not contain two adjacent dots")
	}
	if net.ParseIP(b) != nil {
		return bad("it must not be formatted as an IP address")
	}
	return nil
}

func isAlnum(ch byte) bool { return ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' }
