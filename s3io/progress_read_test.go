package s3io_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime/harness"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/util/hooks"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// beamLog holds what Beam's log package was given in this process.
type beamLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *beamLog) Log(_ context.Context, _ log.Severity, _ int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, msg)
}

// matching returns the lines that start with prefix.
func (l *beamLog) matching(prefix string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, s := range l.lines {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// captureBeamLog sends what Beam's log package is given to the returned log for the rest of
// the test. A worker harness points the package at the runner's logging service when it
// starts (its default remote logging hook), so the hook is off meanwhile: prism's loopback
// workers run in this process, and their lines, the progress lines among them, come here.
func captureBeamLog(t *testing.T) *beamLog {
	hooks.DisableHook(harness.DefaultRemoteLoggingHook)
	l := &beamLog{}
	log.SetLogger(l)
	t.Cleanup(func() {
		log.SetLogger(&log.Structural{})
		if err := hooks.EnableHook(harness.DefaultRemoteLoggingHook); err != nil {
			t.Error(err)
		}
	})
	return l
}

// waitFor waits until cond holds, failing the test, naming what, if it does not within a
// minute: a bound for a hung test, not a measure of time.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after a minute", what)
		}
	}
}

var progressFigures = regexp.MustCompile(`: (\d+) objects done, (\d+) stored bytes fetched, (\d+) bytes decompressed, (\d+) records, (\d+) failures; .*; plan: (\d+) of (\d+) objects and (\d+) of (\d+) stored bytes read here`)

// A read on prism logs progress lines through Beam's log package with the plan's totals,
// and the line that ends its reads counts every object and record exactly, as read here,
// of the plan's.
func TestProgressLinesOnPrism(t *testing.T) {
	defer s3io.SetProgressQuiet(200 * time.Millisecond)()
	waitFor(t, "the reads of earlier tests to end their progress lines", s3io.ProgressIdle)
	logs := captureBeamLog(t)

	f := s3test.New(t)
	f.CreateBucket(t, "progress")
	var want []string
	var stored int64
	put := func(key string, data []byte, recs []string) {
		f.Put(t, "progress", key, data)
		want = append(want, recs...)
		stored += int64(len(data))
	}
	for i := range 30 {
		text, recs := s3test.NDJSON(fmt.Sprintf("small-%02d", i), 40)
		put(fmt.Sprintf("p/a-%02d.ndjson", i), []byte(text), recs)
	}
	text, recs := s3test.NDJSON("gzip", 3000)
	put("p/b.ndjson.gz", s3test.Gzip(text), recs)
	// Larger than SplitTargetBytes, plain: cut into segments, done once its last is read.
	text, recs = s3test.NDJSON("large", 20000)
	put("p/c-large.ndjson", []byte(text), recs)
	put("p/d-empty.txt", nil, nil)
	const objects = 33
	// A body that stalls keeps the read going for several intervals (and makes prism split
	// the descriptor that holds it).
	f.SetFault("p/b.ndjson.gz", "", 1, faultproxy.Fault{StallAt: 0.5, Stall: time.Second})

	cfg := s3io.Config{Bucket: "progress", Prefix: "p/", Endpoint: f.URL, UsePathStyle: true,
		MaxSplitMembers: 8, SplitTargetBytes: 256 << 10, ProgressInterval: 50 * time.Millisecond}
	c := runRead(t, cfg, want)
	if c["segments_planned"] < 2 {
		t.Fatalf("segments_planned = %d: the large object was not cut, and the test lost its segments", c["segments_planned"])
	}

	const ended = "s3io: worker progress, reads ended:"
	waitFor(t, "the line that ends the read's progress", func() bool { return len(logs.matching(ended)) > 0 })
	lines := logs.matching("s3io: worker progress")
	for _, l := range lines {
		t.Log(l)
	}
	if len(lines) < 2 {
		t.Errorf("%d progress lines, want a periodic one before the last", len(lines))
	}
	last := logs.matching(ended)
	if len(last) != 1 {
		t.Fatalf("%d lines end the read, want 1: %q", len(last), last)
	}
	m := progressFigures.FindStringSubmatch(last[0])
	if m == nil {
		t.Fatalf("the last line %q does not give the figures and the plan's totals", last[0])
	}
	n := func(i int) int64 {
		v, _ := strconv.ParseInt(m[i], 10, 64)
		return v
	}
	for _, check := range []struct {
		what      string
		got, want int64
	}{
		{"objects done", n(1), objects},
		{"records", n(4), int64(len(want))},
		{"failures", n(5), 0},
		{"plan's objects read here", n(6), objects},
		{"plan's objects", n(7), objects},
		{"plan's bytes read here", n(8), stored},
		{"plan's bytes", n(9), stored},
		{"records counter", c["records"], int64(len(want))},
	} {
		if check.got != check.want {
			t.Errorf("%s = %d, want %d", check.what, check.got, check.want)
		}
	}
	if fetched, decompressed := n(2), n(3); fetched < stored || decompressed < c["decompressed_bytes"] {
		t.Errorf("%d stored bytes fetched and %d decompressed; the objects hold %d, and the counter says %d were decompressed", fetched, decompressed, stored, c["decompressed_bytes"])
	}
}
