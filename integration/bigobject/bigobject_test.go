// Package bigobject reads one large uncompressed NDJSON object and checks memory. It is a
// package of its own so that the test binary's peak RSS belongs to this test alone.
package bigobject

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func TestMain(m *testing.M) { ptest.Main(m) }

func init() {
	register.DoFn3x1[context.Context, []byte, func([]byte), error](&checkFn{})
	register.Emitter1[[]byte]()
	register.Combiner2[[]byte, string](&bitsetCombine{})
}

// objectBytes and the record layout: record i is line(i), about 200 bytes.
const objectBytes = 1 << 30

func line(i int64) string {
	pad := 150 + int(i*7919%90)
	b := make([]byte, 0, 260)
	b = append(b, `{"i":`...)
	b = strconv.AppendInt(b, i, 10)
	b = append(b, `,"pad":"`...)
	for j := 0; j < pad; j++ {
		b = append(b, byte('a'+(i+int64(j))%26))
	}
	return string(append(b, `"}`...))
}

// writeObject writes records until the file holds at least objectBytes, returning the count.
func writeObject(t *testing.T, path string) int64 {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n, size int64
	for size < objectBytes {
		l := line(n)
		w.WriteString(l)
		w.WriteByte('\n')
		size += int64(len(l)) + 1
		n++
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return n
}

// checkFn verifies each record against the generator and marks its index in a per-bundle
// bitset, emitted at the end of the bundle: the exact multiset check costs no per-record
// element downstream.
type checkFn struct {
	Records int64
	seen    []byte
}

func (fn *checkFn) StartBundle(context.Context, func([]byte)) { fn.seen = nil }

func (fn *checkFn) ProcessElement(ctx context.Context, rec []byte, _ func([]byte)) error {
	var i int64
	if _, err := fmt.Sscanf(string(rec[:min(len(rec), 24)]), `{"i":%d,`, &i); err != nil || i < 0 || i >= fn.Records || string(rec) != line(i) {
		return fmt.Errorf("unexpected record %.60q", rec)
	}
	if fn.seen == nil {
		fn.seen = make([]byte, 2*((fn.Records+7)/8)) // seen, then seen twice
	}
	half := len(fn.seen) / 2
	if fn.seen[i/8]&(1<<(i%8)) != 0 {
		fn.seen[half+int(i/8)] |= 1 << (i % 8)
	}
	fn.seen[i/8] |= 1 << (i % 8)
	return nil
}

func (fn *checkFn) FinishBundle(_ context.Context, emit func([]byte)) {
	if fn.seen != nil {
		emit(fn.seen)
	}
}

// bitsetCombine ORs per-bundle bitsets and reports records missing and duplicated.
type bitsetCombine struct{ Records int64 }

func (c *bitsetCombine) MergeAccumulators(a, b []byte) []byte {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	half := len(a) / 2
	out := make([]byte, len(a))
	for i := 0; i < half; i++ {
		out[i] = a[i] | b[i]
		out[half+i] = a[half+i] | b[half+i] | (a[i] & b[i])
	}
	return out
}

func (c *bitsetCombine) ExtractOutput(a []byte) string {
	var missing, dup int64
	half := len(a) / 2
	for i := int64(0); i < c.Records; i++ {
		if half == 0 || a[i/8]&(1<<(i%8)) == 0 {
			missing++
		} else if a[half+int(i/8)]&(1<<(i%8)) != 0 {
			dup++
		}
	}
	return fmt.Sprintf("missing=%d duplicated=%d", missing, dup)
}

// A 1 GiB uncompressed NDJSON object is planned as 16 segments of 64 MiB that prism reads in
// parallel; every record arrives exactly once, and the process stays small.
func TestOneGiBObjectInSegments(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 1 GiB")
	}
	g := versitygw.Start(t)
	g.CreateBucket(t, "big")
	path := filepath.Join(t.TempDir(), "big.ndjson")
	records := writeObject(t, path)
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
	bitsets := beam.ParDo(s, &checkFn{Records: records}, recs)
	passert.Equals(s, beam.Combine(s, &bitsetCombine{Records: records}, bitsets), "missing=0 duplicated=0")
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
