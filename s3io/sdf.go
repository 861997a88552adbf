package s3io

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
	"github.com/spate-io/beam-s3/s3io/internal/member"
)

// reader is the splittable DoFn shared by readFn and readPositionsFn. Its only exported
// field is the Config, which Beam serializes as JSON into the pipeline; the client, framer
// and decoders are built on the worker.
type reader struct {
	Cfg Config

	client    *s3.Client
	newFramer func() RecordFramer
	// resumable is false for a framer that cannot start at a record's byte offset: its
	// claims then carry no resume hint, and a residual re-frames its member from the start.
	resumable bool
	// copiesRecords is set by a DoFn that copies every record out of the framer's slabs
	// before emitting it (ReadBatches): the slabs are then recycled instead of each being
	// left to the garbage collector, which halves what a read allocates.
	copiesRecords bool
	// fetcher fetches the parts of this instance's restrictions, one after another, within
	// its budget's share of the worker's pool (releasePool gives that back). It outlives
	// each restriction so that the next one's first parts can be in flight before it starts.
	fetcher     *fetch.Fetcher
	releasePool func()
	gets        map[string]*fetch.Gets // by bucket
	// reported is the fetcher's counts last added to the metrics; under reportMu, since
	// every instance of the worker reports them (reportFetches).
	reportMu sync.Mutex
	reported fetch.Stats
	// ahead holds what the instance fetches for restrictions announced and not yet started
	// (lookahead.go).
	ahead aheadFetches
	// members reads the members, several at a time (Config.decoding), each with decoders
	// of its own that it gives back.
	members *member.Reader
	// warnedRange is set once this instance has warned that its server ignores Range.
	warnedRange atomic.Bool
}

func (fn *reader) Setup(ctx context.Context) error {
	f, ok := lookupFramer(fn.Cfg.Framer)
	if !ok {
		return fmt.Errorf("s3io: framer %q is not registered in this worker's binary; register it in an init function, not in main", fn.Cfg.Framer)
	}
	fn.newFramer, fn.resumable = f, resumesAtOffset(fn.Cfg.Framer)
	c, err := newClient(ctx, fn.Cfg)
	if err != nil {
		return err
	}
	fn.client = c
	pool, release := fetch.WorkerPool(fn.Cfg.WorkerBufferBytes)
	fn.fetcher, fn.releasePool = fetch.NewFetcher(context.Background(), fn.Cfg.fetchSettings(), pool, fn.Cfg.newBudget(pool)), release
	fn.gets = map[string]*fetch.Gets{}
	fn.ahead.fn, fn.ahead.key = fn, lookaheadKey(fn.Cfg)
	fn.members = fn.Cfg.memberReader(fn.newFramer, fn.fetcher.Budget(), fn.copiesRecords)
	registerFetcher(fn)
	return nil
}

// finishBundle hands over what was fetched ahead for restrictions that did not come: the
// bundle is over, and they may start on another instance (handover.go). Each DoFn's
// FinishBundle calls it (Beam wants FinishBundle to take ProcessElement's emitters).
func (fn *reader) finishBundle(ctx context.Context) {
	fn.ahead.handOverAll()
	fn.reportFetches(ctx)
}

// getsFor returns the pinned reads of bucket.
func (fn *reader) getsFor(bucket string) *fetch.Gets {
	g := fn.gets[bucket]
	if g == nil {
		g = fetch.NewGets(fn.client, bucket, fn.Cfg.fetchSettings())
		fn.gets[bucket] = g
	}
	return g
}

func (fn *reader) Teardown() {
	if fn.fetcher != nil {
		// What the store holds of this instance's fetcher (its fetches ahead included) goes
		// first: dropping a decoding gives its decoders back to this instance.
		dropFrom(fn)
		unregisterFetcher(fn)
		fn.fetcher.Close()
		fn.releasePool()
		fn.fetcher = nil
	}
	if fn.members != nil {
		fn.members.Close()
	}
}

// CreateInitialRestriction covers every record of every member.
func (fn *reader) CreateInitialRestriction(d SplitDescriptor) restriction {
	return fullRestriction(d)
}

// SplitRestriction cuts a descriptor heavier than Config.InitialSplitBytes at member
// boundaries, so that a runner which never splits dynamically (Flink) still reads the members
// of one descriptor in parallel.
func (fn *reader) SplitRestriction(_ SplitDescriptor, r restriction) []restriction {
	if r.size() <= float64(fn.Cfg.InitialSplitBytes) {
		return []restriction{r}
	}
	return r.memberBoundaries(fn.Cfg.InitialSplitBytes)
}

// RestrictionSize is the restriction's weight in stored bytes.
func (fn *reader) RestrictionSize(_ SplitDescriptor, r restriction) float64 {
	return r.size()
}

func (fn *reader) CreateTracker(r restriction) *sdf.LockRTracker {
	t := newTracker(r)
	if fn.Cfg.VerifyChecksums {
		t.splits = objectBoundaries
	}
	return sdf.NewLockRTracker(t)
}

