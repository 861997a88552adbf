// Package bigobject reads one large uncompressed NDJSON object and checks memory. It is a
// package of its own so that the test binary's peak RSS belongs to this test alone.
package bigobject

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/bigdata"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// objectBytes is the object's size; its records are bigdata.Line's, about 200 bytes each.
const objectBytes = 1 << 30

// A 1 GiB uncompressed NDJSON object is planned as 16 segments of 64 MiB that prism reads in
// parallel; every record arrives exactly once, and the process stays small.
func TestOneGiBObjectInSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 1 GiB")
	}
	g := versitygw.Start(t)
	g.CreateBucket(t, "big")
	path := filepath.Join(t.TempDir(), "big.ndjson")
	records := bigdata.WriteFile(t, path, objectBytes, false)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("big"), Key: aws.String("data/big.ndjson"), Body: f}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.Remove(path)

	p, s := beam.NewPipelineWithRoot()
	recs := s3io.Read(s, s3io.Config{Bucket: "big", Prefix: "data/", Endpoint: g.URL, UsePathStyle: true, Framer: "ndjson"})
	bigdata.CheckExactlyOnce(s, recs, records, false)
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	t.Logf("%d records; counters %v", records, c)
	if c["records"] != records || c["segments_planned"] < 16 || c["restrictions_read"] < 16 {
		t.Errorf("records %d (want %d), segments_planned %d and restrictions_read %d (want >= 16)", c["records"], records, c["segments_planned"], c["restrictions_read"])
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	peak := ru.Maxrss << 10 // kilobytes on Linux
	t.Logf("peak RSS %d MiB", peak>>20)
	if peak >= 256<<20 && !raceDetector {
		t.Errorf("peak RSS %d MiB, want < 256 MiB while reading a 1 GiB object", peak>>20)
	}
}
