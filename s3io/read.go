package s3io

import (
	"context"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

// The public reading transforms. Every one goes through readSplits, with a Config
// validated and defaulted once (prepare) on the way in.

func init() {
	register.DoFn3x1[context.Context, string, func(SplitDescriptor), error](&planFn{})
	register.DoFn5x1[context.Context, *sdf.LockRTracker, SplitDescriptor, func([]byte), func(Failure), error](&readFn{})
	register.DoFn5x1[context.Context, *sdf.LockRTracker, SplitDescriptor, func(Record), func(Failure), error](&readPositionsFn{})
	register.DoFn4x0[beam.Window, beam.EventTime, SplitDescriptor, func(beam.EventTime, SplitDescriptor)](&lookaheadFn{})
	register.Emitter2[beam.EventTime, SplitDescriptor]()
	register.DoFn5x1[context.Context, *sdf.LockRTracker, SplitDescriptor, func(RecordBatch), func(Failure), error](&readBatchesFn{})
	register.Function1x1(failJob)
	register.Combiner2[failureSummary, Failure](&summarizeFailures{})
	register.Emitter1[SplitDescriptor]()
	register.Emitter1[[]byte]()
	register.Emitter1[Record]()
	register.Emitter1[RecordBatch]()
	register.Emitter1[Failure]()
	beam.RegisterType(reflect.TypeOf((*SplitDescriptor)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Member)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*restriction)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*position)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*resumeHint)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Record)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*RecordBatch)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Failure)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*failureSummary)(nil)).Elem())
}

// Read reads every object under cfg.Prefix in cfg.Bucket and returns a PCollection<[]byte>
// of their records: decompressed, framed by cfg.Framer, exactly as stored. It is Plan, a
// Reshuffle that lets the runner spread the descriptors over workers, and ReadSplits.
//
// An object that cannot be read (a Reason) is quarantined: the rest is read, then the job
// fails with an error naming the objects. ReadWithFailures returns them instead. It panics
// if cfg does not validate.
func Read(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("s3io.Read")
	records, failures := readPrefix(s, prepare(cfg), outBytes)
	failOnFailures(s, failures)
	return records
}

// ReadWithFailures is Read without the failure policy: it returns the records and a
// PCollection<Failure> of the quarantined objects, and the job succeeds, so that the
// failures can be written to a dead-letter sink of the pipeline's choice.
func ReadWithFailures(s beam.Scope, cfg Config) (records, failures beam.PCollection) {
	return readPrefix(s.Scope("s3io.ReadWithFailures"), prepare(cfg), outBytes)
}

// ReadSplits reads the records of a PCollection<SplitDescriptor>, as produced by Plan, and
// returns them as a PCollection<[]byte>. Use it to plan once and read later, or to read
// descriptors that were stored. The descriptors name their bucket: cfg.Bucket and
// cfg.Prefix are not used here and may be empty. Failures are handled as by Read. It panics
// if cfg does not validate.
func ReadSplits(s beam.Scope, cfg Config, descriptors beam.PCollection) beam.PCollection {
	records, failures := readSplits(s, readingConfig(cfg), descriptors, outBytes)
	failOnFailures(s, failures)
	return records
}

// ReadSplitsWithFailures is ReadSplits returning the quarantined objects as a
// PCollection<Failure> instead of failing the job.
func ReadSplitsWithFailures(s beam.Scope, cfg Config, descriptors beam.PCollection) (records, failures beam.PCollection) {
	return readSplits(s, readingConfig(cfg), descriptors, outBytes)
}

// Record is a record with its deterministic identity, as ReadWithPositions emits it: the
// split ID, the member ordinal and the record index are the same in every run over the same
// plan, however the runner split the work, so downstream can deduplicate at-least-once
// delivery on (SplitID, Member, Index).
type Record struct {
	SplitID string
	Key     string
	Member  int
	Index   int64
	// Entry names the archive entry (tar or zip) the record came from; "" outside archives.
	// Indexes run on across an archive's entries.
	Entry string
	Data  []byte
}

// ReadWithPositions is Read, emitting a PCollection<Record> that carries each record's
// identity and object key with its bytes. It panics if cfg does not validate.
func ReadWithPositions(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("s3io.ReadWithPositions")
	records, failures := readPrefix(s, prepare(cfg), outRecords)
	failOnFailures(s, failures)
	return records
}

// ReadAll reads every object under each s3://bucket/prefix URL of a PCollection<string>, as
// Read reads cfg.Bucket and cfg.Prefix (which are not used here): any number of URLs, in
// any buckets, each planned with cfg's other settings (Match, StartAfter, the time window
// apply to each). It returns a PCollection<[]byte> of their records and fails the job
// after reading if any object was quarantined, as Read does. A malformed URL fails the job,
// naming it. It panics if cfg does not validate.
func ReadAll(s beam.Scope, cfg Config, urls beam.PCollection) beam.PCollection {
	s = s.Scope("s3io.ReadAll")
	records, failures := ReadAllWithFailures(s, cfg, urls)
	failOnFailures(s, failures)
	return records
}

// ReadAllWithFailures is ReadAll returning the quarantined objects as a PCollection<Failure>
// instead of failing the job.
func ReadAllWithFailures(s beam.Scope, cfg Config, urls beam.PCollection) (records, failures beam.PCollection) {
	s = s.Scope("s3io.ReadAllWithFailures")
	cfg = readingConfig(cfg)
	return readSplits(s, cfg, beam.Reshuffle(s, planAll(s, cfg, urls)), outBytes)
}

// output is what a read emits: records' bytes, Records, or RecordBatches.
type output int

const (
	outBytes output = iota
	outRecords
	outBatches
)

// readPrefix plans cfg's bucket and prefix and reads the plan. The Reshuffle lets the runner
// spread the descriptors over workers instead of reading them in the bundle that planned
// them.
func readPrefix(s beam.Scope, cfg Config, out output) (records, failures beam.PCollection) {
	return readSplits(s, cfg, beam.Reshuffle(s, planPrefix(s, cfg)), out)
}

// readSplits reads descriptors with the splittable DoFn, emitting out. cfg is prepared.
func readSplits(s beam.Scope, cfg Config, descriptors beam.PCollection, out output) (records, failures beam.PCollection) {
	s = s.Scope("s3io.ReadSplits")
	descriptors = withLookahead(s, cfg, descriptors)
	switch out {
	case outRecords:
		return beam.ParDo2(s, &readPositionsFn{reader{Cfg: cfg}}, descriptors)
	case outBatches:
		return beam.ParDo2(s, &readBatchesFn{reader{Cfg: cfg}}, descriptors)
	}
	return beam.ParDo2(s, &readFn{reader{Cfg: cfg}}, descriptors)
}

// prepare validates and defaults cfg for a transform that reads cfg.Bucket; it panics, as
// Beam transforms do at construction, naming what to fix.
func prepare(cfg Config) Config {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return cfg.WithDefaults()
}

// readingConfig validates and defaults cfg for a transform whose input names the buckets
// (descriptors, URLs): cfg.Bucket and cfg.Prefix are not used.
func readingConfig(cfg Config) Config {
	if err := cfg.validateReading(); err != nil {
		panic(err)
	}
	return cfg.WithDefaults()
}
