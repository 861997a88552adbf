package s3io

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

// Failure reports an object, or the span of one a Member owns, that was quarantined: its records from
// Index on were not emitted, the rest of its split was read on.
type Failure struct {
	ObjectRef
	// Index is the index of the first record not emitted: records before it were
	// emitted (by this reader or, after a split, by another) and stay emitted.
	Index   int64
	Reason  Reason
	Message string
	// Attempts is how many attempts the failing read made.
	Attempts int
}

// String renders the failure for logs and job errors.
func (f Failure) String() string {
	return fmt.Sprintf("s3://%s/%s (%s, split %s member %d, %d records emitted): %s: %s",
		f.Bucket, f.Key, f.pin(), f.SplitID, f.Member, f.Index, f.Reason, f.Message)
}

// failureSummary keeps the count and the first few failures (by key) of a job.
type failureSummary struct {
	Count int
	First []Failure
}

// maxListedFailures is how many quarantined objects the job error names.
const maxListedFailures = 5

// summarizeFailures is the CombineFn behind Read's failure policy.
type summarizeFailures struct{}

func (c *summarizeFailures) AddInput(a failureSummary, f Failure) failureSummary {
	return c.MergeAccumulators(a, failureSummary{Count: 1, First: []Failure{f}})
}

func (*summarizeFailures) MergeAccumulators(a, b failureSummary) failureSummary {
	first := append(append([]Failure(nil), a.First...), b.First...)
	sort.Slice(first, func(i, j int) bool { return first[i].Key < first[j].Key })
	if len(first) > maxListedFailures {
		first = first[:maxListedFailures]
	}
	return failureSummary{Count: a.Count + b.Count, First: first}
}

// failJob fails the pipeline when anything was quarantined. It runs after the combine, so
// only once every other object has been read.
func failJob(s failureSummary) error {
	if s.Count == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "s3io: %d object read(s) failed and were quarantined; every other object was read. ", s.Count)
	for i, f := range s.First {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	if s.Count > len(s.First) {
		fmt.Fprintf(&b, "; and %d more", s.Count-len(s.First))
	}
	b.WriteString(". Use s3io.ReadWithFailures to keep the job going and handle these as a dead letter.")
	return errors.New(b.String())
}

// failOnFailures makes the job fail, after reading, if failures is not empty.
func failOnFailures(s beam.Scope, failures beam.PCollection) {
	s = s.Scope("s3io.FailOnQuarantine")
	beam.ParDo0(s, failJob, beam.Combine(s, &summarizeFailures{}, failures))
}
