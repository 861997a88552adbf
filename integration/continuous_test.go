package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function2x0(collectWatched)
	register.Function1x0(collectWatchFailure)
}

// watched collects what a continuous read emits. The pipeline runs on prism's loopback
// workers, inside the test process, so a package variable is how the test sees the output
// of an unbounded pipeline while it runs.
var watched struct {
	sync.Mutex
	records  []string // "record@event time in Unix ms"
	failures []string
}

func collectWatched(ts beam.EventTime, rec []byte) {
	watched.Lock()
	defer watched.Unlock()
	watched.records = append(watched.records, fmt.Sprintf("%s@%d", rec, int64(ts)))
}

func collectWatchFailure(f s3io.Failure) {
	watched.Lock()
	defer watched.Unlock()
	watched.failures = append(watched.failures, f.String())
}

// TestReadContinuously watches a prefix on versitygw through three refreshes that each see
// the prefix changed: objects added, overwritten and deleted. Every version of every object
// is stored before the pipeline starts, and the proxy answers the k-th LIST (the k-th refresh:
// a prefix this small lists in one request) with the k-th state (faultproxy.States), so what
// each refresh sees depends neither on timing nor on how the runner bundles the refreshes.
// Every object version is read exactly once, each record carries its object's LastModified
// as event time, and the counters say what the refreshes found.
func TestReadContinuously(t *testing.T) {
	g := versitygw.Start(t)
	p := faultproxy.New(t, g.URL)
	p.Credentials = aws.Credentials{AccessKeyID: versitygw.AccessKey, SecretAccessKey: versitygw.SecretKey}
	g.CreateBucket(t, "watch")
	watched.Lock()
	watched.records, watched.failures = nil, nil
	watched.Unlock()

	var want []string            // every record of every version, with its event time
	etags := map[string]string{} // stored key → ETag
	// version stores key's version-th version as in/KEY.vVERSION and returns that key.
	version := func(key string, version int) string {
		var b strings.Builder
		for i := range 3 {
			fmt.Fprintf(&b, "%s v%d line %d\n", key, version, i)
		}
		stored := fmt.Sprintf("in/%s.v%d", key, version)
		g.Put(t, "watch", stored, []byte(b.String()))
		head, err := g.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("watch"), Key: aws.String(stored)})
		if err != nil {
			t.Fatal(err)
		}
		etags[stored] = aws.ToString(head.ETag)
		for i := range 3 {
			want = append(want, fmt.Sprintf("%s v%d line %d@%d", key, version, i, head.LastModified.UnixMilli()))
		}
		return stored
	}
	a1, b1, c1, keep, d1, b2, e1, a2 := version("a", 1), version("b", 1), version("c", 1), version("keep", 1),
		version("d", 1), version("b", 2), version("e", 1), version("a", 2)
	var states faultproxy.States
	etag := func(stored string) string { return etags[stored] }
	states.Add(map[string]string{"in/a": a1, "in/b": b1, "in/c": c1, "in/keep": keep}, etag)
	// d added, b overwritten, c deleted.
	states.Add(map[string]string{"in/a": a1, "in/b": b2, "in/keep": keep, "in/d": d1}, etag)
	// e added, a overwritten; later refreshes list this state unchanged.
	states.Add(map[string]string{"in/a": a2, "in/b": b2, "in/keep": keep, "in/d": d1, "in/e": e1}, etag)
	p.RewriteList, p.StoredKey = states.Rewrite, states.StoredKey
	const refreshes = 3

	// Refreshes run at the interval, whenever prism gets to them; a refresh held up for about
	// an interval can have prism fire the previous refresh's forget timers first
	// (docs/design.md, "Watching a prefix"), and three seconds keeps a loaded machine clear
	// of that.
	interval := 3 * time.Second
	pl, s := beam.NewPipelineWithRoot()
	cfg := s3io.Config{Bucket: "watch", Prefix: "in/", Endpoint: p.URL, UsePathStyle: true}
	records, failures := s3io.ReadContinuouslyWithFailures(s, cfg, interval, time.Now().Add(6*interval))
	beam.ParDo0(s, collectWatched, records)
	beam.ParDo0(s, collectWatchFailure, failures)
	type result struct {
		pr  beam.PipelineResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		pr, err := beam.Run(context.Background(), "prism", pl)
		done <- result{pr, err}
	}()

	var res result
	select {
	case res = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the continuous read did not end 3 minutes after its schedule did")
	}
	if res.err != nil {
		t.Fatalf("pipeline failed: %v", res.err)
	}
	watched.Lock()
	got, fails := slices.Clone(watched.records), slices.Clone(watched.failures)
	watched.Unlock()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("records (with event times) differ from every version's records once:\ngot  %q\nwant %q", got, want)
	}
	if len(fails) != 0 {
		t.Errorf("failures: %q", fails)
	}
	c := s3test.Counters(res.pr, s3io.MetricsNamespace)
	if lists := len(p.Lists()); c["refreshes"] < refreshes || int64(lists) != c["refreshes"] || states.Lists() != lists {
		t.Errorf("refreshes = %d with %d LIST requests (%d answered with a state); want at least %d, one LIST each",
			c["refreshes"], lists, states.Lists(), refreshes)
	}
	// New: a, b, c, keep, d, e. Changed: b, a. Gone: c, noticed by refresh 2. Unchanged:
	// every other sighting.
	if c["objects_new"] != 6 || c["objects_changed"] != 2 || c["objects_gone"] != 1 || c["objects_unchanged"] < 8 {
		t.Errorf("objects_new = %d, objects_changed = %d, objects_gone = %d, objects_unchanged = %d; want 6, 2, 1 and at least 8",
			c["objects_new"], c["objects_changed"], c["objects_gone"], c["objects_unchanged"])
	}
	if c["objects"] != 8 || c["records"] != int64(len(want)) {
		t.Errorf("objects = %d, records = %d; want 8 reads and %d records", c["objects"], c["records"], len(want))
	}
}
