package s3io_test

import (
	"bytes"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/s3io"
)

// On prism, with its dynamic splits on, tarballs are read to their codec's last check: a
// v7 tar and an old GNU sparse entry inside codecs are read as tar -x extracts them; a
// .tar.gz whose entry data changed under the gzip CRC it was written with, and a .tgz with
// bytes after the tar's end-of-archive marker, fail as corrupt. Both Failures name the
// record after the tar's last one: the junk comes after every record, and a gzip member's
// CRC after the records it covers (s3io.ReasonCorrupt's godoc), here the whole tar's.
func TestPipelineTarballsCheckedToTheirEnd(t *testing.T) {
	srv := s3test.New(t)
	srv.CreateBucket(t, "tars")
	dir := clitool.WriteFiles(t, map[string]string{"a.txt": "Kilts\nsecond\n", "b.txt": "b1\n"})
	changed := clitool.WriteFiles(t, map[string]string{"a.txt": "Kalts\nsecond\n", "b.txt": "b1\n"})
	tarOf := func(dir string, args ...string) []byte {
		return clitool.RunIn(t, dir, nil, "tar", append(append([]string{"--mtime=2020-01-01", "--owner=0", "--group=0", "-cf", "-"}, args...), "a.txt", "b.txt")...)
	}
	srv.Put(t, "tars", "ok/v7.tar.gz", clitool.Run(t, tarOf(dir, "--format=v7"), "gzip", "-c"))
	srv.Put(t, "tars", "ok/v7-by-magic", clitool.Run(t, tarOf(dir, "--format=v7"), "xz", "-c"))
	srv.Put(t, "tars", "ok/sparse.tar.bz2", clitool.Run(t, tarOf(dir, "--format=gnu", "-S"), "bzip2", "-c"))

	good := clitool.Run(t, tarOf(dir), "gzip", "-c")
	bad := clitool.Run(t, tarOf(changed), "gzip", "-c")
	if len(good) != len(bad) {
		t.Fatalf("the two tarballs differ in length")
	}
	spliced := append(bytes.Clone(bad[:len(bad)-8]), good[len(good)-8:]...) // "Kalts" under the CRC of "Kilts"
	srv.Put(t, "tars", "bad/changed.tar.gz", spliced)
	srv.Put(t, "tars", "bad/junk.tgz", clitool.Run(t, append(tarOf(dir), "junk\n"...), "gzip", "-c"))

	recs := func(key string) []string {
		return []string{key + "|a.txt|0|Kilts", key + "|a.txt|1|second", key + "|b.txt|2|b1"}
	}
	var want []string
	for _, k := range []string{"ok/v7.tar.gz", "ok/v7-by-magic", "ok/sparse.tar.bz2"} {
		want = append(want, recs(k)...)
	}
	p, s := beam.NewPipelineWithRoot()
	cfg := s3io.Config{Bucket: "tars", Prefix: "ok/", Endpoint: srv.URL, UsePathStyle: true}
	passert.EqualsList(s, beam.ParDo(s, entryRecord, s3io.ReadWithPositions(s, cfg)), want)
	cfg.Prefix = "bad/"
	_, failures := s3io.ReadWithFailures(s, cfg)
	passert.EqualsList(s, beam.ParDo(s, failureKeyIndex, failures), []string{"bad/changed.tar.gz corrupt 3", "bad/junk.tgz corrupt 3"})
	runPipeline(t, p)
}
