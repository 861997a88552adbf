package s3io

import (
	"context"
	"fmt"
	"io"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func init() {
	register.DoFn3x1[context.Context, []byte, func(SplitDescriptor), error](&planFn{})
	register.DoFn4x1[context.Context, *sdf.LockRTracker, SplitDescriptor, func([]byte), error](&readFn{})
	register.Emitter1[SplitDescriptor]()
	register.Emitter1[[]byte]()
	beam.RegisterType(reflect.TypeOf((*SplitDescriptor)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Member)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Restriction)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Position)(nil)).Elem())
}

// Read reads every object under cfg.Prefix in cfg.Bucket and returns a PCollection<[]byte>
// of their records: decompressed, framed by cfg.Framer, exactly as stored. It is Plan, a
// Reshuffle that lets the runner spread the descriptors over workers, and ReadSplits.
//
// Every GET is pinned to the ETag the planner listed, so an object changed after planning
// fails its read rather than mixing versions. Records are emitted at least once: a runner
// retrying a failed bundle may emit a record again, but never loses one.
//
// It panics if cfg does not validate.
func Read(s beam.Scope, cfg Config) beam.PCollection {
	s = s.Scope("s3io.Read")
	return ReadSplits(s, cfg, beam.Reshuffle(s, Plan(s, cfg)))
}

// ReadSplits reads the records of a PCollection<SplitDescriptor>, as produced by Plan, and
// returns them as a PCollection<[]byte>. Use it to plan once and read later, or to read
// descriptors that were stored. The descriptors name their bucket: cfg.Bucket and
// cfg.Prefix are not used here and may be empty.
//
// Each descriptor is read by a splittable DoFn whose restriction is a range of (member,
// record) positions, so a runner can checkpoint and split a descriptor between records.
//
// It panics if cfg does not validate.
func ReadSplits(s beam.Scope, cfg Config, descriptors beam.PCollection) beam.PCollection {
	if cfg.Bucket == "" {
		// Validate needs a bucket name to check; the descriptors carry the real ones.
		cfg.Bucket = "descriptor-bucket"
	}
	mustValidate(cfg)
	s = s.Scope("s3io.ReadSplits")
	return beam.ParDo(s, &readFn{Cfg: cfg.withDefaults()}, descriptors)
}

// readFn is the splittable DoFn that reads split descriptors. Its only exported field is
// the Config, which Beam serializes as JSON into the pipeline; the client, framer and
// decoders are built on the worker.
type readFn struct {
	Cfg Config

	client    *s3.Client
	newFramer func() RecordFramer
	dec       decompressors
}

func (fn *readFn) Setup(ctx context.Context) error {
	f, ok := lookupFramer(fn.Cfg.Framer)
	if !ok {
		return fmt.Errorf("s3io: framer %q is not registered in this worker's binary; register it in an init function, not in main", fn.Cfg.Framer)
	}
	fn.newFramer = f
	c, err := newClient(ctx, fn.Cfg)
	fn.client = c
	return err
}

func (fn *readFn) Teardown() { fn.dec.close() }

// CreateInitialRestriction covers every record of every member.
func (fn *readFn) CreateInitialRestriction(d SplitDescriptor) Restriction {
	return fullRestriction(d)
}

// SplitRestriction keeps a descriptor whole: the planner already sized it.
func (fn *readFn) SplitRestriction(_ SplitDescriptor, r Restriction) []Restriction {
	return []Restriction{r}
}

// RestrictionSize is the restriction's weight in stored bytes.
func (fn *readFn) RestrictionSize(_ SplitDescriptor, r Restriction) float64 {
	return r.size()
}

func (fn *readFn) CreateTracker(r Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(NewTracker(r))
}

// ProcessElement reads the members the restriction owns, in order. It claims a member's
// first owned position before opening the object (so a split-off member is never opened),
// and every later record before emitting it. Returning an error fails the bundle; the runner
// retries it from the restriction, never from a position already handed to a residual.
func (fn *readFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func([]byte)) error {
	rest := rt.GetRestriction().(Restriction)
	if err := rest.valid(len(d.Members)); err != nil {
		return fmt.Errorf("%w (split %s)", err, d.ID)
	}
	for m := rest.Start.Member; ; m++ {
		first := int64(0)
		if m == rest.Start.Member {
			first = rest.Start.Record
		}
		// After the last member this claim fails, telling the tracker the reader is done.
		if !rt.TryClaim(Position{Member: m, Record: first}) {
			return nil
		}
		if first == 0 {
			metricObjects.Inc(ctx, 1)
		}
		stopped, err := fn.readMember(ctx, rt, d, m, first, emit)
		if err != nil || stopped {
			return err
		}
	}
}

// readMember emits the records of member m from index first on (which the caller claimed),
// claiming each later one. It reports whether a claim failed.
func (fn *readFn) readMember(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, m int, first int64, emit func([]byte)) (stopped bool, err error) {
	member := d.Members[m]
	var rawBytes int64
	src := &pinnedReader{ctx: ctx, client: fn.client, bucket: d.Bucket, member: member, verify: fn.Cfg.VerifyChecksums, counted: &rawBytes}
	idx, emitted := int64(0), int64(0)
	var rr *recordReader
	defer func() {
		src.Close()
		metricRawBytes.Inc(ctx, rawBytes)
		metricRecords.Inc(ctx, emitted)
		if rr != nil {
			metricBytes.Inc(ctx, rr.offset)
		}
		if err != nil {
			err = &ObjectError{SplitID: d.ID, Bucket: d.Bucket, Key: member.Key, ETag: member.ETag, Member: m, Record: idx, Err: err}
		}
	}()
	if err := src.open(); err != nil {
		return false, err
	}
	stream, err := fn.dec.open(fn.Cfg.Compression, member.Key, src)
	if err != nil {
		return false, err
	}
	rr = newRecordReader(stream, fn.newFramer(), fn.Cfg.MaxRecordBytes)
	// One claim value for the whole object: a Position boxed per record would allocate.
	claim := &Position{Member: m}
	for ; ; idx++ {
		rec, _, err := rr.next()
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if idx < first {
			continue
		}
		claim.Record = idx
		if idx > first && !rt.TryClaim(claim) {
			return true, nil
		}
		emit(rec)
		emitted++
	}
}
