package runners

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/flinkcluster"
	"github.com/spate-io/beam-s3/internal/versitygw"
)

// repoCache is the repository's .cache directory, where .ci/run builds the prism job server
// and resolves the Flink job server's classpath.
func repoCache() string { return filepath.Join(flinkcluster.RepoRoot(), ".cache") }

// unavailable skips a runner that is not installed, except under CI, where .ci/run must
// have installed it and a skipped runner would hide a broken setup.
func unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// freePort is versitygw.FreePort for the test.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := versitygw.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// startProcess runs cmd for the test, waits (bounded) until port accepts connections and
// stops it at cleanup, printing its output if the test failed.
func startProcess(t *testing.T, name string, cmd *exec.Cmd, port int, ready time.Duration) {
	t.Helper()
	var logs bytes.Buffer
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
			t.Logf("%s output:\n%s", name, tail(logs.String(), 4000))
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
			t.Fatalf("%s exited before it was ready (%v):\n%s", name, err, tail(logs.String(), 4000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready on port %d after %v:\n%s", name, port, ready, tail(logs.String(), 4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// startPrismJobServer starts prism as a separate job server process (go build of
// github.com/apache/beam/sdks/v2/go/cmd/prism at the SDK version in go.mod).
func startPrismJobServer(t *testing.T) string {
	bin := os.Getenv("PRISM_BIN")
	if bin == "" {
		bin = filepath.Join(repoCache(), "bin", "prism")
	}
	if _, err := os.Stat(bin); err != nil {
		unavailable(t, "prism job server not built (%v): go build -o .cache/bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism", err)
	}
	port := freePort(t)
	startProcess(t, "prism job server", exec.Command(bin, fmt.Sprintf("--job_port=%d", port), "--serve_http=false"), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// startFlinkJobServer starts Beam's Flink job server submitting to master: "[local]" for
// an embedded Flink mini-cluster, or a session cluster's REST address.
func startFlinkJobServer(t *testing.T, master string) string {
	cpFile := filepath.Join(repoCache(), "flink", "classpath.txt")
	cp, err := os.ReadFile(cpFile)
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
		"--flink-master="+master,
		// Each job stages its worker binary here; by default the job server keeps every
		// job's under /tmp/beam-artifact-staging for good (docs/deploy.md).
		"--artifacts-dir="+t.TempDir(), "--clean-artifacts-per-job")
	startProcess(t, "Flink job server", cmd, port, 90*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}
