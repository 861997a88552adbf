package s3io

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/window"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/state"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn4x1[context.Context, beam.EventTime, int64, func(string, listedVersion), error](&refreshListFn{})
	register.DoFn8x1[context.Context, beam.EventTime, state.Provider, timers.Provider, string, listedVersion, func(beam.EventTime, SplitDescriptor), func(int), error](&watchFn{})
	register.Combiner3[refreshSummary, int, refreshSummary](&summarizeRefresh{})
	register.DoFn3x0[context.Context, beam.Window, refreshSummary](&logRefreshFn{})
	register.DoFn2x1[context.Context, Failure, error](&failUnreadableFn{})
	register.Emitter2[string, listedVersion]()
	register.Emitter2[beam.EventTime, SplitDescriptor]()
	register.Emitter1[int]()
	beam.RegisterType(reflect.TypeOf((*listedVersion)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*refreshSummary)(nil)).Elem())
}

// ReadContinuously watches cfg.Bucket and cfg.Prefix: it lists them every interval until
// end (the zero time: until the job is cancelled or drained) and reads each object version
// (key, ETag) once. New keys and overwritten objects are read when a refresh finds them;
// unchanged objects are not read again; deleted objects are forgotten, so a key that comes
// back is read again. Its output, a PCollection<[]byte> of records, is unbounded.
//
// What was read is kept in Beam state (the ETag and key per object), not in a worker's
// memory, so it survives worker restarts and is restored from a checkpoint or savepoint. A
// refresh lists the whole prefix, about one LIST request per 1,000 keys, whether anything
// changed or not (docs/design.md, "Watching a prefix").
//
// Event time: each record carries its object's LastModified. The output watermark follows
// the refreshes, so an object is found up to one interval (plus the listing) after it was
// written, and S3's LastModified is when its upload began: windowed aggregations downstream
// need an allowed lateness of at least the interval plus the longest upload.
//
// Failures: an object deleted or overwritten between the refresh that listed it and its
// read is not an error (the next refresh forgets it or reads the new version); it is
// logged and counted as objects_failed_deleted or objects_failed_overwritten. Any other
// Failure (corrupt, unreadable, record_too_large, archived) fails the job, naming the
// object; ReadContinuouslyWithFailures returns them all instead, and suits Dataflow, which
// retries a failing streaming bundle forever. A version whose read failed is not tried
// again unless it changes.
//
// With an end, the watch stops refreshing once the end has passed and its last refresh is
// read, and the output ends. Whether the job then finishes is the runner's: prism's does;
// on Flink with checkpointing, Beam's runner keeps its Impulse sources, and so the job,
// running until it is stopped (docs/deploy.md).
//
// Objects are read whole, one descriptor each (they are not cut), and
// Config.StartAfter applies to every refresh. It panics if cfg does not validate or
// interval is under a second.
func ReadContinuously(s beam.Scope, cfg Config, interval time.Duration, end time.Time) beam.PCollection {
	s = s.Scope("s3io.ReadContinuously")
	records, failures := ReadContinuouslyWithFailures(s, cfg, interval, end)
	beam.ParDo0(s, &failUnreadableFn{}, failures)
	return records
}