// process reads the restriction record by record, handing each owned record to sink.
func (fn *reader) process(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, sink func(m int, idx int64, entry string, rec []byte), fail func(Failure)) error {
	return fn.readRestriction(ctx, rt, d, fn.emitRecords(sink), fail)
}

// readRestriction reads the members the restriction owns, in order, handing each member's
// read to emit, which claims and emits its records (emitRecords one by one, emitBatches in
// runs). It
// claims a member's first owned position before reading from it. The members' bytes are
// fetched ahead of their claims, and the next objects are decoded while the current one is
// emitted; whatever a split takes away is cancelled and dropped unemitted. Returning an
// error fails the bundle; the runner retries it from the restriction, never from a position
// already handed to a residual.
func (fn *reader) readRestriction(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit memberEmitter, fail func(Failure)) (err error) {
	rest := rt.GetRestriction().(restriction)
	if err := rest.valid(len(d.Members)); err != nil {
		return fmt.Errorf("%w (split %s)", err, d.ID)
	}
	metricRestrictions.Inc(ctx, 1)
	progress := workerProgress.begin(fn.Cfg.ProgressInterval, d, rt)
	defer func() { progress.end(err == nil) }()
	rd := fn.newRestrictionRead(ctx, d, rest)
	rd.progress = progress
	defer rd.close(ctx)
	for m := rest.Start.Member; ; m++ {
		first := int64(0)
		if m == rest.Start.Member {
			first = rest.Start.Index
		}
		// After the last member this claim fails, telling the tracker the reader is done.
		if !rt.TryClaim(position{Member: m, Index: first}) {
			return nil
		}
		if class := d.Members[m].Archived; class != "" {
			err := fmt.Errorf("%w: the listing showed it in %s and not restored; restore it (aws s3api restore-object) and read it again, or set Config.SkipArchived to leave such objects out of the plan", errArchived, class)
			if err := fn.quarantine(ctx, d, m, first, err, fail); err != nil {
				return err
			}
			continue
		}
		if start, _ := d.Members[m].span(); first == 0 && start == 0 {
			metricObjects.Inc(ctx, 1) // once per object, however it is cut and split
		}
		stopped, err := fn.readMember(ctx, rt, d, rd, rd.open(ctx, m), first, emit)
		if err != nil {
			if err := fn.quarantine(ctx, d, m, first, err, fail); err != nil {
				return err
			}
			continue // the object's remaining records are given up; the split reads on
		}
		if stopped {
			return nil
		}
	}
}

// quarantine reports a failed member read as a Failure, or returns the error when it must
// fail the job.
func (fn *reader) quarantine(ctx context.Context, d SplitDescriptor, m int, first int64, err error, fail func(Failure)) error {
	fatal, reason := classify(err)
	if fatal {
		return err
	}
	f := Failure{ObjectRef: d.ref(m), Index: first, Reason: reason, Message: err.Error(), Attempts: attemptsOf(err)}
	var oe *objectError
	if errors.As(err, &oe) {
		f.Index, f.Message = max(oe.Index, first), oe.Err.Error()
	}
	metricFailed.Inc(ctx, 1)
	metricFailedByReason[reason].Inc(ctx, 1)
	workerProgress.failures.Add(1)
	log.Warnf(ctx, "s3io: quarantined %v", f)
	fail(f)
	return nil
}

// memberEmitter claims and emits the records of one member's read from index first on
// (whose position the caller claimed). It reports whether a claim failed, and counts in mc
// the records it framed (mc.next: the index of the first record not emitted), emitted and
// skipped.
type memberEmitter func(ctx context.Context, rt *sdf.LockRTracker, rd *restrictionRead, mr *memberRead, first int64, mc *memberCount) (stopped bool, err error)

// memberCount is what a memberEmitter reports of its member; skippedEnd is the stream offset
// just past the last record skipped (0 if none was).
type memberCount struct{ next, emitted, skipped, skippedEnd int64 }

// readMember runs emit over mr and accounts for it; an error is the member's, naming it and
// the first record not emitted.
func (fn *reader) readMember(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, rd *restrictionRead, mr *memberRead, first int64, emit memberEmitter) (stopped bool, err error) {
	mc := memberCount{next: mr.idx0}
	defer func() {
		if !mr.handedOver {
			mr.finish(ctx)
		}
		metricRecords.Inc(ctx, mc.emitted)
		metricSkipped.Inc(ctx, mc.skipped)
		if mc.next > mr.idx0 { // framing began: the unframed skip, if any, was decoded
			metricRedecoded.Inc(ctx, mr.r.Redecoded(mc.skippedEnd))
		}
		if err != nil {
			err = &objectError{ObjectRef: d.ref(mr.m), Index: max(mc.next, first), Err: withS3Hint(err)}
		} else if !stopped && (first == 0 || mc.emitted > 0) && d.Members[mr.m].endsObject() {
			// The object is done here: this read reached its end having emitted its last
			// record, or having begun at its first (an object of no records). No other read
			// of it does: one a split stopped inside it did not reach the end, and a
			// residual that starts past its last record emits nothing.
			rd.progress.objectDone()
		}
	}()
	return emit(ctx, rt, rd, mr, first, &mc)
}

