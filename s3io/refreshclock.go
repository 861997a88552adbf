package s3io

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/graph/mtime"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/timers"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/rtrackers/offsetrange"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn5x2[context.Context, *keeperEstimator, *sdf.LockRTracker, []byte, func(beam.EventTime, int, int64), sdf.ProcessContinuation, error](&clockKeeperFn{})
	register.DoFn6x0[context.Context, beam.EventTime, timers.Provider, int, int64, func(beam.EventTime, int64)](&refreshClockFn{})
	register.Emitter3[beam.EventTime, int, int64]()
	register.Emitter2[beam.EventTime, int64]()
	beam.RegisterType(reflect.TypeOf((*offsetrange.Restriction)(nil)).Elem())
}

// The refresh clock ticks a watch's refreshes: a processing-time timer of one stateful
// DoFn, set again at each tick (refreshClockFn), fed by one seed element from an unbounded
// source that does nothing else (clockKeeperFn).
//
// Why not Beam's periodic.Impulse: it is a splittable DoFn that checkpoints itself at every
// tick, and Beam's Flink runner before 2.76 keeps each self-checkpoint's residual in a
// Flink state registered under a new name (apache/beam#27648): a watch ticking every 5 s
// grew a TaskManager's heap by ~400 MB in minutes, and its checkpoints with it. A timer is
// one entry per key, overwritten when it is set again. The keeper checkpoints itself too,
// but once an hour, not at every tick (24 state names a day on those runners).
//
// Why a keeper at all: a processing-time timer fires only while its stage's input
// watermark is below the end of the global window; fed by a bounded Impulse (whose
// watermark goes to the end of time at once), Flink drops the first firing as late. The
// keeper's watermark stays just under the end of the global window until the watch ends;
// the clock's output watermark is then held by its timer's output timestamp, the next
// tick, which is what the watch downstream needs.

// keeperResume is how long the keeper sleeps between self-checkpoints; keeperNap bounds how
// long one of its bundles blocks. prism before v2.77 re-runs a self-checkpoint at once,
// whatever delay it asks for: without the nap the keeper spins there (some 36,000 bundles
// a minute on v2.75), with it one bundle per nap. prism v2.77 and later hold the residual
// for the delay asked, as Flink does; the nap stays for job servers of older versions.
const (
	keeperResume = time.Hour
	keeperNap    = 2 * time.Second
)

// keeperWatermark is the keeper's watermark once it has emitted its seed: below the end of
// the global window, so that the timers downstream stay on time, by a margin that no
// allowed lateness of the global window reaches.
var keeperWatermark = mtime.EndOfGlobalWindowTime.Subtract(time.Hour).ToTime()

// clockKeeperFn emits the refresh clock's seed, then keeps its watermark just under the
// end of the global window until the watch ends (EndMs; never if zero). Its restriction is
// [0, 2): 0 is the seed, 1 the end.
type clockKeeperFn struct {
	EndMs int64
}

func (fn *clockKeeperFn) CreateInitialRestriction(_ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{Start: 0, End: 2}
}

func (fn *clockKeeperFn) SplitRestriction(_ []byte, r offsetrange.Restriction) []offsetrange.Restriction {
	return []offsetrange.Restriction{r}
}

func (fn *clockKeeperFn) RestrictionSize(_ []byte, r offsetrange.Restriction) float64 {
	return float64(r.End - r.Start)
}

func (fn *clockKeeperFn) CreateTracker(r offsetrange.Restriction) *sdf.LockRTracker {
	return sdf.NewLockRTracker(offsetrange.NewTracker(r))
}

// TruncateRestriction ends the keeper when the job is drained.
func (fn *clockKeeperFn) TruncateRestriction(_ *sdf.LockRTracker, _ []byte) offsetrange.Restriction {
	return offsetrange.Restriction{}
}

func (fn *clockKeeperFn) CreateWatermarkEstimator() *keeperEstimator {
	return &keeperEstimator{}
}

// keeperEstimator is the keeper's watermark, set by its ProcessElement. Beam's
// ManualWatermarkEstimator has no lock, and a runner's split request reads the watermark
// from another goroutine while the keeper naps (prism asks, seeing a bundle that emits
// nothing): the race detector reported it.
type keeperEstimator struct {
	mu sync.Mutex
	wm time.Time
}

// CurrentWatermark is the watermark the keeper last set (the zero time: none yet).
func (e *keeperEstimator) CurrentWatermark() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.wm
}

