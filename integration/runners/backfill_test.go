package runners

import (
	"bytes"
	"flag"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/spate-io/beam-s3/internal/netshape"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// The backfill drill's size, pace and progress interval. CI reads a million records through
// connections paced to 0.15 MB/s, so that the read lasts several of its 2 s progress
// intervals; docs/deploy.md gives the command for the 24 M-record backfill at S3's
// 90 MB/s per connection with the default 30 s lines:
//
//	go test -run TestFlinkBackfill -timeout 30m -v ./integration/runners -args -backfill-records=24000000 -backfill-mbps=90 -backfill-progress=30s
var (
	backfillRecords  = flag.Int("backfill-records", 1_000_000, "how many records TestFlinkBackfill seeds and reads")
	backfillMBps     = flag.Float64("backfill-mbps", 0.15, "TestFlinkBackfill's pace of each S3 connection, in MB/s (after 30 ms to the first byte)")
	backfillProgress = flag.Duration("backfill-progress", 2*time.Second, "TestFlinkBackfill's Config.ProgressInterval")
)

func init() {
	register.Function1x2(recordHash)
	register.Function2x1(formatSum)
}

// recordHash keys a record of the backfill's objects by its object (the text up to the
// first comma, `{"o":12`) and gives its FNV-1a hash. Summed per object (a lifted combine,
// so the sums are taken in the worker before any shuffle), the hashes are a multiset
// digest: a lost or duplicated record changes its object's sum.
func recordHash(rec []byte) (string, int64) {
	obj, _, _ := bytes.Cut(rec, []byte{','})
	return string(obj), int64(fnv1a(rec))
}

// fnv1a is FNV-1a (hash/fnv's New64a) over b, without a hash.Hash per record.
func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func formatSum(obj string, sum int64) string { return fmt.Sprintf("%s\t%d", obj, sum) }

// progressLine is a worker's progress line in a TaskManager's log, with Flink's time of day.
var progressLine = regexp.MustCompile(`^(\d\d:\d\d:\d\d),\d+ .*(s3io: worker progress.*)$`)

// overall is a progress line's time since the worker's reads began ("3.3 MB/s over 31s").
var overall = regexp.MustCompile(`MB/s over ([0-9hms.]+)(;|$)`)

// TestFlinkBackfill reads a large prefix (--backfill-records NDJSON records in 24 plain,
// gzip and zstd objects, through shaped connections) on the session cluster at parallelism 2, checks every record
// arrived exactly once (per-object multiset digests), and shows the progress lines each
// TaskManager's Go worker logged: how often, with the plan's totals and an ETA.
func TestFlinkBackfill(t *testing.T) {
	g := versitygw.Start(t)
	c := startSessionCluster(t)
	g.CreateBucket(t, "backfill")
	const objects = 24
	want := map[string]int64{}
	var stored int64
	seeded := time.Now()
	for o := 0; o < objects; o++ {
		var b bytes.Buffer
		key := fmt.Sprintf(`{"o":%d`, o)
		for i := o; i < *backfillRecords; i += objects {
			start := b.Len()
			fmt.Fprintf(&b, `%s,"i":%d,"user":"u%05d","kind":"%s"}`, key, i, i%99991, []string{"view", "click", "buy"}[i%3])
			want[key] += int64(fnv1a(b.Bytes()[start:]))
			b.WriteByte('\n')
		}
		data, name := b.Bytes(), fmt.Sprintf("events/part-%02d.ndjson", o)
		switch o % 3 {
		case 1:
			data, name = s3test.Gzip(b.String()), name+".gz"
		case 2:
			data, name = s3test.Zstd(b.String()), name+".zst"
		}
		stored += int64(len(data))
		g.Put(t, "backfill", name, data)
	}
	t.Logf("seeded %d records in %d objects, %d stored bytes, in %v", *backfillRecords, objects, stored, time.Since(seeded).Round(time.Millisecond))

	shaped, err := netshape.New(g.URL, netshape.Shape{BytesPerSecond: *backfillMBps * 1e6})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shaped.Close() })
	shaped.SetShaping(true)
	cfg := s3io.Config{Bucket: "backfill", Prefix: "events/", Endpoint: shaped.URL, UsePathStyle: true,
		SplitTargetBytes: max(stored/16, 1<<20), ProgressInterval: *backfillProgress}
	out := filepath.Join(t.TempDir(), "sums.txt")
	p, s := beam.NewPipelineWithRoot()
	sums := stats.SumPerKey(s, beam.ParDo(s, recordHash, s3io.Read(s, cfg)))
	textio.Write(s, out, beam.ParDo(s, formatSum, sums))
	started := time.Now()
	pr, err := c.submit(t, p, 25*time.Minute)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	took := time.Since(started)
	got := map[string]int64{}
	for _, l := range s3test.ReadLines(t, out+"*") {
		k, v, _ := strings.Cut(l, "\t")
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("output line %q: %v", l, err)
		}
		got[k] = n
	}
	if !maps.Equal(got, want) {
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if got[k] != want[k] {
				t.Errorf("object %s: digest %d, want %d", k, got[k], want[k])
			}
		}
		t.Fatalf("the records read are not the seeded ones (%d objects' digests, want %d)", len(got), len(want))
	}
	counters := s3test.Counters(pr, s3io.MetricsNamespace)
	if counters["records"] != int64(*backfillRecords) {
		t.Errorf("records counter %d, want %d", counters["records"], *backfillRecords)
	}
	t.Logf("job %q: all %d records exactly once in %v (%.0f records/s, %.1f MB/s of stored bytes; %d object GETs, at most %d in flight); counters %v",
		pr.JobID(), *backfillRecords, took.Round(time.Millisecond), float64(*backfillRecords)/took.Seconds(), float64(stored)/1e6/took.Seconds(), shaped.Gets(), shaped.MaxInFlight(), counters)
	tms := c.readVertexTaskManagers(t)
	if len(tms) != 2 {
		t.Errorf("the read ran on %d TaskManager(s) (%v), want a subtask on each of the 2", len(tms), tms)
	}

	// Each worker's progress lines: the longest gap between two of them, and whether they
	// carry the plan's totals and an ETA. Gaps are reported, not judged (the machine's load
	// stretches them); a worker whose reads lasted two intervals must have said, while it
	// read, when it would be done.
	withPlan := 0
	for i := 0; i < 2; i++ {
		var times []time.Time
		var lines []string
		var read time.Duration // how long the worker's reads lasted, by its last line
		withETA := 0
		for _, l := range strings.Split(c.TaskManagerLog(i), "\n") {
			m := progressLine.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			at, _ := time.Parse("15:04:05", m[1])
			times = append(times, at)
			lines = append(lines, m[0])
			if strings.Contains(m[2], "plan: ") {
				withPlan++
			}
			if strings.Contains(m[2], "; eta ") {
				withETA++
			}
			if o := overall.FindStringSubmatch(m[2]); o != nil {
				if d, err := time.ParseDuration(o[1]); err == nil {
					read = max(read, d)
				}
			}
		}
		var gap time.Duration
		for j := 1; j < len(times); j++ {
			gap = max(gap, times[j].Sub(times[j-1]))
		}
		t.Logf("taskmanager%d: reads lasted %v; %d progress lines, longest gap %v (interval %v)", i, read, len(lines), gap, *backfillProgress)
		for _, l := range lines {
			t.Logf("taskmanager%d: %s", i, l)
		}
		if read >= 2**backfillProgress && withETA == 0 {
			t.Errorf("taskmanager%d's worker read for %v, two intervals of %v, and logged no line with an ETA", i, read, *backfillProgress)
		}
	}
	if withPlan == 0 {
		t.Errorf("no worker logged a progress line with the plan's totals")
	}
	c.waitClean(t)
}
