package runners

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/spate-io/beam-s3/internal/netshape"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/jobserver"
	"github.com/spate-io/beam-s3/s3io"
)

// watchMinutes is how long TestFlinkWatch runs. CI runs 3; docs/deploy.md gives the
// command for the 10-minute drill:
//
//	go test -run TestFlinkWatch -timeout 30m -v ./integration/runners -args -watch-minutes=10
var watchMinutes = flag.Float64("watch-minutes", 3, "how long TestFlinkWatch watches, in minutes")

func init() {
	register.DoFn2x1[context.Context, []byte, error](&appendLineFn{})
	beam.RegisterType(reflect.TypeOf((*appendLineFn)(nil)).Elem())
}

// appendLineFn appends each record, with the time it was written, to a file every worker on
// this host shares (one write(2) per line, with O_APPEND: lines never interleave).
type appendLineFn struct {
	Path string
	f    *os.File
}

func (fn *appendLineFn) Setup() (err error) {
	fn.f, err = os.OpenFile(fn.Path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	return err
}

func (fn *appendLineFn) ProcessElement(_ context.Context, rec []byte) error {
	_, err := fmt.Fprintf(fn.f, "%s\t%d\n", rec, time.Now().UnixMilli())
	return err
}

func (fn *appendLineFn) Teardown() error { return fn.f.Close() }

// seen reads the file appendLineFn writes: each record's write times, in file order.
func seen(t *testing.T, path string) map[string][]int64 {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rec, at, ok := strings.Cut(sc.Text(), "\t")
		var ms int64
		if _, err := fmt.Sscan(at, &ms); !ok || err != nil {
			continue // a line being written
		}
		out[rec] = append(out[rec], ms)
	}
	return out
}

