package s3io

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.Function1x2(keyByID)
	register.Function1x2(markDone)
	register.DoFn5x0[context.Context, string, func(*SplitDescriptor) bool, func(*int) bool, func(SplitDescriptor)](&exceptFn{})
	register.Iter1[SplitDescriptor]()
	register.Iter1[int]()
}

// Except returns the descriptors of a PCollection<SplitDescriptor> whose ID is not in
// doneIDs, a PCollection<string> of the IDs of splits already read. It is how a re-run reads
// only what an earlier run did not: a replan keeps the ID of every descriptor that holds no
// added, removed or changed object, so Except(Plan(...), done) reads the new and changed
// objects plus at most the other members of the one or two descriptors around each
// (docs/design.md, "Re-runs with Except").
//
// A split is done when a run read it without a Failure: the IDs that run planned, less the
// SplitIDs of its Failures (ExamplePlan writes both with textio, ExampleExcept reads them
// back). Records of a split that failed midway are read again: deduplicate on
// ReadWithPositions' identity where that matters.
func Except(s beam.Scope, descriptors, doneIDs beam.PCollection) beam.PCollection {
	s = s.Scope("s3io.Except")
	planned := beam.ParDo(s, keyByID, descriptors)
	done := beam.ParDo(s, markDone, doneIDs)
	return beam.ParDo(s, &exceptFn{}, beam.CoGroupByKey(s, planned, done))
}

func keyByID(d SplitDescriptor) (string, SplitDescriptor) { return d.ID, d }

func markDone(id string) (string, int) { return id, 1 }

// exceptFn emits the descriptors of an ID that no done marker joined. A plan holds each ID
// once; should two descriptors share one (a plan of the same prefix twice), both are kept
// or both dropped, as their ID says they are the same split.
type exceptFn struct{}

func (*exceptFn) ProcessElement(ctx context.Context, _ string, descriptors func(*SplitDescriptor) bool, done func(*int) bool, emit func(SplitDescriptor)) {
	var mark int
	isDone := done(&mark)
	var d SplitDescriptor
	for descriptors(&d) {
		if isDone {
			metricSplitsAlreadyRead.Inc(ctx, 1)
			continue
		}
		metricSplitsLeft.Inc(ctx, 1)
		emit(d)
	}
}
