package xlang

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spate-io/beam-s3/internal/jobservers"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// TestJavaExternalRead runs the Java pipeline of integration/xlang/java on the prism job
// server: s3io's read, expanded by the Go service s3io-expansion through Java's External.of,
// runs in the Go environment, and Java's TextIO writes the records in Java's LOOPBACK
// environment. Both the plain URN (records as byte[]) and the schema transform (Rows) must
// produce the exact record multiset of a prefix of plain and gzip NDJSON objects,
// read_with_failures must deliver a corrupt object on its second output, and a wrong
// configuration value must fail the Java program's expansion naming the field.
func TestJavaExternalRead(t *testing.T) {
	prog := javaCompile(t)
	binaries(t)             // built before versitygw.Start, whose isolated HOME hides Go's build cache
	g := versitygw.Start(t) // before prism: the job server's workers inherit its credentials
	job := jobservers.Prism(t)
	svc := startExpansionService(t)

	g.CreateBucket(t, "xlang")
	var want []string
	add := func(key string, data []byte, recs ...string) {
		g.Put(t, "xlang", key, data)
		want = append(want, recs...)
	}
	p, pRecs := s3test.NDJSON("plain", 3000)
	add("in/plain.ndjson", []byte(p), pRecs...)
	g1, r1 := s3test.NDJSON("gz-1", 2000)
	g2, r2 := s3test.NDJSON("gz-2", 1500)
	add("in/multi.ndjson.gz", s3test.Gzip(g1, g2), append(r1, r2...)...)
	one, oneRecs := s3test.NDJSON("gz-one", 700)
	add("in/sub/one.json.gz", s3test.Gzip(one), oneRecs...)
	add("in/tiny key.txt", []byte("first\nlast"), "first", "last")
	g.Put(t, "xlang", "out/not-read.ndjson", []byte("outside the prefix\n"))
	slices.Sort(want)

	// A prefix with one readable object and one whose gzip stream ends inside its header:
	// read_with_failures emits the first's records and quarantines the second.
	good, goodRecs := s3test.NDJSON("good", 400)
	g.Put(t, "xlang", "mixed/good.ndjson", []byte(good))
	cut, _ := s3test.NDJSON("cut", 400)
	g.Put(t, "xlang", "mixed/cut.ndjson.gz", s3test.Gzip(cut)[:15])
	slices.Sort(goodRecs)

	args := func(transform, prefix, endpoint, out string) []string {
		return []string{"--runner=PortableRunner", "--jobEndpoint=" + job, "--defaultEnvironmentType=LOOPBACK",
			"--expansionService=" + svc, "--transform=" + transform,
			"--bucket=xlang", "--prefix=" + prefix, "--endpoint=" + endpoint, "--output=" + out}
	}
	for _, transform := range []string{"plain", "schema"} {
		t.Run(transform, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "records")
			if log, err := prog.run(t, args(transform, "in/", g.URL, out)...); err != nil {
				t.Fatalf("Java pipeline (%s) failed: %v\n%s", transform, err, jobservers.Tail(log, 8000))
			}
			got := s3test.ReadLines(t, out+"-*")
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("Java pipeline (%s) wrote %d records, want %d; first difference: %s", transform, len(got), len(want), javaFirstDifference(got, want))
			}
		})
	}
	t.Run("failures", func(t *testing.T) {
		dir := t.TempDir()
		out, failures := filepath.Join(dir, "records"), filepath.Join(dir, "failures")
		a := append(args("failures", "mixed/", g.URL, out), "--failuresOutput="+failures)
		if log, err := prog.run(t, a...); err != nil {
			t.Fatalf("Java pipeline (failures) failed: %v\n%s", err, jobservers.Tail(log, 8000))
		}
		got := s3test.ReadLines(t, out+"-*")
		slices.Sort(got)
		if !slices.Equal(got, goodRecs) {
			t.Errorf("Java pipeline (failures) wrote %d records, want %d; first difference: %s", len(got), len(goodRecs), javaFirstDifference(got, goodRecs))
		}
		if f := s3test.ReadLines(t, failures+"-*"); !slices.Equal(f, []string{"mixed/cut.ndjson.gz corrupt"}) {
			t.Errorf("Java pipeline (failures) wrote failures %q, want [\"mixed/cut.ndjson.gz corrupt\"]", f)
		}
	})
	t.Run("wrong_field", func(t *testing.T) {
		bad := strings.Replace(g.URL, "http://", "ftp://", 1)
		log, err := prog.run(t, args("plain", "in/", bad, filepath.Join(t.TempDir(), "records"))...)
		if err == nil {
			t.Fatalf("Java pipeline with endpoint %q succeeded, want an expansion error", bad)
		}
		if !strings.Contains(log, `expansion service error`) || !strings.Contains(log, `field "endpoint"`) {
			t.Errorf("Java pipeline with endpoint %q: want an expansion error naming field \"endpoint\", got:\n%s", bad, jobservers.Tail(log, 4000))
		}
	})
}

// javaFirstDifference describes the first position where two sorted record lists differ.
func javaFirstDifference(got, want []string) string {
	for i := 0; i < len(got) && i < len(want); i++ {
		if got[i] != want[i] {
			return fmt.Sprintf("at %d got %q, want %q", i, got[i], want[i])
		}
	}
	if len(got) > len(want) {
		return fmt.Sprintf("extra %q", got[len(want)])
	}
	if len(got) < len(want) {
		return fmt.Sprintf("missing %q", want[len(got)])
	}
	return "none"
}
