package main

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/spate-io/beam-s3/s3io"
)

// variantS3ioBatches is s3io.ReadBatches into a sink that counts each batch's records: what
// a pipeline whose next step takes records in bulk pays, without Beam's per-record cost.
const variantS3ioBatches = "s3io-batches"

func init() {
	register.DoFn2x0[context.Context, s3io.RecordBatch](&countBatchesFn{})
}

// countBatchesFn is the sink of s3io.ReadBatches: it counts the records of each batch, and
// their bytes as countRecordsFn does (each with its newline).
type countBatchesFn struct{ tally }

func (f *countBatchesFn) ProcessElement(_ context.Context, b s3io.RecordBatch) {
	f.b += int64(len(b.Data) + b.Len())
	f.n += int64(b.Len())
}

// readBatches adds the s3io-batches pipeline, on cfg's defaults as the s3io variant is.
func readBatches(s beam.Scope, cfg s3io.Config) {
	beam.ParDo0(s, &countBatchesFn{}, s3io.ReadBatches(s, cfg))
}
