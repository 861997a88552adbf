// Package jobservers starts the server processes the runner and cross-language tests
// submit to — prism's job server and Beam's Flink job server — and any other server
// process a test needs (Start), each stopped when the test ends. Test support: never
// imported by the library.
//
// A server that is not installed skips its test, except under CI (CI set), where .ci/run
// must have installed it and a skipped test would hide a broken setup (Unavailable).
package jobservers

import (
	"bytes"
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
	"github.com/spate-io/beam-s3/internal/serverproc"
)

// RepoCache is the repository's .cache directory, where .ci/run builds the prism job server
// and resolves the Flink job server's classpath.
func RepoCache() string { return filepath.Join(flinkcluster.RepoRoot(), ".cache") }

// Unavailable skips the test for a missing tool, or fails it under CI.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// FreePort is a TCP port free on loopback when asked.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := serverproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// Start runs cmd for the test, waits (bounded by ready) until port accepts connections and
// stops it at cleanup, printing the end of its output if the test failed.
func Start(t testing.TB, name string, cmd *exec.Cmd, port int, ready time.Duration) {
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
			t.Logf("%s output:\n%s", name, Tail(logs.String(), 6000))
		}
	})
	deadline := time.Now().Add(ready)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			t.Logf("%s ready on port %d", name, port)
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("%s exited before it was ready (%v):\n%s", name, err, Tail(logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready on port %d after %v:\n%s", name, port, ready, Tail(logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Prism starts prism as a separate job server process (go build of
// github.com/apache/beam/sdks/v2/go/cmd/prism at the SDK version in go.mod, or $PRISM_BIN)
// and returns its endpoint. Its workers inherit the test's environment, and with it the
// credentials versitygw.Start set.
func Prism(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("PRISM_BIN")
	if bin == "" {
		bin = filepath.Join(RepoCache(), "bin", "prism")
	}
	if _, err := os.Stat(bin); err != nil {
		Unavailable(t, "prism job server not built (%v): go build -o .cache/bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism", err)
	}
	port := FreePort(t)
	Start(t, "prism job server", exec.Command(bin, fmt.Sprintf("--job_port=%d", port), "--serve_http=false"), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// Flink starts Beam's Flink job server submitting to master: "[local]" for an embedded
// Flink mini-cluster, or a session cluster's REST address. It returns its endpoint.
func Flink(t testing.TB, master string) string {
	t.Helper()
	cp, err := os.ReadFile(filepath.Join(RepoCache(), "flink", "classpath.txt"))
	if err != nil {
		Unavailable(t, "Flink job server classpath not resolved (%v): mvn -q -B -f integration/runners/flink/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/flink/classpath.txt", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		Unavailable(t, "java not found: the Flink job server needs Java 11 or 17")
	}
	port := FreePort(t)
	cmd := exec.Command(java, "-cp", strings.TrimSpace(string(cp)), "org.apache.beam.runners.flink.FlinkJobServerDriver",
		fmt.Sprintf("--job-port=%d", port), fmt.Sprintf("--artifact-port=%d", FreePort(t)), fmt.Sprintf("--expansion-port=%d", FreePort(t)),
		"--flink-master="+master,
		// Each job stages its worker binary here; by default the job server keeps every
		// job's under /tmp/beam-artifact-staging for good (docs/deploy.md).
		"--artifacts-dir="+t.TempDir(), "--clean-artifacts-per-job")
	Start(t, "Flink job server", cmd, port, 90*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// Tail is the last n bytes of s.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// lockedBuffer is a process's output, written by its pipes' goroutines and read by the
// test.
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
