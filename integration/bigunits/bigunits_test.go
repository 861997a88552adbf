// Package bigunits reads compressed objects of 1 GiB of records made of units (gzip members,
// zstd frames), written by the command-line tools, as segments, and checks what the reads
// cost. Under the race detector, whose decoding is ~10x slower, the objects hold 96 MiB and
// the split target is scaled down with them.
package bigunits

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/spate-io/beam-s3/internal/bigdata"
	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
	"github.com/spate-io/beam-s3/s3io"
)

func TestMain(m *testing.M) { ptest.Main(m) }

// recordBytes and splitTarget: 1.25 GiB of records read with SplitTargetBytes 16 MiB (the
// issue asks for at least 1 GiB: zstd -1 stores 1 GiB of these records in 110 MB, under
// the 8 segments of 16 MiB the issue asks for, and the objects of spaced units are cut into
// segments of the whole target); 120 MiB and 1.5 MiB under the race detector.
func sizes() (recordBytes, splitTarget int64) {
	if raceDetector {
		return 120 << 20, 1536 << 10
	}
	return 5 << 28, 16 << 20
}

// pbzip2Block is pbzip2's -b, its streams' input in 100 kB: its default 9, or 1 under the
// race detector, whose 384 KiB segments would otherwise each read a 165 kB block past their
// end.
func pbzip2Block() int {
	if raceDetector {
		return 1
	}
	return 9
}

// chunkBytes is the plain input of each member or frame of the concatenated objects: 8 MiB
// at 1.25 GiB, scaled down with the records under the race detector.
func chunkBytes() int64 {
	size, _ := sizes()
	return size / 160
}

// maxFetched bounds the bytes the reads and the planner's probes fetch per stored byte, as
// the issue asks. A segment plans an eighth of its bytes, at most 64 KiB, past its end for
// the next unit's first record: 1.6 % of BGZF's 4 MiB segments, 0.4 % of the 16 MiB ones of
// spaced units. A bzip2 segment reads the next stream's whole first block for that record
// (a block yields nothing before its end), ~165 kB. The race build's run checks for races
// and exact records, not the bounds: its 384 KiB segments plan 12.5 % past their end, and
// what its fetch-ahead drops moves with its timing (pbzip2: 1.12× and 1.22× in two runs).
//
// The pipelines run with prism's dynamic splits on, as users run them: what a split hands to
// a residual (the members after the split point, fetched or being decoded, and the decoding
// of the member it stops inside) is handed over in the worker, not fetched again
// (s3io/handover.go), so the bound holds however prism splits.
const maxFetched = 1.05

// dataset writes the records once per test binary into dir and returns the plain file and
// how many records it holds.
func dataset(t *testing.T, dir string) (string, int64) {
	size, _ := sizes()
	path := filepath.Join(dir, "records.ndjson")
	return path, bigdata.WriteFile(t, path, size, true)
}

// sh runs a shell command in dir, failing t on error.
func sh(t *testing.T, dir, cmd string) {
	t.Helper()
	clitool.RunIn(t, dir, nil, "sh", "-c", cmd)
}