// TestFlinkWatch runs ReadContinuously on the session cluster for --watch-minutes with a 5 s
// interval and checkpoints every 10 s, putting a new object every 7 s, and kills a
// TaskManager half-way. Every object put must be read, none lost, and its delay is
// reported against the target of interval + 3 s (the test fails only one that waited
// several refreshes); records read again after the kill must all have
// been read after the last checkpoint that completed before it; every checkpoint must
// complete; the TaskManagers' heap after a full collection at the end must be within 1.2x
// of theirs at a fifth of the run.
func TestFlinkWatch(t *testing.T) {
	run := time.Duration(*watchMinutes * float64(time.Minute))
	const interval = 5 * time.Second
	g := versitygw.Start(t)
	c := startSessionCluster(t)
	g.CreateBucket(t, "watch")
	put := func(key string) {
		var b strings.Builder
		for i := range 3 {
			fmt.Fprintf(&b, "%s line %d\n", key, i)
		}
		g.Put(t, "watch", key, []byte(b.String()))
	}
	for i := range 4 {
		put(fmt.Sprintf("in/seed-%d.txt", i))
	}
	out := filepath.Join(t.TempDir(), "records.tsv")
	p, s := beam.NewPipelineWithRoot()
	cfg := s3io.Config{Bucket: "watch", Prefix: "in/", Endpoint: g.URL, UsePathStyle: true}
	beam.ParDo0(s, &appendLineFn{Path: out}, s3io.ReadContinuously(s, cfg, interval, time.Time{}))

	oldAsync := *jobopts.Async
	*jobopts.Async = true
	defer func() { *jobopts.Async = oldAsync }()
	c.withProcessWorkers(t, func() {
		if _, err := jobserver.Run(context.Background(), p, jobserver.Options{
			"streaming": true, "checkpointing_interval": 10000,
			// A refresh's objects pass four stages; at Flink's default of a second per
			// bundle each can hold them that long.
			"max_bundle_time_mills": 250,
		}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	})
	jid := c.waitRunning(t, 3*time.Minute)
	defer c.cancel(t, jid)
	// The run starts once the watch is up: its first refresh has read the seed objects.
	up := time.Now().Add(3 * time.Minute)
	for len(seen(t, out)) < 4*3 {
		if time.Now().After(up) {
			t.Fatalf("the watch read %d of the 12 seed records in 3 minutes", len(seen(t, out)))
		}
		time.Sleep(200 * time.Millisecond)
	}
	start := time.Now()

	// Objects put during the run, and when.
	var mu sync.Mutex
	putAt := map[string]time.Time{}
	stopPuts := make(chan struct{})
	putsDone := make(chan struct{})
	go func() {
		defer close(putsDone)
		for n := 0; ; n++ {
			select {
			case <-stopPuts:
				return
			case <-time.After(7 * time.Second):
			}
			key := fmt.Sprintf("in/new-%03d.txt", n)
			put(key)
			mu.Lock()
			putAt[key] = time.Now()
			mu.Unlock()
		}
	}()

	var heapEarly, heapLate []int64
	var killedAt time.Time
	var lastCheckpointBeforeKill int64 // trigger time (ms) of the last checkpoint completed before the kill
	for time.Since(start) < run {
		time.Sleep(5 * time.Second)
		if heapEarly == nil && time.Since(start) >= run/5 {
			heapEarly = c.heapsAfterGC(t)
		}
		if killedAt.IsZero() && time.Since(start) >= run/2 {
			lastCheckpointBeforeKill = c.lastCompletedCheckpoint(t, jid)
			c.KillTaskManager(1)
			killedAt = time.Now()
			t.Logf("killed taskmanager1 at %v; the last checkpoint completed before was triggered at %v",
				killedAt.Sub(start).Round(time.Second), time.UnixMilli(lastCheckpointBeforeKill).Sub(start).Round(time.Second))
			c.StartTaskManager(1)
		}
	}
	heapLate = c.heapsAfterGC(t)
	close(stopPuts)
	<-putsDone
	// Let the last objects put be read.
	time.Sleep(interval + 5*time.Second)

	got := seen(t, out)
	mu.Lock()
	defer mu.Unlock()
	var late, lost []string
	var recovering int
	var worst time.Duration
	for key, at := range putAt {
		first := int64(0)
		for i := range 3 {
			times := got[fmt.Sprintf("%s line %d", key, i)]
			if len(times) == 0 {
				lost = append(lost, fmt.Sprintf("%s line %d", key, i))
				continue
			}
			if first == 0 || times[0] > first {
				first = times[0]
			}
		}
		if first == 0 {
			continue
		}
		lag := time.UnixMilli(first).Sub(at)
		if !killedAt.IsZero() && at.After(killedAt.Add(-interval)) && at.Before(c.recoveredAt(t, jid, killedAt)) {
			recovering++
			continue
		}
		worst = max(worst, lag)
		// The target is interval + 3 s, measured and reported (docs/performance.md); the
		// test fails only an object that waited for several refreshes, which no load
		// explains, so that a busy machine does not fail it on timing.
		if lag > 3*interval+10*time.Second {
			late = append(late, fmt.Sprintf("%s after %v", key, lag.Round(time.Millisecond)))
		}
	}
	sort.Strings(lost)
	sort.Strings(late)
	if len(lost) > 0 {
		t.Errorf("%d records of objects put during the run were never read: %q", len(lost), lost)
	}
	if len(late) > 0 {
		t.Errorf("objects read more than three refreshes after their put: %q", late)
	}
	t.Logf("%d objects put during the run; the slowest was read %v after its put (target: interval + 3 s = %v; %d put while the job recovered not counted); restored from a checkpoint %v after the kill",
		len(putAt), worst.Round(time.Millisecond), interval+3*time.Second, recovering, c.recoveredAt(t, jid, killedAt).Sub(killedAt).Round(100*time.Millisecond))

	// Read again after the kill: only what was read after the last completed checkpoint.
	var again, early []string
	for rec, times := range got {
		if len(times) < 2 {
			continue
		}
		again = append(again, rec)
		if times[0] < lastCheckpointBeforeKill {
			early = append(early, fmt.Sprintf("%s (first read %v before the checkpoint)", rec, time.UnixMilli(lastCheckpointBeforeKill).Sub(time.UnixMilli(times[0]))))
		}
	}
	if len(early) > 0 {
		t.Errorf("records read before the last completed checkpoint were read again after the kill: %q", early)
	}
	t.Logf("read again after the kill: %d of %d records, all first read after the last completed checkpoint", len(again), len(got))

	cp := c.checkpointStats(t, jid).Counts
	t.Logf("checkpoints: %+v", cp)
	// A checkpoint triggered while tasks deploy (at the start, and while the job restarts)
	// is refused before it begins, and the kill aborts the checkpoint in flight, if one was
	// (one at a time: the runner's default); any other failure is the watch's.
	if notRunning := c.checkpointsRefusedWhileDeploying(); cp.Failed > notRunning+1 {
		t.Errorf("%d checkpoint(s) failed, %d of them refused while tasks were deploying; the JobManager's reasons:\n%s",
			cp.Failed, notRunning, strings.Join(c.checkpointFailures(), "\n"))
	}
	if min := int(run/(10*time.Second)) / 2; cp.Completed < min {
		t.Errorf("%d checkpoints completed in %v, want at least %d", cp.Completed, run, min)
	}
	if cp.Restored < 1 {
		t.Errorf("the job was not restored from a checkpoint after the kill")
	}

	// The cluster's heap, both TaskManagers': after the kill the survivor runs the dead one's
	// tasks (its own heap grew 51 -> 64 MiB in a 3-minute run under load), and the one
	// started again may get none.
	sum := func(h []int64) int64 { return h[0] + h[1] }
	t.Logf("TaskManagers' heap in use after a full collection: %d + %d MiB at %v, %d + %d MiB at %v",
		heapEarly[0]>>20, heapEarly[1]>>20, run/5, heapLate[0]>>20, heapLate[1]>>20, run)
	if float64(sum(heapLate)) > 1.2*float64(sum(heapEarly)) {
		t.Errorf("the TaskManagers' heap after a collection grew from %d MiB to %d MiB (more than 1.2x)", sum(heapEarly)>>20, sum(heapLate)>>20)
	}
}

// TestFlinkWatchEnds runs ReadContinuously with an end time on the session cluster, in
// streaming mode with checkpoints. At its end the watch must stop (no request to S3 after
// its last refresh), having read every object, the one put while it watched included,
// exactly once, and checkpointed while it watched. The job then stays RUNNING: with
// checkpointing on, Beam's Flink runner keeps its Impulse sources running (its option
// shutdown_sources_after_idle_ms ends them, and the job, but then 7 of 8 checkpoints
// failed here), so the test stops it as an operator would, with a drain and a savepoint,
// and the job must finish.
func TestFlinkWatchEnds(t *testing.T) {
	const interval = 5 * time.Second
	g := versitygw.Start(t)
	c := startSessionCluster(t)
	g.CreateBucket(t, "watchend")
	put := func(key string) {
		g.Put(t, "watchend", key, []byte(fmt.Sprintf("%s line 0\n%s line 1\n", key, key)))
	}
	for i := range 3 {
		put(fmt.Sprintf("in/seed-%d.txt", i))
	}
	out := filepath.Join(t.TempDir(), "records.tsv")
	p, s := beam.NewPipelineWithRoot()
	counted, err := netshape.New(g.URL, netshape.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { counted.Close() })
	cfg := s3io.Config{Bucket: "watchend", Prefix: "in/", Endpoint: counted.URL, UsePathStyle: true}
	// Time for the job to deploy (20-60 s here), then a minute of watching.
	end := time.Now().Add(2 * time.Minute)
	beam.ParDo0(s, &appendLineFn{Path: out}, s3io.ReadContinuously(s, cfg, interval, end))

	oldAsync := *jobopts.Async
	*jobopts.Async = true
	defer func() { *jobopts.Async = oldAsync }()
	c.withProcessWorkers(t, func() {
		if _, err := jobserver.Run(context.Background(), p, jobserver.Options{
			"streaming": true, "checkpointing_interval": 10000, "max_bundle_time_mills": 250,
		}); err != nil {
			t.Fatalf("submit: %v", err)
		}
	})
	jid := c.waitRunning(t, 3*time.Minute)
	watchFrom := time.Now()
	deadline := end.Add(-2 * interval)
	for len(seen(t, out)) < 3*2 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	want := 3
	if time.Now().Before(deadline) {
		put("in/during.txt")
		want++
	} else {
		t.Logf("the watch read its seed objects only %v before its end: no object put while it watched", time.Until(end).Round(time.Second))
	}
	// After its end and a refresh's time, the watch sends nothing more.
	time.Sleep(time.Until(end.Add(2 * interval)))
	after := counted.Requests()
	time.Sleep(3 * interval)
	if n := counted.Requests() - after; n > 0 {
		t.Errorf("the watch sent %d requests to S3 between %v and %v after its end", n, 2*interval, 5*interval)
	}
	cp := c.checkpointStats(t, jid).Counts
	t.Logf("%d requests to S3 (%d object GETs) while it watched; checkpoints %+v", after, counted.Gets(), cp)
	if watched := end.Sub(watchFrom); cp.Completed < int(watched/(10*time.Second))/2 {
		t.Errorf("%d checkpoints completed in the %v the watch ran, want at least %d", cp.Completed, watched.Round(time.Second), int(watched/(10*time.Second))/2)
	}
	stopped := time.Now()
	c.stopWithDrain(t, jid)
	for state := ""; state != "FINISHED"; {
		var job struct {
			State string `json:"state"`
		}
		if err := c.GetJSON("/jobs/"+jid, &job); err == nil {
			state = job.State
		}
		switch {
		case state == "FAILED" || state == "CANCELED":
			t.Fatalf("the watch stopped with a drain ended %s, want FINISHED; exceptions: %q", state, c.failures(t))
		case time.Since(stopped) > 2*time.Minute:
			c.cancel(t, jid)
			t.Fatalf("the watch was still %s 2 minutes after its stop with a drain", state)
		}
		time.Sleep(time.Second)
	}
	t.Logf("stopped with a drain and a savepoint, the job finished in %v", time.Since(stopped).Round(100*time.Millisecond))
	got := seen(t, out)
	if len(got) != want*2 {
		t.Errorf("read %d distinct records, want %d: %v", len(got), want*2, got)
	}
	for rec, times := range got {
		if len(times) != 1 {
			t.Errorf("%q read %d times, want once", rec, len(times))
		}
	}
	c.waitClean(t)
}
