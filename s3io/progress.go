package s3io

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/sdf"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/s3io/internal/fetch"
)

// Progress lines. The Go SDK reports no progress of a splittable DoFn's work to a runner
// while a bundle runs, and Flink sees its counters only when a bundle ends, so a long read is
// opaque from outside (docs/design.md, "Progress lines"). Each worker process therefore logs
// what its reads did, through Beam's log package, which every runner shows with the
// worker's logs: a line at most every Config.ProgressInterval while it reads, and one when
// its reads end. A worker process runs many DoFn instances and bundles, and parts fetched
// for one instance are read by another (handover.go), so the reporter and its counts are
// the process's: the reads update atomic counters per claim run, framer batch and part,
// never per record, and a line reads them.

// progressQuiet is how long a worker must read nothing before its reads count as ended and
// it logs its last line. Shorter would make every bundle's end a line where a runner leaves a
// worker idle between bundles (Flink ends a bundle every second by default); longer would
// risk the line on a worker that is shut down soon after its last read.
const progressQuiet = 2 * time.Second

// maxProgressPlans bounds the plans one stretch of reads tracks: a streaming ReadAll may read
// a plan per element without ever being idle. The reads of plans past it are counted, but
// not in any plan's figures.
const maxProgressPlans = 64

// workerProgress is the process's reporter: every read of the worker process reports to it,
// whichever DoFn instance and bundle it runs in.
var workerProgress = newProgressReporter(time.Now, afterFunc, func(line string) { log.Info(context.Background(), line) }, fetch.ProcessReceived)

// afterFunc runs f after d on its own goroutine, and returns what stops it.
func afterFunc(d time.Duration, f func()) (stop func() bool) { return time.AfterFunc(d, f).Stop }

// progressReporter logs a worker process's progress lines. Its lines describe a session: the
// reads from the first one after the worker was idle to the last one before it is idle again
// (no read for quiet); a line's figures count from the session's start, so that a worker
// that reads a plan, idles and reads another (ReadContinuously's refreshes, or the tests of
// one process) says what each stretch did.
type progressReporter struct {
	// The process's counts since it started, updated by the reads without the lock.
	objects, decompressed, records, failures atomic.Int64
	fetched                                  func() int64 // stored bytes received (fetch.ProcessReceived)

	now   func() time.Time
	after func(time.Duration, func()) (stop func() bool)
	out   func(line string)
	quiet time.Duration // progressQuiet; under mu

	mu    sync.Mutex
	gen   int // counts sessions, so that a timer of an ended one does nothing
	open  bool
	reads map[*progressRead]struct{}
	// every is the shortest positive ProgressInterval of the session's reads; 0 when none
	// asked for lines.
	every         time.Duration
	began, lastAt time.Time      // the session's start, and its last line (or start)
	base, last    progressCounts // the counts at those times
	plans         map[planKey]*planProgress
	order         []planKey // plans in the order the session met them
	// betweenReads is set when the last line was logged while no read was open, so that
	// the session's end still logs its own line, though nothing changed since.
	betweenReads bool
	// stopTick and stopEnd cancel the pending periodic line, and the pending end of the
	// session; nil when none is pending.
	stopTick, stopEnd func() bool
}

// progressCounts are the process's counts at one time.
type progressCounts struct{ objects, fetched, decompressed, records, failures int64 }

func (c progressCounts) minus(d progressCounts) progressCounts {
	return progressCounts{c.objects - d.objects, c.fetched - d.fetched, c.decompressed - d.decompressed, c.records - d.records, c.failures - d.failures}
}

// planKey names a plan by what its descriptors carry: its bucket and totals. Two plans of one
// bucket with equal totals, read in one session, are counted as one.
type planKey struct {
	bucket         string
	objects, bytes int64
}

// planProgress is what the session's reads did of one plan: objects done, and the stored
// bytes of the restrictions they finished.
type planProgress struct{ objects, bytes atomic.Int64 }

// progressRead is one restriction being read, as the reporter knows it.
type progressRead struct {
	r    *progressReporter
	rt   *sdf.LockRTracker
	plan *planProgress // nil when the descriptor carries no plan totals
}

func newProgressReporter(now func() time.Time, after func(time.Duration, func()) func() bool, out func(string), fetched func() int64) *progressReporter {
	return &progressReporter{now: now, after: after, out: out, fetched: fetched, quiet: progressQuiet}
}

// begin registers the read of a restriction of d, tracked by rt, for a Config whose
// ProgressInterval is every (negative: it asks for no lines).
func (r *progressReporter) begin(every time.Duration, d SplitDescriptor, rt *sdf.LockRTracker) *progressRead {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if !r.open {
		r.openSession(now)
	}
	if r.stopEnd != nil {
		r.stopEnd()
		r.stopEnd = nil
	}
	if every > 0 && (r.every == 0 || every < r.every) {
		r.every = every
	}
	pr := &progressRead{r: r, rt: rt}
	if d.PlanObjects > 0 {
		k := planKey{bucket: d.Bucket, objects: d.PlanObjects, bytes: d.PlanBytes}
		p := r.plans[k]
		if p == nil && len(r.order) < maxProgressPlans {
			p = &planProgress{}
			r.plans[k] = p
			r.order = append(r.order, k)
		}
		pr.plan = p
	}
	r.reads[pr] = struct{}{}
	if every > 0 && (r.every == 0 || every < r.every) {
		r.every = every
	}
	if r.stopTick == nil && r.every > 0 {
		gen := r.gen
		r.stopTick = r.after(max(r.every-now.Sub(r.lastAt), 0), func() { r.tick(gen) })
	}
	return pr
}

