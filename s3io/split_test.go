package s3io_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// prism asks for a split at 0.5 when an element makes no progress for two polls (~300 ms):
// a GET that stalls inside a descriptor is split while it is being read.
func TestPrismSplitsAStalledRead(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objects int
		// stalled is the object whose body pauses mid-way.
		stalled string
		check   func(t *testing.T, c map[string]int64)
	}{
		{
			// Several members: the split lands on a member boundary.
			name: "members", objects: 6, stalled: "d/obj-0.txt",
			check: func(t *testing.T, c map[string]int64) {
				if c["restrictions_read"] < 2 {
					t.Errorf("restrictions_read = %d: prism did not split the descriptor", c["restrictions_read"])
				}
			},
		},
		{
			// One large member: the split lands on a record inside it, and the residual
			// resumes at the last record boundary the primary reported.
			name: "one member", objects: 1, stalled: "d/obj-0.txt",
			check: func(t *testing.T, c map[string]int64) {
				if c["restrictions_read"] < 2 || c["resumed_reads"] < 1 {
					t.Errorf("restrictions_read = %d, resumed_reads = %d: want a split inside the member and a resumed read", c["restrictions_read"], c["resumed_reads"])
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := s3test.New(t)
			srv.CreateBucket(t, "split")
			var want []string
			for i := 0; i < tc.objects; i++ {
				var b strings.Builder
				for j := 0; j < 20000; j++ {
					r := fmt.Sprintf("obj %d line %05d %s", i, j, strings.Repeat("z", j%50))
					b.WriteString(r + "\n")
					want = append(want, r)
				}
				srv.Put(t, "split", fmt.Sprintf("d/obj-%d.txt", i), []byte(b.String()))
			}
			// The fourth 128 KiB part stalls: the records of the three before it are emitted
			// (and claimed) while it is awaited.
			srv.SetFault(tc.stalled, fmt.Sprintf("bytes=%d-", 3*128<<10), 1, faultproxy.Fault{Stall: 1500 * time.Millisecond})
			cfg := s3io.Config{Bucket: "split", Prefix: "d/", Endpoint: srv.URL, UsePathStyle: true,
				SplitTargetBytes: 1 << 30, InitialSplitBytes: 1 << 30, PartBytes: 128 << 10}
			p, s := beam.NewPipelineWithRoot()
			passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)), want)
			pr, err := ptest.RunWithMetrics(p)
			if err != nil {
				t.Fatalf("pipeline failed: %v", err)
			}
			c := s3test.Counters(pr, s3io.MetricsNamespace)
			if c["records"] != int64(len(want)) {
				t.Errorf("records = %d, want %d", c["records"], len(want))
			}
			t.Logf("counters: %v", c)
			tc.check(t, c)
		})
	}
}

// An object larger than SplitTargetBytes, stored plain and framed by lines, is read as
// segments, each its own descriptor; ReadWithPositions gives every record one identity.
func TestSegmentsAndPositions(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "seg")
	var b strings.Builder
	var want []string
	for j := 0; j < 30000; j++ {
		r := fmt.Sprintf(`{"line":%d,"pad":"%s"}`, j, strings.Repeat("p", j%97))
		b.WriteString(r + "\n")
		want = append(want, fmt.Sprintf("big.ndjson|%s", r))
	}
	srv.Put(t, "seg", "big.ndjson", []byte(b.String()))
	srv.Put(t, "seg", "small.ndjson.gz", nil)
	cfg := s3io.Config{Bucket: "seg", Endpoint: srv.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: 256 << 10}

	p, s := beam.NewPipelineWithRoot()
	recs := s3io.ReadWithPositions(s, cfg)
	passert.EqualsList(s, beam.ParDo(s, keyAndData, recs), want)
	// Identities are unique: (split, member, index) never repeats.
	ids := beam.ParDo(s, recordID, recs)
	passert.Count(s, beam.DropValue(s, beam.CombinePerKey(s, sumInts, beam.ParDo(s, withOne, ids))), "distinct ids", len(want))
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	size := int64(b.Len())
	wantSegs := (size + (256 << 10) - 1) / (256 << 10)
	if c["segments_planned"] != wantSegs || c["splits_planned"] < wantSegs {
		t.Errorf("segments_planned = %d, splits_planned = %d; want %d segments, each its own split", c["segments_planned"], c["splits_planned"], wantSegs)
	}
	if c["objects"] != 2 {
		t.Errorf("objects = %d, want 2 (segments of one object count once)", c["objects"])
	}
	// Each segment reads its own range plus at most the record straddling its end, and the
	// byte before its start.
	if over := c["raw_bytes"] - size; over < 0 || over > wantSegs*(1+64<<10) {
		t.Errorf("raw_bytes = %d for %d stored bytes: segments overlap by %d", c["raw_bytes"], size, over)
	}
}

func keyAndData(r s3io.Record) string { return r.Key + "|" + string(r.Data) }

func recordID(r s3io.Record) string { return fmt.Sprintf("%s/%d/%d", r.SplitID, r.Member, r.Index) }

func withOne(s string) (string, int) { return s, 1 }

func sumInts(a, b int) int { return a + b }