// claimRunRecords bounds a run of claims: a split that comes while a run is emitted lands
// at most this many records after the record it came at, and the claims' cost is spread
// over this many records (a few nanoseconds each).
const claimRunRecords = 256

// emitRecords is the memberEmitter of Read and ReadWithPositions. It claims the records
// after first in runs of up to claimRunRecords (claimRunLocked), and hands the granted ones
// to sink: the emitting goroutine is the read's critical path on a runner that gives a
// stage's elements to one bundle (prism), and a claim per record took ~8 % of the read's CPU
// (a mutex and the tracker's bookkeeping, 10 M times for 2 GiB). A split or checkpoint that
// comes while a run is emitted lands after it, as for ReadBatches.
func (fn *reader) emitRecords(sink func(m int, idx int64, entry string, rec []byte)) memberEmitter {
	return func(ctx context.Context, rt *sdf.LockRTracker, rd *restrictionRead, mr *memberRead, first int64, mc *memberCount) (bool, error) {
		m := mr.m
		idx, emitted, skipped, skippedEnd := mc.next, int64(0), int64(0), int64(0)
		defer func() { mc.next, mc.emitted, mc.skipped, mc.skippedEnd = idx, emitted, skipped, skippedEnd }()
		var stored []int64 // the run's stored bytes: a framer batch's are all its Consumed
		for {
			b, i := mr.nextBatch()
			for ; i < len(b.Records) && idx < first; i++ {
				skipped, skippedEnd = skipped+1, b.Ends[i]
				idx++
			}
			if i < len(b.Records) && idx == first {
				sink(m, idx, b.Entries[i], b.Records[i]) // its position was claimed by the caller
				emitted++
				idx++
				i++
				workerProgress.records.Add(1)
			}
			for n := min(len(b.Records)-i, claimRunRecords); n > 0; n = min(len(b.Records)-i, claimRunRecords) {
				stored = slices.Grow(stored[:0], n)[:n]
				for k := range stored {
					stored[k] = b.Consumed
				}
				run := runClaim{Member: m, From: idx, Ends: b.Ends[i : i+n], Stored: stored, Hint: fn.resumable, StoredOffsets: mr.r.StoredOffsets(), Log: mr.r.Log()}
				granted := claimRunLocked(rt, &run)
				for end := i + granted; i < end; i++ {
					sink(m, idx, b.Entries[i], b.Records[i])
					emitted++
					idx++
				}
				workerProgress.records.Add(int64(granted))
				if granted < n {
					// A split: the residual starts at this record, and takes the member's
					// decoding over from here.
					mr.handedOver = true
					rd.handOverInside(mr, b, i, idx)
					return true, nil
				}
			}
			switch {
			case b.Err == io.EOF:
				if rt.GetRestriction().(restriction).End == (position{Member: m, Index: idx}) {
					// Split right after the member's last record: the residual starts past
					// it, and finds from the handed-over read that nothing is left.
					mr.handedOver = true
					rd.handOverInside(mr, b, len(b.Records), idx)
				}
				return false, nil
			case b.Err != nil:
				return false, b.Err
			}
			mr.r.Recycle(b) // the framing goroutine may refill it from here on
			rd.followSplit(ctx, rt)
		}
	}
}

// followSplit stops fetching the members after the one being read that a split took away.
func (rd *restrictionRead) followSplit(ctx context.Context, rt *sdf.LockRTracker) {
	if last := rt.GetRestriction().(restriction).lastMember(); last < rd.last {
		rd.truncate(last)
	}
}

// readFn emits each record's bytes.
type readFn struct{ reader }

func (fn *readFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func([]byte), fail func(Failure)) error {
	return fn.process(ctx, rt, d, func(_ int, _ int64, _ string, rec []byte) { emit(rec) }, fail)
}

func (fn *readFn) FinishBundle(ctx context.Context, _ func([]byte), _ func(Failure)) {
	fn.finishBundle(ctx)
}

// readPositionsFn emits each record with its identity.
type readPositionsFn struct{ reader }

func (fn *readPositionsFn) ProcessElement(ctx context.Context, rt *sdf.LockRTracker, d SplitDescriptor, emit func(Record), fail func(Failure)) error {
	return fn.process(ctx, rt, d, func(m int, idx int64, entry string, rec []byte) {
		emit(Record{SplitID: d.ID, Key: d.Members[m].Key, Member: m, Index: idx, Entry: entry, Data: rec})
	}, fail)
}

func (fn *readPositionsFn) FinishBundle(ctx context.Context, _ func(Record), _ func(Failure)) {
	fn.finishBundle(ctx)
}