// put uploads the file at path as key.
func put(t *testing.T, g *versitygw.Gateway, bucket, key, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if _, err := g.Client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: f}); err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// unitObjects are the multi-unit objects, each made from the plain file by a tool: bgzip's
// BGZF, gzip and zstd outputs of 8 MiB chunks (chunkBytes) concatenated (cat a.gz b.gz …),
// pzstd, pbzip2 (a bzip2 stream per 900 kB), and the zstd seekable format (no Debian tool
// writes it: s3test.WriteZstdSeekable, from the format's specification).
//
// probes bounds what the planner's probes cost, per stored byte: a BGZF cut costs its first
// 64 KiB request (measured 1.6 %), the seekable object one suffix GET (and, like every
// object, the 64-192 KiB that decode its head to tell it from a tarball: 0.09 %). The
// members and frames of the others, ~0.2-1.3 MB apart, cost half that on average at each
// cut, so those objects are cut into segments of the whole target (measured 0.7-3.4 %).
var unitObjects = []struct {
	key    string
	probes float64
	make   func(t *testing.T, dir, plain, out string)
}{
	{"bgzip.ndjson.gz", 0.02, func(t *testing.T, dir, plain, out string) {
		sh(t, dir, fmt.Sprintf("bgzip -c -@ 2 %s > %s", plain, out))
	}},
	{"cat-gzip.ndjson.gz", 0.045, func(t *testing.T, dir, plain, out string) {
		sh(t, dir, fmt.Sprintf("rm -rf chunks && mkdir chunks && split -b %d -a 4 %s chunks/c. && ls chunks/c.* | xargs -P 2 -n 1 gzip -1 && cat chunks/c.*.gz > %s && rm -rf chunks", chunkBytes(), plain, out))
	}},
	{"cat-zstd.ndjson.zst", 0.045, func(t *testing.T, dir, plain, out string) {
		sh(t, dir, fmt.Sprintf("rm -rf chunks && mkdir chunks && split -b %d -a 4 %s chunks/c. && ls chunks/c.* | xargs -P 2 -n 1 zstd -1 -q --rm && cat chunks/c.*.zst > %s && rm -rf chunks", chunkBytes(), plain, out))
	}},
	{"pzstd.ndjson.zst", 0.045, func(t *testing.T, dir, plain, out string) {
		sh(t, dir, fmt.Sprintf("pzstd -c -q -p 2 %s > %s", plain, out))
	}},
	{"pbzip2.ndjson.bz2", 0.05, func(t *testing.T, dir, plain, out string) {
		sh(t, dir, fmt.Sprintf("pbzip2 -c -p2 -b%d %s > %s", pbzip2Block(), plain, out))
	}},
	{"seekable.ndjson.zst", 0.002, func(t *testing.T, dir, plain, out string) {
		in, err := os.Open(plain)
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		f, err := os.Create(out)
		if err != nil {
			t.Fatal(err)
		}
		if err := s3test.WriteZstdSeekable(f, in, 4<<20, true); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}},
}

// Each multi-unit object, 1.25 GiB of records, is planned with SplitTargetBytes 16 MiB into
// at least 8 segments (cut at proven unit starts, or at the seek table's frames), read
// exactly on prism with its dynamic splits on (every record once, checked against the
// generator), and fetched at most
// 1.05× its stored bytes by the reads and the planner's probes together; the probes alone
// cost at most what unitObjects bounds.
func TestCompressedObjectsInSegments(t *testing.T) {
	clitool.Need(t, "bgzip", "gzip", "zstd", "pzstd", "pbzip2", "split", "xargs")
	g := versitygw.Start(t)
	g.CreateBucket(t, "units")
	dir := t.TempDir()
	plain, records := dataset(t, dir)
	_, target := sizes()
	for _, o := range unitObjects {
		t.Run(o.key, func(t *testing.T) {
			out := filepath.Join(dir, o.key)
			o.make(t, dir, plain, out)
			stored := put(t, g, "units", "data/"+o.key, out)
			os.Remove(out)
			p, s := beam.NewPipelineWithRoot()
			cfg := s3io.Config{Bucket: "units", Prefix: "data/" + o.key, Endpoint: g.URL, UsePathStyle: true, Framer: "ndjson", SplitTargetBytes: target}
			bigdata.CheckExactlyOnce(s, s3io.Read(s, cfg), records, true)
			pr, err := ptest.RunWithMetrics(p)
			if err != nil {
				t.Fatalf("pipeline failed: %v", err)
			}
			c := s3test.Counters(pr, s3io.MetricsNamespace)
			t.Logf("%s: %d stored bytes, %d records; fetched %.4f× stored, and %.4f× by the planner's probes; counters %v", o.key, stored, records,
				float64(c["raw_bytes"])/float64(stored), float64(c["probe_bytes"])/float64(stored), c)
			if c["records"] != records || c["segments_planned"] < 8 {
				t.Errorf("records %d (want %d), segments_planned %d (want >= 8)", c["records"], records, c["segments_planned"])
			}
			if !raceDetector && float64(c["raw_bytes"]+c["probe_bytes"]) > maxFetched*float64(stored) {
				t.Errorf("the reads fetched %d bytes and the probes %d for %d stored: %.3f×, want at most %.2f×", c["raw_bytes"], c["probe_bytes"], stored, float64(c["raw_bytes"]+c["probe_bytes"])/float64(stored), maxFetched)
			}
			if !raceDetector && float64(c["probe_bytes"]) > o.probes*float64(stored) {
				t.Errorf("the planner's probes cost %d bytes for %d stored: %.4f, want at most %.3f", c["probe_bytes"], stored, float64(c["probe_bytes"])/float64(stored), o.probes)
			}
			if _, err := g.Client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("units"), Key: aws.String("data/" + o.key)}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
