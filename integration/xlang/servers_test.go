package xlang

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/flinkcluster"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// The processes these tests start: the job servers (as integration/runners starts them),
// s3io's two binaries built from this tree, and the Python interpreter of the venv where
// .ci/run installs apache-beam and ./python.

func repoRoot() string { return flinkcluster.RepoRoot() }

// unavailable skips a test whose tool is not installed, except under CI, where .ci/run
// must have installed it and a skipped test would hide a broken setup.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := versitygw.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

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
		unavailable(t, "no Python venv with apache-beam (%v): python3 -m venv .cache/beampy && .cache/beampy/bin/pip install 'apache-beam[yaml]==2.77.0' ./python", err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", "import os, s3io_beam; print(os.path.dirname(s3io_beam.__file__))")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		unavailable(t, "s3io_beam is not installed in %s (%v: %s): %s -m pip install ./python", py, err, tail(stderr.String(), 1000), py)
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
	cmd.Env = append(os.Environ(), "S3IO_EXPANSION="+service)
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

// startProcess runs cmd for the test, waits (bounded) until port accepts connections and
// stops it at cleanup, printing its output if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd, port int, ready time.Duration) {
	t.Helper()
	var logs lockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s output:\n%s", name, tail(logs.String(), 6000))
		}
	})
	deadline := time.Now().Add(ready)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it was ready (%v):\n%s", name, err, tail(logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready on port %d after %v:\n%s", name, port, ready, tail(logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// startPrismJobServer starts prism as a job server process; it runs s3io's stages in the
// PROCESS environment the expansion service declares (s3io-boot, started by prism, with
// prism's environment: the test's AWS credentials).
func startPrismJobServer(t *testing.T) string {
	bin := os.Getenv("PRISM_BIN")
	if bin == "" {
		bin = filepath.Join(repoRoot(), ".cache", "bin", "prism")
	}
	if _, err := os.Stat(bin); err != nil {
		unavailable(t, "prism job server not built (%v): go build -o .cache/bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism", err)
	}
	port := freePort(t)
	startProcess(t, "prism job server", exec.Command(bin, fmt.Sprintf("--job_port=%d", port), "--serve_http=false"), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// startFlinkJobServer starts Beam's Flink job server on an embedded Flink mini-cluster;
// its TaskManager starts s3io-boot for s3io's stages, with the job server's environment.
func startFlinkJobServer(t *testing.T) string {
	cp, err := os.ReadFile(filepath.Join(repoRoot(), ".cache", "flink", "classpath.txt"))
	if err != nil {
		unavailable(t, "Flink job server classpath not resolved (%v): mvn -q -B -f integration/runners/flink/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/flink/classpath.txt", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		unavailable(t, "java not found: the Flink job server needs Java 11 or 17")
	}
	port := freePort(t)
	cmd := exec.Command(java, "-cp", strings.TrimSpace(string(cp)), "org.apache.beam.runners.flink.FlinkJobServerDriver",
		fmt.Sprintf("--job-port=%d", port), fmt.Sprintf("--artifact-port=%d", freePort(t)), fmt.Sprintf("--expansion-port=%d", freePort(t)),
		"--flink-master=[local]", "--artifacts-dir="+t.TempDir(), "--clean-artifacts-per-job")
	startProcess(t, "Flink job server", cmd, port, 90*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// startExpansionService runs s3io-expansion on a port of its own, for pipelines that name
// a running service (Beam YAML's remote provider).
func startExpansionService(t *testing.T) string {
	port := freePort(t)
	startProcess(t, "s3io-expansion", exec.Command(binaries(t), fmt.Sprintf("--port=%d", port)), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}
