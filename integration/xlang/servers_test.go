package xlang

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/flinkcluster"
	"github.com/spate-io/beam-s3/internal/jobservers"
)

// What these tests start besides the job servers (internal/jobservers): s3io's two
// binaries built from this tree, the expansion service, and the Python interpreter of the
// venv where .ci/run installs apache-beam and ./python.

func repoRoot() string { return flinkcluster.RepoRoot() }

// binDir holds s3io-expansion and s3io-boot built from this tree, once per test binary;
// TestMain removes it.
var (
	binDir    string
	buildOnce sync.Once
	buildErr  error
)

// binaries builds s3io-expansion and s3io-boot into binDir and returns the service's path.
// The service finds s3io-boot next to itself for its PROCESS environment.
func binaries(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		for _, name := range []string{"s3io-expansion", "s3io-boot"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, name), "./cmd/"+name)
			cmd.Dir = repoRoot()
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return filepath.Join(binDir, "s3io-expansion")
}

// python returns the interpreter of the venv with apache-beam and s3io_beam installed:
// $S3IO_PYTHON, else the repository's .cache/beampy. It fails the test if the installed
// s3io_beam is not this tree's python/s3io_beam, which would test other code than this.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("S3IO_PYTHON")
	if py == "" {
		py = filepath.Join(repoRoot(), ".cache", "beampy", "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		jobservers.Unavailable(t, "no Python venv with apache-beam (%v): python3 -m venv .cache/beampy && .cache/beampy/bin/pip install 'apache-beam[yaml]==2.77.0' ./python", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", "import os, s3io_beam; print(os.path.dirname(s3io_beam.__file__))")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		jobservers.Unavailable(t, "s3io_beam is not installed in %s (%v: %s): %s -m pip install ./python", py, err, jobservers.Tail(stderr.String(), 1000), py)
	}
	installed := strings.TrimSpace(string(out))
	src := filepath.Join(repoRoot(), "python", "s3io_beam")
	files, _ := filepath.Glob(filepath.Join(src, "*"))
	for _, f := range files {
		if ext := filepath.Ext(f); ext != ".py" && ext != ".yaml" {
			continue
		}
		want, _ := os.ReadFile(f)
		got, err := os.ReadFile(filepath.Join(installed, filepath.Base(f)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("the s3io_beam installed in %s is not this tree's (%s differs); reinstall: %s -m pip install ./python", installed, filepath.Base(f), py)
		}
	}
	return py
}

// runPython runs the venv's interpreter with args in dir, with the service built from this
// tree (S3IO_EXPANSION), and returns its combined output.
func runPython(t *testing.T, py, dir string, args ...string) (string, error) {
	t.Helper()
	service := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = dir
	// Python's Beam copies the expansion's worker binary (160 MB) into a temporary
	// directory of each pipeline, and does not always remove it: the test's own directory
	// goes with the test.
	cmd.Env = append(os.Environ(), "S3IO_EXPANSION="+service, "TMPDIR="+t.TempDir())
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("python %s: %v in %v", strings.Join(args[:1], " "), errOrOK(err), time.Since(start).Round(time.Millisecond))
	return string(out), err
}

func errOrOK(err error) any {
	if err == nil {
		return "ok"
	}
	return err
}

// startExpansionService runs s3io-expansion on a port of its own, for pipelines that name
// a running service (Beam YAML's remote provider).
func startExpansionService(t *testing.T) string {
	port := jobservers.FreePort(t)
	jobservers.Start(t, "s3io-expansion", exec.Command(binaries(t), fmt.Sprintf("--port=%d", port)), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}
