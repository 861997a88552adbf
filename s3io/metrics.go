package s3io

import "github.com/apache/beam/sdks/v2/go/pkg/beam"

// MetricsNamespace is the namespace of every s3io counter. The counters are:
//
//	objects_planned, splits_planned  what the planner listed and packed
//	objects                          objects whose reading began (each counted once, however split)
//	raw_bytes                        bytes received from S3
//	decompressed_bytes               bytes after decompression, as framed
//	records                          records emitted
//
// Counters are flushed once per object read rather than per record: a Beam counter update
// costs a lookup, and a runner commits counters per bundle anyway.
const MetricsNamespace = "s3io"

var (
	metricObjectsPlanned = beam.NewCounter(MetricsNamespace, "objects_planned")
	metricSplitsPlanned  = beam.NewCounter(MetricsNamespace, "splits_planned")
	metricObjects        = beam.NewCounter(MetricsNamespace, "objects")
	metricRawBytes       = beam.NewCounter(MetricsNamespace, "raw_bytes")
	metricBytes          = beam.NewCounter(MetricsNamespace, "decompressed_bytes")
	metricRecords        = beam.NewCounter(MetricsNamespace, "records")
)
