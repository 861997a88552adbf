package integration

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.Function1x2(descriptorJSON)
}

func descriptorJSON(d s3io.SplitDescriptor) (string, error) {
	b, err := json.Marshal(d)
	return string(b), err
}

// TestReadOnVersityGW reads a mixed prefix from a real S3 server process with s3io.Read on
// prism and compares the exact multiset of records.
func TestReadOnVersityGW(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "mixed")
	var want []string
	add := func(key string, data []byte, recs ...string) {
		g.Put(t, "mixed", key, data)
		want = append(want, recs...)
	}
	for i := 0; i < 1100; i++ { // more than one ListObjectsV2 page
		text, recs := s3test.NDJSON(fmt.Sprintf("small-%d", i), 2)
		add(fmt.Sprintf("in/small/%04d.ndjson", i), []byte(text), recs...)
	}
	p, pRecs := s3test.NDJSON("plain", 5000)
	add("in/plain.ndjson", []byte(p), pRecs...)
	g1, r1 := s3test.NDJSON("gz-1", 3000)
	g2, r2 := s3test.NDJSON("gz-2", 2000)
	add("in/multi.ndjson.gz", s3test.Gzip(g1, g2), append(r1, r2...)...)
	z, zRecs := s3test.NDJSON("zstd", 4000)
	add("in/frames.ndjson.zst", s3test.Zstd(z), zRecs...)
	add("in/key with spaces ünïcødé.txt", []byte("a\r\nb\r\nno newline"), "a", "b", "no newline")
	add("in/empty.ndjson", nil)
	g.Put(t, "mixed", "out/not-read.txt", []byte("outside the prefix\n"))

	cfg := s3io.Config{Bucket: "mixed", Prefix: "in/", Endpoint: g.URL, UsePathStyle: true, SplitTargetBytes: 64 << 10}
	pl, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, s3test.RecordString, s3io.Read(s, cfg)), want)
	pr, err := ptest.RunWithMetrics(pl)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	if c["objects"] != 1105 || c["records"] != int64(len(want)) {
		t.Errorf("counters %v: want 1105 objects and %d records", c, len(want))
	}
	if c["splits_planned"] < 2 {
		t.Errorf("splits_planned = %d, want several with a 64 KiB target", c["splits_planned"])
	}
	// in/plain.ndjson (about 130 KB) is larger than the target, uncompressed and framed by
	// lines: it is read as two segments. The .gz and .zst objects stay whole.
	if c["segments_planned"] != 2 {
		t.Errorf("segments_planned = %d, want 2", c["segments_planned"])
	}
}

// TestPlanOnceReadLaterRefusesChanges plans, stores the descriptors, changes the bucket, and
// reads the stored descriptors: the overwritten and deleted objects must fail their pinned
// reads on a real server, and none of the new content may appear.
func TestPlanOnceReadLaterRefusesChanges(t *testing.T) {
	g := versitygw.Start(t)
	g.CreateBucket(t, "pinned")
	g.Put(t, "pinned", "p/overwritten.txt", []byte("old\n"))
	g.Put(t, "pinned", "p/deleted.txt", []byte("gone\n"))
	g.Put(t, "pinned", "p/stable.txt", []byte("stable\n"))
	cfg := s3io.Config{Bucket: "pinned", Prefix: "p/", Endpoint: g.URL, UsePathStyle: true, SplitTargetBytes: 1}

	planFile := filepath.Join(t.TempDir(), "plan.jsonl")
	pl, s := beam.NewPipelineWithRoot()
	textio.Write(s, planFile, beam.ParDo(s, descriptorJSON, s3io.Plan(s, cfg)))
	if err := ptest.Run(pl); err != nil {
		t.Fatalf("plan: %v", err)
	}
	var descs []s3io.SplitDescriptor
	for _, line := range s3test.ReadLines(t, planFile) {
		var d s3io.SplitDescriptor
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		descs = append(descs, d)
	}
	if len(descs) != 3 {
		t.Fatalf("planned %d descriptors, want one per object: %+v", len(descs), descs)
	}

	g.Put(t, "pinned", "p/overwritten.txt", []byte("NEW CONTENT\n"))
	g.Delete(t, "pinned", "p/deleted.txt")

	for _, d := range descs {
		d := d
		t.Run(d.Members[0].Key, func(t *testing.T) {
			pl, s := beam.NewPipelineWithRoot()
			recs := beam.ParDo(s, s3test.RecordString, s3io.ReadSplits(s, s3io.Config{Endpoint: g.URL, UsePathStyle: true}, beam.Create(s, d)))
			key := d.Members[0].Key
			if key == "p/stable.txt" {
				passert.Equals(s, recs, "stable")
				if err := ptest.Run(pl); err != nil {
					t.Fatalf("reading an unchanged object: %v", err)
				}
				return
			}
			err := ptest.Run(pl)
			if err == nil {
				t.Fatalf("reading %s succeeded after it changed", key)
			}
			want := map[string]string{"p/overwritten.txt": "PreconditionFailed", "p/deleted.txt": "NoSuchKey"}[key]
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), key) {
				t.Errorf("error should name %s and %s: %v", key, want, err)
			}
			if strings.Contains(err.Error(), "NEW CONTENT") {
				t.Errorf("new content leaked: %v", err)
			}
		})
	}
}
