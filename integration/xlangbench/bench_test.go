// Package xlangbench measures what the language boundary costs a read: the same prefix
// read through s3io by a Go pipeline and by a Python pipeline (cmd/s3io-expansion), on one
// prism job server, in one run.
//
//	go test -run '^$' -bench CrossLanguage -benchtime 3x -timeout 40m ./integration/xlangbench
package xlangbench

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/flinkcluster"
	"github.com/spate-io/beam-s3/internal/jobservers"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

// TestMain lets this binary serve as the Go pipeline's LOOPBACK worker.
func TestMain(m *testing.M) { ptest.Main(m) }

const (
	objects          = 8
	recordsPerObject = 125_000
)

// sizes is a record count and their bytes, as both pipelines report them.
type sizes struct{ Records, Bytes int64 }

func init() {
	beam.RegisterType(reflect.TypeOf((*sizes)(nil)).Elem())
	beam.RegisterFunction(recordSize)
	beam.RegisterFunction(addSizes)
	beam.RegisterFunction(formatSizes)
}

func recordSize(r []byte) sizes  { return sizes{1, int64(len(r))} }
func addSizes(a, b sizes) sizes  { return sizes{a.Records + b.Records, a.Bytes + b.Bytes} }
func formatSizes(s sizes) string { return fmt.Sprintf("%d %d", s.Records, s.Bytes) }

// seed stores the prefix: 8 objects of 125,000 NDJSON records (~140 bytes), half of them
// gzip-compressed; about 140 MB of records.
func seed(b *testing.B, g *versitygw.Gateway, bucket string) (want sizes) {
	rng := rand.New(rand.NewSource(1))
	for i := range objects {
		var buf bytes.Buffer
		for j := range recordsPerObject {
			n, _ := fmt.Fprintf(&buf, `{"obj":%d,"n":%d,"user":"u%06d","path":"/api/v1/items/%d","status":%d,"pad":"%s"}`,
				i, j, rng.Intn(1e6), rng.Intn(1e5), []int{200, 200, 200, 404, 500}[rng.Intn(5)], strings.Repeat("x", 20+rng.Intn(40)))
			buf.WriteByte('\n')
			want.Records++
			want.Bytes += int64(n)
		}
		key, data := fmt.Sprintf("bench/o%d.ndjson", i), buf.Bytes()
		if i%2 == 1 {
			key, data = key+".gz", s3test.Gzip(buf.String())
		}
		g.Put(b, bucket, key, data)
	}
	return want
}

func BenchmarkCrossLanguage(b *testing.B) {
	root := flinkcluster.RepoRoot()
	python := os.Getenv("S3IO_PYTHON")
	if python == "" {
		python = filepath.Join(root, ".cache", "beampy", "bin", "python")
	}
	if _, err := os.Stat(python); err != nil {
		b.Skipf("%v: .ci/run installs it", err)
	}
	// Built before versitygw.Start, which points HOME away from the Go build cache.
	dir := b.TempDir()
	for _, c := range []string{"s3io-expansion", "s3io-boot"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, c), "github.com/spate-io/beam-s3/cmd/"+c).CombinedOutput(); err != nil {
			b.Fatalf("build %s: %v\n%s", c, err, out)
		}
	}
	g := versitygw.Start(b)
	g.CreateBucket(b, "bench")
	want := seed(b, g, "bench")
	// One record under tiny/: what a Python job through s3io costs whatever it reads
	// (submission, the worker binary staged and started).
	g.Put(b, "bench", "tiny/one.ndjson", []byte("{\"one\":1}\n"))

	// The Go workers of the Python pipeline inherit prism's environment: the credentials
	// versitygw.Start put in this process's.
	jobEndpoint := jobservers.Prism(b)
	expPort := jobservers.FreePort(b)
	jobservers.Start(b, "s3io-expansion", exec.Command(filepath.Join(dir, "s3io-expansion"), fmt.Sprintf("--port=%d", expPort)), expPort, time.Minute)

	check := func(b *testing.B, out string) {
		got, err := os.ReadFile(out)
		if err != nil {
			b.Fatal(err)
		}
		if g := strings.TrimSpace(string(got)); g != formatSizes(want) {
			b.Fatalf("read %q, want %q", g, formatSizes(want))
		}
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(want.Records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		b.ReportMetric(float64(want.Bytes)*float64(b.N)/b.Elapsed().Seconds()/1e6, "MB/s")
	}
	b.Run("go", func(b *testing.B) {
		*jobopts.Endpoint, *jobopts.EnvironmentType = jobEndpoint, "LOOPBACK"
		for i := range b.N {
			out := filepath.Join(dir, fmt.Sprintf("go-%d.txt", i))
			p, s := beam.NewPipelineWithRoot()
			records := s3io.Read(s, s3io.Config{Bucket: "bench", Prefix: "bench/", Endpoint: g.URL, UsePathStyle: true})
			total := beam.Combine(s, addSizes, beam.ParDo(s, recordSize, records))
			writeFile(s, out, beam.ParDo(s, formatSizes, total))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			_, err := beam.Run(ctx, "universal", p)
			cancel()
			if err != nil {
				b.Fatal(err)
			}
			check(b, out)
		}
		report(b)
	})
	b.Run("python", func(b *testing.B) {
		for i := range b.N {
			out := filepath.Join(dir, fmt.Sprintf("py-%d.txt", i))
			runPython(b, python, "count.py", jobEndpoint, fmt.Sprintf("localhost:%d", expPort), g.URL, "bench", "bench/", out)
			check(b, out)
		}
		report(b)
	})
	b.Run("python-one-record", func(b *testing.B) {
		for i := range b.N {
			out := filepath.Join(dir, fmt.Sprintf("py-one-%d.txt", i))
			runPython(b, python, "count.py", jobEndpoint, fmt.Sprintf("localhost:%d", expPort), g.URL, "bench", "tiny/", out)
			if got, _ := os.ReadFile(out); strings.TrimSpace(string(got)) != "1 9" {
				b.Fatalf("read %q under tiny/, want 1 record of 9 bytes", got)
			}
		}
	})
	// The floor: the same count of records, made in Python, through a runner shuffle.
	b.Run("python-floor", func(b *testing.B) {
		avg := want.Bytes / want.Records
		for i := range b.N {
			out := filepath.Join(dir, fmt.Sprintf("floor-%d.txt", i))
			runPython(b, python, "floor.py", jobEndpoint, fmt.Sprint(want.Records), fmt.Sprint(avg), out)
			if got, _ := os.ReadFile(out); !strings.HasPrefix(string(got), fmt.Sprint(want.Records)+" ") {
				b.Fatalf("the floor made %q records, want %d", got, want.Records)
			}
		}
		report(b)
	})
}

// writeTo writes the one string it gets to Path, as the Python half's WriteToText does.
type writeTo struct{ Path string }

func (w *writeTo) ProcessElement(s string) error { return os.WriteFile(w.Path, []byte(s+"\n"), 0o644) }

func init() { beam.RegisterType(reflect.TypeOf((*writeTo)(nil)).Elem()) }

func writeFile(s beam.Scope, path string, line beam.PCollection) {
	beam.ParDo0(s, &writeTo{Path: path}, line)
}

// runPython runs testdata/script with python. Its TMPDIR is the benchmark's own: Python's
// Beam copies the staged worker binary (160 MB) there and does not always remove it.
func runPython(b *testing.B, python, script string, args ...string) {
	b.Helper()
	cmd := exec.Command(python, append([]string{filepath.Join("testdata", script)}, args...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+b.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("python %s: %v\n%s", script, err, out)
	}
}
