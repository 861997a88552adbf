package s3io_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

func init() {
	register.Function1x1(entryRecord)
	register.Function1x1(failureKeyReason)
}

// entryRecord is a record as "key|entry|index|data".
func entryRecord(r s3io.Record) string {
	return fmt.Sprintf("%s|%s|%d|%s", r.Key, r.Entry, r.Index, r.Data)
}

// failureKeyReason is a Failure as "key reason".
func failureKeyReason(f s3io.Failure) string { return f.Key + " " + string(f.Reason) }

// On prism, archives written by tar, gzip and zip are read entry by entry with each record's
// entry named, the index running on across entries; a CSV header is dropped in every entry;
// objects in formats s3io does not read (7z, .Z, rar) fail as unsupported and emit nothing.
func TestPipelineArchivesAndUnsupported(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "arch")
	dir := clitool.WriteFiles(t, map[string]string{
		"2026/a.csv": "id,name\n1,\"one, uno\"\n2,\"two\nlines\"\n",
		"2026/b.csv": "id,name\r\n3,three\r\n",
		"notes.txt":  "not read: the archives hold only the csv files\n",
	})
	tarball := clitool.RunIn(t, dir, nil, "tar", "-cf", "-", "2026/a.csv", "2026/b.csv")
	srv.Put(t, "arch", "in/ok/x.tar.gz", clitool.Run(t, tarball, "gzip", "-c"))
	clitool.RunIn(t, dir, nil, "zip", "-q", "-X", "y.zip", "2026/b.csv", "2026/a.csv")
	zipped, err := os.ReadFile(filepath.Join(dir, "y.zip"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "arch", "in/ok/y.zip", zipped)
	clitool.RunIn(t, dir, nil, "7z", "a", "-bd", "-bso0", "z.7z", "notes.txt")
	sevenZ, err := os.ReadFile(filepath.Join(dir, "z.7z"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Put(t, "arch", "in/bad/z.7z", sevenZ)
	srv.Put(t, "arch", "in/bad/z-no-extension", sevenZ) // by its magic bytes
	srv.Put(t, "arch", "in/bad/notes.txt.Z", clitool.Run(t, []byte(strings.Repeat("compressed with compress(1)\n", 100)), "compress", "-c"))
	srv.Put(t, "arch", "in/bad/old.rar", []byte("Rar!\x1a\x07\x01\x00 not really a rar, but named and marked as one"))

	want := []string{
		"in/ok/x.tar.gz|2026/a.csv|0|1,\"one, uno\"",
		"in/ok/x.tar.gz|2026/a.csv|1|2,\"two\nlines\"",
		"in/ok/x.tar.gz|2026/b.csv|2|3,three",
		"in/ok/y.zip|2026/b.csv|0|3,three",
		"in/ok/y.zip|2026/a.csv|1|1,\"one, uno\"",
		"in/ok/y.zip|2026/a.csv|2|2,\"two\nlines\"",
	}
	cfg := s3io.Config{Bucket: "arch", Prefix: "in/ok/", Endpoint: srv.URL, UsePathStyle: true, Framer: "csv", SkipHeaderRecords: 1}
	p, s := beam.NewPipelineWithRoot()
	passert.EqualsList(s, beam.ParDo(s, entryRecord, s3io.ReadWithPositions(s, cfg)), want)
	cfg.Prefix = "in/bad/"
	recs, failures := s3io.ReadWithFailures(s, cfg)
	passert.Empty(s, recs)
	passert.EqualsList(s, beam.ParDo(s, failureKeyReason, failures), []string{
		"in/bad/z.7z unsupported", "in/bad/z-no-extension unsupported", "in/bad/notes.txt.Z unsupported", "in/bad/old.rar unsupported",
	})
	pr, err := ptest.RunWithMetrics(p)
	if err != nil {
		t.Fatalf("pipeline failed: %v", err)
	}
	c := s3test.Counters(pr, s3io.MetricsNamespace)
	if c["headers_skipped"] != 4 || c["objects_failed_unsupported"] != 4 {
		t.Errorf("counters %v: want 4 headers skipped (one per entry) and 4 unsupported objects", c)
	}
	if got := srv.Unpinned(); len(got) != 0 {
		t.Errorf("GETs without If-Match: %q", got)
	}
}
