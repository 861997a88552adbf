// Package xlang reads with s3io from Python and Beam YAML pipelines, through the Python
// wrapper (python/s3io_beam) and the Go expansion service (cmd/s3io-expansion), on the
// prism job server and on Beam's Flink job server against a versitygw S3 server. Python's
// transforms run in LOOPBACK workers of the pipeline's Python process; s3io's run in the Go
// environment the service declares, started by the runner with s3io-boot. The pipelines
// are the Python program and YAML file in testdata, run by the venv's interpreter.
package xlang

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/clitool"
	"github.com/spate-io/beam-s3/internal/faultproxy"
	"github.com/spate-io/beam-s3/internal/jobservers"
	"github.com/spate-io/beam-s3/internal/s3test"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "s3io-xlang-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// seedMixed stores under prefix NDJSON objects stored plain, gzip, zstd and as a tar.gz of
// two files written by tar, and returns every record and the keys in the order S3 lists
// them. One plain object's records hold bytes that are not UTF-8, which only an exact
// bytes path keeps.
func seedMixed(t *testing.T, g *versitygw.Gateway, bucket, prefix string) (want, keys []string) {
	g.CreateBucket(t, bucket)
	for i := 0; i < 8; i++ {
		var b strings.Builder
		for j := 0; j < 400+i*25; j++ {
			r := fmt.Sprintf(`{"obj":%d,"i":%d,"s":"%s"}`, i, j, strings.Repeat("ä日", j%7))
			if i == 0 && j%50 == 0 {
				r += "\xff\xfe\x00raw"
			}
			b.WriteString(r + "\n")
			want = append(want, r)
		}
		key, data := fmt.Sprintf("%sobj-%02d.ndjson", prefix, i), []byte(b.String())
		switch i % 4 {
		case 1:
			key, data = key+".gz", s3test.Gzip(b.String())
		case 2:
			key, data = key+".zst", s3test.Zstd(b.String())
		case 3:
			key, data = strings.TrimSuffix(key, ".ndjson")+".tar.gz", tarGz(t, b.String())
		}
		g.Put(t, bucket, key, data)
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return want, keys
}

// tarGz packs text as two files, cut at a line, with tar -czf.
func tarGz(t *testing.T, text string) []byte {
	dir := t.TempDir()
	cut := strings.IndexByte(text[len(text)/2:], '\n') + len(text)/2 + 1
	os.WriteFile(filepath.Join(dir, "one.ndjson"), []byte(text[:cut]), 0o644)
	os.WriteFile(filepath.Join(dir, "two.ndjson"), []byte(text[cut:]), 0o644)
	clitool.RunIn(t, dir, nil, "tar", "-czf", "out.tar.gz", "one.ndjson", "two.ndjson")
	data, err := os.ReadFile(filepath.Join(dir, "out.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readHex reads the hex lines the pipelines write, one record each, back into records.
func readHex(t *testing.T, pattern string) []string {
	t.Helper()
	var recs []string
	for _, line := range s3test.ReadLines(t, pattern) {
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("%s: line %q is not hex: %v", pattern, line, err)
		}
		recs = append(recs, string(b))
	}
	return recs
}

// sameMultiset fails the test unless got and want hold the same records, as often each.
func sameMultiset(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if slices.Equal(got, want) {
		return
	}
	missing, extra := diff(want, got), diff(got, want)
	t.Fatalf("%s: %d records, want %d; %d missing (first %q), %d not seeded or repeated (first %q)",
		what, len(got), len(want), len(missing), first(missing), len(extra), first(extra))
}

// diff returns the records of sorted a not matched in sorted b, with multiplicity.
func diff(a, b []string) []string {
	var out []string
	i := 0
	for _, r := range a {
		for i < len(b) && b[i] < r {
			i++
		}
		if i < len(b) && b[i] == r {
			i++
			continue
		}
		out = append(out, r)
	}
	return out
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func portableArgs(endpoint string) []string {
	return []string{"--runner=PortableRunner", "--job_endpoint=" + endpoint, "--environment_type=LOOPBACK"}
}

func testdata(name string) string {
	return filepath.Join(repoRoot(), "integration", "xlang", "testdata", name)
}

// The wrapper's own tests (payload types, conversions, finding the service, the YAML
// provider file), run by the venv's interpreter.
func TestPythonPackage(t *testing.T) {
	py := python(t)
	out, err := runPython(t, py, filepath.Join(repoRoot(), "python"), "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	if err != nil {
		t.Fatalf("python unit tests: %v\n%s", err, out)
	}
	t.Logf("%s", jobservers.Tail(out, 3000))
}

// A Python pipeline reads a mixed prefix through ReadFromS3 and writes the records with
// Python's WriteToText: the exact multiset, on prism and on Flink. On prism the only
// descriptor's first object stalls mid-body, and prism splits the Go stage's restriction
// while it waits: s3io's counters, reported through the job's metrics, show two or more
// restrictions read from one descriptor.
func TestPythonRead(t *testing.T) {
	py := python(t)
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) string
		split bool
	}{
		{"prism", func(t *testing.T) string { return jobservers.Prism(t) }, true},
		{"flink", func(t *testing.T) string { return jobservers.Flink(t, "[local]") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := versitygw.Start(t)
			proxy := faultproxy.New(t, g.URL)
			want, keys := seedMixed(t, g, "mixed", "in/")
			if tc.split {
				proxy.Configure(func(p *faultproxy.Proxy) {
					p.Decide = func(key string, n int) faultproxy.Fault {
						if key == keys[0] && n == 1 {
							return faultproxy.Fault{StallAt: 0.5, Stall: 2 * time.Second}
						}
						return faultproxy.Fault{}
					}
				})
			}
			endpoint := tc.start(t)
			dir := t.TempDir()
			out, metrics := filepath.Join(dir, "records"), filepath.Join(dir, "metrics.json")
			args := append([]string{testdata("read_s3.py"), "--bucket=mixed", "--prefix=in/", "--endpoint=" + proxy.URL,
				"--out=" + out, "--metrics_out=" + metrics}, portableArgs(endpoint)...)
			if log, err := runPython(t, py, dir, args...); err != nil {
				t.Fatalf("%s: the Python pipeline failed: %v\n%s", tc.name, err, jobservers.Tail(log, 8000))
			}
			got := readHex(t, out+"*")
			c := counters(t, metrics)
			t.Logf("%s: %d records written by Python's WriteToText, %d seeded; s3io counters %v", tc.name, len(got), len(want), c)
			sameMultiset(t, tc.name, got, want)
			if tc.split {
				if c["splits_planned"] != 1 || c["restrictions_read"] < 2 {
					t.Errorf("splits_planned = %d, restrictions_read = %d: want one descriptor read as two or more restrictions (a dynamic split)", c["splits_planned"], c["restrictions_read"])
				}
			}
		})
	}
}

// counters reads the s3io counters the Python program wrote from its job's metrics.
func counters(t *testing.T, path string) map[string]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := map[string]int64{}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

// failureRow is a Failure row as the Python program writes it.
type failureRow struct {
	Bucket      string `json:"bucket"`
	Key         string `json:"key"`
	ETag        string `json:"etag"`
	VersionID   string `json:"version_id"`
	SplitID     string `json:"split_id"`
	Member      int64  `json:"member"`
	FirstRecord int64  `json:"first_record"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
	Attempts    int64  `json:"attempts"`
}

// ReadFromS3WithFailures: an object deleted after the plan listed it, right before its
// first GET, is one Failure row with reason "deleted", and every other object's records
// arrive; the job succeeds.
func TestPythonReadWithFailures(t *testing.T) {
	py := python(t)
	g := versitygw.Start(t)
	proxy := faultproxy.New(t, g.URL)
	want, keys := seedMixed(t, g, "failing", "in/")
	deleted := keys[3]
	proxy.Configure(func(p *faultproxy.Proxy) {
		p.Before = faultproxy.BeforeFirstGet([]string{deleted}, func(key string) { g.Delete(t, "failing", key) })
	})
	endpoint := jobservers.Prism(t)
	dir := t.TempDir()
	out, failuresOut := filepath.Join(dir, "records"), filepath.Join(dir, "failures")
	args := append([]string{testdata("read_s3.py"), "--bucket=failing", "--prefix=in/", "--endpoint=" + proxy.URL,
		"--out=" + out, "--failures_out=" + failuresOut}, portableArgs(endpoint)...)
	if log, err := runPython(t, py, dir, args...); err != nil {
		t.Fatalf("the Python pipeline failed: %v\n%s", err, jobservers.Tail(log, 8000))
	}
	lines := s3test.ReadLines(t, failuresOut+"*")
	if len(lines) != 1 {
		t.Fatalf("%d failure rows, want one for %s: %q", len(lines), deleted, lines)
	}
	var f failureRow
	if err := json.Unmarshal([]byte(lines[0]), &f); err != nil {
		t.Fatal(err)
	}
	t.Logf("failure row: %+v", f)
	if f.Bucket != "failing" || f.Key != deleted || f.Reason != "deleted" || f.ETag == "" || f.SplitID == "" ||
		f.FirstRecord != 0 || !strings.Contains(f.Message, "NoSuchKey") {
		t.Errorf("failure row %+v: want bucket failing, key %s, reason deleted, its ETag and split, first record 0, a message naming NoSuchKey", f, deleted)
	}
	// The deleted object is obj-03, the tar.gz: its records are the ones with "obj":3.
	var rest []string
	for _, r := range want {
		if !strings.HasPrefix(r, `{"obj":3,`) {
			rest = append(rest, r)
		}
	}
	sameMultiset(t, "records", readHex(t, out+"*"), rest)
}

// A wrong value fails the pipeline where it is built, at expansion, with an error naming
// the field and carrying s3io's message; nothing is submitted.
func TestPythonWrongField(t *testing.T) {
	py := python(t)
	for _, tc := range []struct {
		config string
		want   []string
	}{
		{`{"read_timeout": "-1s"}`, []string{"read_timeout", "ReadTimeout is -1s; it must be positive"}},
		{`{"compression": "gzipp"}`, []string{"compression", `Compression "gzipp" is unknown`}},
	} {
		t.Run(tc.want[0], func(t *testing.T) {
			dir := t.TempDir()
			// No job server: the expansion fails before the job would be submitted to it.
			args := append([]string{testdata("read_s3.py"), "--bucket=any", "--endpoint=http://127.0.0.1:9",
				"--out=" + filepath.Join(dir, "records"), "--config=" + tc.config}, portableArgs("localhost:9")...)
			log, err := runPython(t, py, dir, args...)
			if err == nil {
				t.Fatalf("the pipeline with %s was built and run:\n%s", tc.config, jobservers.Tail(log, 4000))
			}
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Fatalf("the error for %s does not say %q:\n%s", tc.config, w, jobservers.Tail(log, 4000))
				}
			}
			if i := strings.Index(log, tc.want[0]); i >= 0 {
				t.Logf("error: …%s…", strings.TrimSpace(log[max(0, i-200):min(len(log), i+300)]))
			}
		})
	}
}

// A Beam YAML pipeline (testdata/read_s3.yaml) reads the mixed prefix through ReadFromS3,
// turns each record Row into hex with MapToFields and writes it with WriteToText: the exact
// multiset. Its providers come from s3io_beam's providers.yaml (the service started by the
// wrapper), on prism; then from a remote provider naming a running s3io-expansion, on
// Flink.
func TestYAMLRead(t *testing.T) {
	py := python(t)
	g := versitygw.Start(t)
	want, _ := seedMixed(t, g, "yaml", "in/")
	out, err := runPython(t, py, t.TempDir(), "-c", "import s3io_beam; print(s3io_beam.PROVIDERS_YAML)")
	if err != nil {
		t.Fatalf("s3io_beam.PROVIDERS_YAML: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	packaged := lines[len(lines)-1]

	for _, tc := range []struct {
		name      string
		start     func(t *testing.T) string
		providers func(t *testing.T) string
	}{
		{"packaged providers on prism", func(t *testing.T) string { return jobservers.Prism(t) }, func(*testing.T) string { return packaged }},
		{"remote provider on flink", func(t *testing.T) string { return jobservers.Flink(t, "[local]") }, func(t *testing.T) string {
			remote := filepath.Join(t.TempDir(), "remote.yaml")
			os.WriteFile(remote, []byte(fmt.Sprintf(`- type: remote
  config:
    address: %s
  transforms:
    ReadFromS3: 'beam:schematransform:spate-io:s3io:read:v1'
`, startExpansionService(t))), 0o644)
			return remote
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.start(t)
			dir := t.TempDir()
			records := filepath.Join(dir, "records")
			vars, _ := json.Marshal(map[string]string{"bucket": "yaml", "prefix": "in/", "endpoint": g.URL, "out": records, "providers": tc.providers(t)})
			args := append([]string{"-m", "apache_beam.yaml.main", "--yaml_pipeline_file=" + testdata("read_s3.yaml"),
				"--jinja_variables=" + string(vars)}, portableArgs(endpoint)...)
			if log, err := runPython(t, py, dir, args...); err != nil {
				t.Fatalf("the YAML pipeline failed: %v\n%s", err, jobservers.Tail(log, 8000))
			}
			got := readHex(t, records+"*")
			t.Logf("%s: %d records written by YAML's WriteToText, %d seeded", tc.name, len(got), len(want))
			sameMultiset(t, tc.name, got, want)
		})
	}
}

// ReadFromS3WithPositions: every record once, each with its object's key, and in each
// object the indexes 0 to n-1 (counting on across a tar's two entries, which are named).
func TestPythonReadWithPositions(t *testing.T) {
	py := python(t)
	g := versitygw.Start(t)
	want, keys := seedMixed(t, g, "positions", "in/")
	endpoint := jobservers.Prism(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "records")
	args := append([]string{testdata("positions.py"), "positions", "in/", g.URL, out}, portableArgs(endpoint)...)
	if log, err := runPython(t, py, dir, args...); err != nil {
		t.Fatalf("the Python pipeline failed: %v\n%s", err, jobservers.Tail(log, 8000))
	}
	var got []string
	indexes := map[string][]int{}
	entries := map[string]map[string]bool{}
	for _, line := range s3test.ReadLines(t, out+"*") {
		f := strings.Split(line, "\t")
		if len(f) != 5 {
			t.Fatalf("line %q: want key, entry, member, index and record", line)
		}
		rec, err := hex.DecodeString(f[4])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rec))
		i, _ := strconv.Atoi(f[3])
		indexes[f[0]] = append(indexes[f[0]], i)
		if entries[f[0]] == nil {
			entries[f[0]] = map[string]bool{}
		}
		entries[f[0]][f[1]] = true
	}
	sameMultiset(t, "positions", got, want)
	for _, k := range keys {
		idx := indexes[k]
		slices.Sort(idx)
		for i, n := range idx {
			if n != i {
				t.Fatalf("%s: indexes %v..., want 0 to %d once each", k, idx[:min(len(idx), 10)], len(idx)-1)
			}
		}
		wantEntries := map[string]bool{"": true}
		if strings.HasSuffix(k, ".tar.gz") {
			wantEntries = map[string]bool{"one.ndjson": true, "two.ndjson": true}
		}
		if !maps.Equal(entries[k], wantEntries) {
			t.Errorf("%s: entries %v, want %v", k, entries[k], wantEntries)
		}
	}
}