// ReadContinuouslyWithFailures is ReadContinuously returning every Failure, including
// objects deleted or overwritten between their refresh and their read, as a
// PCollection<Failure> instead of failing the job.
func ReadContinuouslyWithFailures(s beam.Scope, cfg Config, interval time.Duration, end time.Time) (records, failures beam.PCollection) {
	s = s.Scope("s3io.ReadContinuouslyWithFailures")
	cfg = prepare(cfg)
	if cfg.Versions.enabled() {
		panic("s3io: ReadContinuously does not take Config.Versions: each refresh reads the objects it lists; plan versions with Read or Plan")
	}
	if interval < time.Second {
		panic(fmt.Sprintf("s3io: ReadContinuously needs an interval of a second or more, not %v: each refresh lists the whole prefix", interval))
	}
	iv := interval.Milliseconds()
	var endMs int64
	if !end.IsZero() {
		endMs = end.UnixMilli()
	}
	clock := &refreshClockFn{IntervalMs: iv, EndMs: endMs}
	ticks := refreshTicks(s, iv, endMs)
	listed := beam.ParDo(s, &refreshListFn{Cfg: cfg, Bucket: cfg.Bucket, Prefix: cfg.Prefix}, ticks)
	w := &watchFn{Bucket: cfg.Bucket, IntervalMs: iv, LastTickMs: clock.lastTick(),
		Read: state.MakeValueState[string]("etag"), Gone: timers.InEventTime("gone")}
	descriptors, events := beam.ParDo2(s, w, listed)
	byRefresh := beam.WindowInto(s, window.NewFixedWindows(interval), events)
	beam.ParDo0(s, &logRefreshFn{Where: "s3://" + cfg.Bucket + "/" + cfg.Prefix}, beam.Combine(s, &summarizeRefresh{}, byRefresh))
	return readSplits(s, cfg, descriptors, outBytes)
}

// listedVersion is one object as a refresh listed it.
type listedVersion struct {
	Member       Member
	LastModified int64 // Unix milliseconds
}

// refreshListFn lists the prefix at each refresh and hands every selected object on, keyed
// by its key, timestamped with the refresh.
type refreshListFn struct {
	Cfg            Config
	Bucket, Prefix string

	planner *planner
}

func (fn *refreshListFn) Setup(ctx context.Context) (err error) {
	fn.planner, err = newPlanner(ctx, fn.Cfg)
	return err
}

func (fn *refreshListFn) ProcessElement(ctx context.Context, ts beam.EventTime, _ int64, emit func(string, listedVersion)) error {
	lp, err := fn.Cfg.listPrefix(fn.Prefix)
	if err != nil {
		return err
	}
	metricRefreshes.Inc(ctx, 1)
	if _, err := fn.planner.scan(ctx, fn.Bucket, fn.Prefix, watchSink(func(m Member, modified time.Time) {
		emit(m.Key, listedVersion{Member: m, LastModified: modified.UnixMilli()})
	})); err != nil {
		return fmt.Errorf("s3io: refresh at %v of s3://%s/%s: %w", ts.ToTime().UTC(), fn.Bucket, lp, err)
	}
	return nil
}

// watchSink hands every object a refresh selects to the watch, which compares it with what
// it read before.
type watchSink func(m Member, lastModified time.Time)

func (w watchSink) take(_ context.Context, page []selected, _ *PlanStats) error {
	for _, o := range page {
		w(o.Member, o.LastModified)
	}
	return nil
}

func (watchSink) finish() error { return nil }

func (watchSink) report(ctx context.Context, where string, st *PlanStats, took time.Duration) {
	log.Infof(ctx, "s3io: refresh listed %s: %d keys with %d requests in %v; %d objects (%d bytes, %d archived) selected; %d left out by selection, %d folders not listed", where, st.KeysListed, st.ListRequests, took.Round(time.Millisecond), st.Objects, st.Bytes, st.Archived, st.Skipped, st.FoldersSkipped)
}

// Refresh outcomes, as watchFn reports each object to the refresh summary.
const (
	refreshNew = iota
	refreshChanged
	refreshUnchanged
	refreshGone
)

// watchFn remembers, per object key, the ETag of the version it handed to the reader, and
// hands on a version whose ETag it has not seen. An event-time timer set one and a half
// intervals after each sighting fires once a refresh has passed without the key: the
// object is gone and forgotten. Refreshes are an interval apart, so a key listed by every
// refresh pushes its timer ahead each time and it never fires.
type watchFn struct {
	Bucket                 string
	IntervalMs, LastTickMs int64

	Read state.Value[string]
	Gone timers.EventTime
}

