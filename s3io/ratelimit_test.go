package s3io_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// MaxRequestsPerSecond spaces a worker's requests, however many a reader keeps in flight:
// the n GETs the server sees arrive spread over at least n-2 intervals of 1/rate.
func TestMaxRequestsPerSecond(t *testing.T) {
	const objects, rate = 40, 50.0
	srv := s3test.New(t)
	srv.CreateBucket(t, "rps")
	var want []string
	for i := range objects {
		text, recs := s3test.NDJSON(fmt.Sprintf("o%02d", i), 3)
		srv.Put(t, "rps", fmt.Sprintf("k/%02d.ndjson", i), []byte(text))
		want = append(want, recs...)
	}
	cfg := s3io.Config{Bucket: "rps", Prefix: "k/", Endpoint: srv.URL, UsePathStyle: true, MaxRequestsPerSecond: rate}
	c := runRead(t, cfg, want)
	reqs := srv.Requests("")
	// A slowed read makes prism split it; a residual fetches again what its primary had
	// fetched ahead and dropped, so there may be more GETs than objects.
	if len(reqs) < objects || c["gets"] < int64(len(reqs)) {
		t.Fatalf("%d GETs seen by the server, %d counted; want at least %d seen, and all counted", len(reqs), c["gets"], objects)
	}
	at := make([]time.Time, len(reqs))
	for i, r := range reqs {
		at[i] = r.At
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	interval := time.Duration(float64(time.Second) / rate)
	// The limiter sends the n-th request no earlier than n intervals after the first; the
	// first one's own trip to the server is the only slack.
	if span, min := at[len(at)-1].Sub(at[0]), time.Duration(len(at)-2)*interval; span < min {
		t.Errorf("%d GETs arrived within %v; at %v/s they need at least %v", len(at), span, rate, min)
	}
}