// UpdateWatermark sets the keeper's watermark.
func (e *keeperEstimator) UpdateWatermark(t time.Time) {
	e.mu.Lock()
	e.wm = t
	e.mu.Unlock()
}

func (fn *clockKeeperFn) ProcessElement(ctx context.Context, we *keeperEstimator, rt *sdf.LockRTracker, _ []byte, seed func(beam.EventTime, int, int64)) (sdf.ProcessContinuation, error) {
	if rt.GetRestriction().(offsetrange.Restriction).Start == 0 {
		if !rt.TryClaim(int64(0)) {
			return sdf.StopProcessing(), rt.GetError()
		}
		seed(mtime.Now(), 0, 0)
		we.UpdateWatermark(keeperWatermark)
		return sdf.ResumeProcessingIn(fn.untilNext()), nil
	}
	we.UpdateWatermark(keeperWatermark)
	if fn.EndMs != 0 && time.Now().UnixMilli() >= fn.EndMs {
		rt.TryClaim(int64(1))
		return sdf.StopProcessing(), rt.GetError()
	}
	nap := min(keeperNap, fn.untilNext())
	select {
	case <-ctx.Done():
	case <-time.After(nap):
	}
	return sdf.ResumeProcessingIn(fn.untilNext()), nil
}

// untilNext is how long the keeper sleeps: an hour, or until the watch's end.
func (fn *clockKeeperFn) untilNext() time.Duration {
	d := keeperResume
	if fn.EndMs != 0 {
		d = min(d, time.Until(time.UnixMilli(fn.EndMs)))
	}
	return max(d, time.Second)
}

// refreshClockFn emits one tick per refresh, timestamped with the refresh's time: the first
// at once, the next at multiples of the interval since the Unix epoch, so that refresh k and
// the fixed window its summary is counted in line up; the last at or before EndMs - the
// interval. A refresh missed while the job was down is not made up: the clock goes on
// from the present.
type refreshClockFn struct {
	IntervalMs, EndMs int64

	Tick timers.ProcessingTime
}

// ProcessElement arms the first refresh; it emits nothing (Beam wants OnTimer's emitters
// in its signature too).
func (fn *refreshClockFn) ProcessElement(ctx context.Context, _ beam.EventTime, tp timers.Provider, _ int, _ int64, _ func(beam.EventTime, int64)) {
	now := time.Now().UnixMilli()
	fn.set(tp, now-now%fn.IntervalMs)
}

func (fn *refreshClockFn) OnTimer(ctx context.Context, ts beam.EventTime, tp timers.Provider, _ int, _ timers.Context, emit func(beam.EventTime, int64)) {
	tick := int64(ts)
	emit(ts, tick)
	next := tick + fn.IntervalMs
	now := time.Now().UnixMilli()
	if aligned := now - now%fn.IntervalMs; next < aligned {
		log.Infof(ctx, "s3io: the refresh clock missed %d refresh(es) since %v (the job was down or stalled); the next is at %v",
			(aligned-next)/fn.IntervalMs, time.UnixMilli(next).UTC(), time.UnixMilli(aligned).UTC())
		next = aligned
	}
	fn.set(tp, next)
}

// set arms the timer for the refresh at t (Unix milliseconds), holding the output
// watermark there, unless the schedule ends before it.
func (fn *refreshClockFn) set(tp timers.Provider, t int64) {
	if last := fn.lastTick(); last != 0 && t > last {
		return
	}
	at := time.UnixMilli(t)
	fn.Tick.Set(tp, at, timers.WithOutputTimestamp(at))
}

// lastTick is the time of the last refresh of a schedule with an end: refreshes fall at
// multiples of the interval t with t+interval <= end. Zero without an end.
func (fn *refreshClockFn) lastTick() int64 {
	if fn.EndMs == 0 {
		return 0
	}
	return fn.EndMs/fn.IntervalMs*fn.IntervalMs - fn.IntervalMs
}

// refreshTicks is the refresh clock: a PCollection<int64> of refresh times (Unix
// milliseconds), each timestamped with its value.
func refreshTicks(s beam.Scope, intervalMs, endMs int64) beam.PCollection {
	s = s.Scope("s3io.refreshClock")
	seed := beam.ParDo(s, &clockKeeperFn{EndMs: endMs}, beam.Impulse(s))
	return beam.ParDo(s, &refreshClockFn{IntervalMs: intervalMs, EndMs: endMs, Tick: timers.InProcessingTime("tick")}, seed)
}