func (fn *watchFn) ProcessElement(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, v listedVersion, read func(beam.EventTime, SplitDescriptor), outcome func(int)) error {
	etag, seen, err := fn.Read.Read(sp)
	if err != nil {
		return err
	}
	fn.Gone.Set(tp, ts.ToTime().Add(time.Duration(fn.IntervalMs*3/2)*time.Millisecond))
	switch {
	case seen && etag == v.Member.ETag:
		metricObjectsUnchanged.Inc(ctx, 1)
		outcome(refreshUnchanged)
		return nil
	case seen:
		metricObjectsChanged.Inc(ctx, 1)
		outcome(refreshChanged)
	default:
		metricObjectsNew.Inc(ctx, 1)
		outcome(refreshNew)
	}
	if err := fn.Read.Write(sp, v.Member.ETag); err != nil {
		return err
	}
	ms := []Member{v.Member}
	read(beam.EventTime(v.LastModified), SplitDescriptor{ID: splitID(fn.Bucket, ms), Bucket: fn.Bucket, Members: ms})
	return nil
}

func (fn *watchFn) OnTimer(ctx context.Context, ts beam.EventTime, sp state.Provider, tp timers.Provider, key string, _ timers.Context, _ func(beam.EventTime, SplitDescriptor), outcome func(int)) error {
	if fn.LastTickMs != 0 && int64(ts) > fn.LastTickMs {
		// The timer is after the last refresh: the schedule ended and the watermark went to
		// the end of time. The key may well be in the last refresh, whose sightings can
		// arrive after that jump (on Flink they did, the clock's source having finished):
		// forgetting it now would read it again as new. No refresh comes after the last,
		// so a key that really is gone has nothing left to be read by.
		return nil
	}
	metricObjectsGone.Inc(ctx, 1)
	outcome(refreshGone)
	return fn.Read.Clear(sp)
}

// refreshSummary counts what one refresh found.
type refreshSummary struct {
	New, Changed, Unchanged, Gone int64
}

type summarizeRefresh struct{}

func (*summarizeRefresh) AddInput(a refreshSummary, outcome int) refreshSummary {
	switch outcome {
	case refreshNew:
		a.New++
	case refreshChanged:
		a.Changed++
	case refreshUnchanged:
		a.Unchanged++
	case refreshGone:
		a.Gone++
	}
	return a
}

func (*summarizeRefresh) MergeAccumulators(a, b refreshSummary) refreshSummary {
	return refreshSummary{a.New + b.New, a.Changed + b.Changed, a.Unchanged + b.Unchanged, a.Gone + b.Gone}
}

func (*summarizeRefresh) ExtractOutput(a refreshSummary) refreshSummary { return a }

// logRefreshFn logs one line per refresh. Objects gone are noticed by the refresh after
// their last sighting and counted with it.
type logRefreshFn struct {
	Where string
}

func (fn *logRefreshFn) ProcessElement(ctx context.Context, w beam.Window, r refreshSummary) {
	at := "?"
	if iw, ok := w.(window.IntervalWindow); ok {
		at = iw.Start.ToTime().UTC().Format(time.RFC3339)
	}
	log.Infof(ctx, "s3io: refresh of %s at %s: %d new, %d changed, %d unchanged, %d gone", fn.Where, at, r.New, r.Changed, r.Unchanged, r.Gone)
}

// failUnreadableFn fails a continuous read on a Failure that no later refresh can mend.
type failUnreadableFn struct{}

func (*failUnreadableFn) ProcessElement(ctx context.Context, f Failure) error {
	switch f.Reason {
	case ReasonDeleted, ReasonOverwritten:
		log.Infof(ctx, "s3io: %s changed after its refresh listed it; the next refresh reads its new version or forgets it", f)
		return nil
	}
	return fmt.Errorf("s3io: a continuous read could not read an object: %s. Use s3io.ReadContinuouslyWithFailures to keep reading and handle these as a dead letter", f)
}
