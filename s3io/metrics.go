package s3io

import "github.com/apache/beam/sdks/v2/go/pkg/beam"

// MetricsNamespace is the namespace of every s3io counter. The counters are:
//
//	keys_listed, bytes_listed        what the planner's listing returned, as it goes
//	list_requests                    the planner's LIST requests (pages and probes)
//	versions_listed                  with Config.Versions, the versions and delete markers listed
//	                                 (PlanStats.VersionsListed)
//	objects_planned, splits_planned  what the planner selected and packed
//	objects_skipped                  listed objects Match or the time window left out
//	objects_skipped_archived         archived objects Config.SkipArchived left out
//	segments_planned                 members that are segments of large objects
//	probe_requests, probe_bytes      the planner's GETs to decide how to cut large objects (magic
//	                                 bytes, unit starts, seek tables), and the bytes asked for
//	restrictions_read                restrictions processed: descriptors, initial splits, residuals
//	objects                          objects whose reading began (each once, however segmented or split)
//	gets                             GET requests made
//	raw_bytes                        bytes received from S3
//	decompressed_bytes               bytes after decompression, as framed
//	records                          records emitted
//	resumed_reads                    reads that began at a resume point inside a member
//	skipped_records                  records read again and dropped to reach a restriction's start
//	redecoded_bytes                  decompressed bytes a read decoded again before a restriction's
//	                                 first record (docs/design.md, "Splitting and resuming")
//	headers_skipped                  records dropped by Config.SkipHeaderRecords
//	body_resumes                     broken response bodies resumed with a ranged GET
//	range_ignored                    ranged GETs the server answered with the whole object (200):
//	                                 read exactly, the bytes before the range received and dropped
//	checksum_lookups                 with Config.VerifyChecksums, the requests that looked up
//	                                 stored checksums (GetObjectAttributes; HeadObject where not served)
//	checksums_verified               objects read whole whose every byte matched their stored checksum
//	checksums_missing                objects read whole that have no stored checksum
//	checksums_unchecked              reads of part of an object (segments, resumes), which a stored
//	                                 checksum cannot check, counted when they end (a read dropped
//	                                 partway is not counted: the read that takes the object is)
//	cancelled_gets                   GETs cut short because a split, a failure or the end of a read made them unneeded
//	dropped_bytes                    bytes fetched and dropped unread: a failed object's, or what a
//	                                 split, checkpoint or bundle's end handed over and no read took
//	members_fetched_ahead            members whose fetch began before their restriction did
//	objects_failed                   objects quarantined (each a Failure)
//	objects_failed_<reason>          the same by reason: deleted, overwritten, corrupt,
//	                                 record_too_large, unreadable, archived
//	splits_already_read, splits_left what Except dropped as done, and kept
//	refreshes                        listings made by ReadContinuously
//	objects_new, objects_changed     what its refreshes found: keys not read before, and keys
//	                                 whose ETag differs from the version read
//	objects_unchanged, objects_gone  versions already read, and keys a refresh no longer listed
//
// Counters are flushed once per object read, not per record (docs/design.md, "Metrics").
const MetricsNamespace = "s3io"

var (
	metricKeysListed      = beam.NewCounter(MetricsNamespace, "keys_listed")
	metricBytesListed     = beam.NewCounter(MetricsNamespace, "bytes_listed")
	metricListRequests    = beam.NewCounter(MetricsNamespace, "list_requests")
	metricVersionsListed  = beam.NewCounter(MetricsNamespace, "versions_listed")
	metricObjectsSkipped  = beam.NewCounter(MetricsNamespace, "objects_skipped")
	metricSkippedArchived = beam.NewCounter(MetricsNamespace, "objects_skipped_archived")
	metricObjectsPlanned  = beam.NewCounter(MetricsNamespace, "objects_planned")
	metricSplitsPlanned   = beam.NewCounter(MetricsNamespace, "splits_planned")
	metricSegmentsPlanned = beam.NewCounter(MetricsNamespace, "segments_planned")
	metricProbeRequests   = beam.NewCounter(MetricsNamespace, "probe_requests")
	metricProbeBytes      = beam.NewCounter(MetricsNamespace, "probe_bytes")
	metricRestrictions    = beam.NewCounter(MetricsNamespace, "restrictions_read")
	metricObjects         = beam.NewCounter(MetricsNamespace, "objects")
	metricGets            = beam.NewCounter(MetricsNamespace, "gets")
	metricResumed         = beam.NewCounter(MetricsNamespace, "resumed_reads")
	metricSkipped         = beam.NewCounter(MetricsNamespace, "skipped_records")
	metricRedecoded       = beam.NewCounter(MetricsNamespace, "redecoded_bytes")
	metricHeadersSkipped  = beam.NewCounter(MetricsNamespace, "headers_skipped")
	metricBodyResumes     = beam.NewCounter(MetricsNamespace, "body_resumes")
	metricRangeIgnored    = beam.NewCounter(MetricsNamespace, "range_ignored")
	metricChecksumLookups = beam.NewCounter(MetricsNamespace, "checksum_lookups")
	metricChecksumsOK     = beam.NewCounter(MetricsNamespace, "checksums_verified")
	metricChecksumsNone   = beam.NewCounter(MetricsNamespace, "checksums_missing")
	metricChecksumsPart   = beam.NewCounter(MetricsNamespace, "checksums_unchecked")
	metricRawBytes        = beam.NewCounter(MetricsNamespace, "raw_bytes")
	metricBytes           = beam.NewCounter(MetricsNamespace, "decompressed_bytes")
	metricRecords         = beam.NewCounter(MetricsNamespace, "records")
	metricCancelledGets   = beam.NewCounter(MetricsNamespace, "cancelled_gets")
	metricDroppedBytes    = beam.NewCounter(MetricsNamespace, "dropped_bytes")
	metricFetchedAhead    = beam.NewCounter(MetricsNamespace, "members_fetched_ahead")
)

var (
	metricFailed         = beam.NewCounter(MetricsNamespace, "objects_failed")
	metricFailedByReason = func() map[Reason]beam.Counter {
		m := map[Reason]beam.Counter{}
		for _, r := range reasons {
			m[r] = beam.NewCounter(MetricsNamespace, "objects_failed_"+string(r))
		}
		return m
	}()
)

var (
	metricSplitsAlreadyRead = beam.NewCounter(MetricsNamespace, "splits_already_read")
	metricSplitsLeft        = beam.NewCounter(MetricsNamespace, "splits_left")
)

var (
	metricRefreshes        = beam.NewCounter(MetricsNamespace, "refreshes")
	metricObjectsNew       = beam.NewCounter(MetricsNamespace, "objects_new")
	metricObjectsChanged   = beam.NewCounter(MetricsNamespace, "objects_changed")
	metricObjectsUnchanged = beam.NewCounter(MetricsNamespace, "objects_unchanged")
	metricObjectsGone      = beam.NewCounter(MetricsNamespace, "objects_gone")
)