// end unregisters pr; finished is set when its restriction was read to its end, and what the
// restriction held is then done. The last read of the session to end arms the line that
// ends it.
func (pr *progressRead) end(finished bool) {
	r := pr.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if finished && pr.plan != nil {
		pr.plan.bytes.Add(int64(pr.rt.GetRestriction().(restriction).size()))
	}
	delete(r.reads, pr)
	if len(r.reads) == 0 {
		gen := r.gen
		r.stopEnd = r.after(r.quiet, func() { r.ended(gen) })
	}
}

// objectDone counts an object whose last record pr's read read.
func (pr *progressRead) objectDone() {
	pr.r.objects.Add(1)
	if pr.plan != nil {
		pr.plan.objects.Add(1)
	}
}

func (r *progressReporter) openSession(now time.Time) {
	r.open = true
	r.reads = map[*progressRead]struct{}{}
	r.plans = map[planKey]*planProgress{}
	r.order = nil
	r.every = 0
	r.began, r.lastAt = now, now
	r.base = r.counts()
	r.last = r.base
}

// tick logs the periodic line of session gen, while it reads.
func (r *progressReporter) tick(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || !r.open {
		return
	}
	r.stopTick = nil
	if len(r.reads) == 0 {
		// Between two reads (Flink runs a bundle's restrictions one after the other, each
		// maybe shorter than the interval, and its next bundle may start before the
		// session's end line is due): log what they did, if anything. The next read arms
		// the tick again; the session's end still logs its line.
		if r.counts() != r.last {
			r.log(r.now(), false)
			r.betweenReads = true
		}
		return
	}
	r.log(r.now(), false)
	r.stopTick = r.after(r.every, func() { r.tick(gen) })
}

// ended logs the last line of session gen, if it read anything since its last line, and
// ends the session: nothing was read for r.quiet.
func (r *progressReporter) ended(gen int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gen != r.gen || !r.open || len(r.reads) > 0 {
		return
	}
	if r.every > 0 && (r.counts() != r.last || r.betweenReads) {
		r.log(r.now(), true)
	}
	if r.stopTick != nil {
		r.stopTick()
	}
	r.stopTick, r.stopEnd = nil, nil
	r.open, r.reads, r.plans, r.order = false, nil, nil, nil
	r.gen++
}

func (r *progressReporter) counts() progressCounts {
	return progressCounts{objects: r.objects.Load(), fetched: r.fetched(), decompressed: r.decompressed.Load(),
		records: r.records.Load(), failures: r.failures.Load()}
}

// log writes a line of the session as it stands at now.
func (r *progressReporter) log(now time.Time, ended bool) {
	cur := r.counts()
	r.betweenReads = false
	r.out(r.line(now, cur, ended))
	r.last, r.lastAt = cur, now
}

// line formats the session's line. Every figure is of this worker process's reads since the
// session began. The ETA is of the restrictions the worker is reading, at the rate it fetched
// over the last interval: the plan's remaining bytes are read by workers it does not see,
// at rates it does not know (docs/design.md, "Progress lines").
func (r *progressReporter) line(now time.Time, cur progressCounts, ended bool) string {
	var b strings.Builder
	b.WriteString("s3io: worker progress")
	if ended {
		b.WriteString(", reads ended")
	}
	d := cur.minus(r.base)
	fmt.Fprintf(&b, ": %d objects done, %d stored bytes fetched, %d bytes decompressed, %d records, %d failures", d.objects, d.fetched, d.decompressed, d.records, d.failures)
	since, all := now.Sub(r.lastAt), now.Sub(r.began)
	recent := mbPerSecond(cur.fetched-r.last.fetched, since)
	fmt.Fprintf(&b, "; %.1f MB/s over the last %v, %.1f MB/s over %v", recent, roundDuration(since), mbPerSecond(d.fetched, all), roundDuration(all))

	// What the reads in progress hold: read so far (by plan) and left.
	readBy := map[*planProgress]int64{}
	var left float64
	for pr := range r.reads {
		done, rem := pr.rt.GetProgress()
		left += rem
		if pr.plan != nil {
			readBy[pr.plan] += int64(done)
		}
	}
	if len(r.order) > 0 {
		var objects, planObjects, bytes, planBytes int64
		for _, k := range r.order {
			p := r.plans[k]
			objects += p.objects.Load()
			bytes += p.bytes.Load() + readBy[p]
			planObjects += k.objects
			planBytes += k.bytes
		}
		share := 100.0
		if planBytes > 0 {
			share = 100 * float64(bytes) / float64(planBytes)
		} else if planObjects > 0 {
			share = 100 * float64(objects) / float64(planObjects)
		}
		plan := "plan"
		if len(r.order) > 1 {
			plan = fmt.Sprintf("%d plans", len(r.order))
		}
		fmt.Fprintf(&b, "; %s: %d of %d objects and %d of %d stored bytes read here (%.1f %%)", plan, objects, planObjects, bytes, planBytes, share)
	}
	if n := len(r.reads); n > 0 {
		held := "the restriction"
		if n > 1 {
			held = fmt.Sprintf("the %d restrictions", n)
		}
		if recent > 0 {
			eta := time.Duration(left / (recent * 1e6) * float64(time.Second))
			fmt.Fprintf(&b, "; eta %v for %s it is reading (%.0f stored bytes left at %.1f MB/s)", roundDuration(eta), held, left, recent)
		} else {
			fmt.Fprintf(&b, "; no eta for %s it is reading (%.0f stored bytes left): nothing fetched over the last %v", held, left, roundDuration(since))
		}
	}
	return b.String()
}

// mbPerSecond is n bytes over d in MB/s (10^6 bytes), 0 over no time.
func mbPerSecond(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / 1e6 / d.Seconds()
}

// roundDuration rounds d for a line: to the second, or to the millisecond below one.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
