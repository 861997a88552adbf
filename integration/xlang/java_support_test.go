package xlang

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/versitygw"
)

// The Java side of the cross-language tests: the processes a Java pipeline needs (the prism
// job server, s3io-expansion) and the Java program of integration/xlang/java. Every name here
// starts with java: the Python tests of this package keep their own.

// javaRepoRoot is the repository's root directory.
func javaRepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// javaUnavailable skips a test whose tool is not installed, except under CI, where .ci/run
// must have installed it and a skip would hide a broken setup.
func javaUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func javaFreePort(t *testing.T) int {
	t.Helper()
	port, err := versitygw.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// javaStartProcess runs cmd for the test, waits (bounded) until port accepts connections and
// stops it at cleanup, printing its output if the test failed.
func javaStartProcess(t *testing.T, name string, cmd *exec.Cmd, port int, ready time.Duration) {
	t.Helper()
	var logs javaLockedBuffer
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
			t.Logf("%s output:\n%s", name, javaTail(logs.String(), 6000))
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
			t.Fatalf("%s exited before it was ready (%v):\n%s", name, err, javaTail(logs.String(), 6000))
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready on port %d after %v:\n%s", name, port, ready, javaTail(logs.String(), 6000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func javaTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// javaLockedBuffer is a bytes.Buffer that a process writes while the test may read it.
type javaLockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *javaLockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *javaLockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// javaStartPrism starts the prism job server. It inherits the test's environment, and with
// it the worker credentials versitygw.Start set: the Go workers it starts read S3 with them.
func javaStartPrism(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(javaRepoRoot(), ".cache", "bin", "prism")
	if _, err := os.Stat(bin); err != nil {
		javaUnavailable(t, "prism job server not built (%v): go build -o .cache/bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism", err)
	}
	port := javaFreePort(t)
	javaStartProcess(t, "prism job server", exec.Command(bin, fmt.Sprintf("--job_port=%d", port), "--serve_http=false"), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// javaBuildExpansion builds s3io-expansion and s3io-boot side by side (the PROCESS
// environment runs the s3io-boot beside the service's binary) and returns the service's
// path. It runs before versitygw.Start, whose isolated HOME would hide Go's build cache.
func javaBuildExpansion(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/s3io-expansion", "./cmd/s3io-boot")
	build.Dir = javaRepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build s3io-expansion s3io-boot: %v\n%s", err, out)
	}
	return filepath.Join(dir, "s3io-expansion")
}

// javaStartExpansion serves expansions with the s3io-expansion binary bin.
func javaStartExpansion(t *testing.T, bin string) string {
	t.Helper()
	port := javaFreePort(t)
	javaStartProcess(t, "s3io-expansion", exec.Command(bin, fmt.Sprintf("--port=%d", port)), port, 30*time.Second)
	return fmt.Sprintf("localhost:%d", port)
}

// javaProgram is the compiled Java program of integration/xlang/java and the classpath
// it runs with.
type javaProgram struct {
	java      string
	classpath string
}

// javaCompile compiles integration/xlang/java against the classpath .ci/run resolves with
// Maven, so the test runs the program as the repository has it.
func javaCompile(t *testing.T) javaProgram {
	t.Helper()
	cpFile := filepath.Join(javaRepoRoot(), ".cache", "xlang-java", "classpath.txt")
	cp, err := os.ReadFile(cpFile)
	if err != nil || len(bytes.TrimSpace(cp)) == 0 {
		javaUnavailable(t, "the Java program's classpath is not resolved (%v): mvn -q -B -f integration/xlang/java/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/xlang-java/classpath.txt", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		javaUnavailable(t, "java not found: the Java pipeline needs Java 17")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		javaUnavailable(t, "javac not found: the Java pipeline needs a Java 17 JDK")
	}
	src, err := filepath.Glob(filepath.Join(javaRepoRoot(), "integration", "xlang", "java", "src", "main", "java", "io", "spate", "s3io", "xlang", "*.java"))
	if err != nil || len(src) == 0 {
		t.Fatalf("no Java sources (%v)", err)
	}
	classes := t.TempDir()
	args := append([]string{"-d", classes, "-cp", strings.TrimSpace(string(cp))}, src...)
	if out, err := exec.Command(javac, args...).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v\n%s", err, out)
	}
	return javaProgram{java: java, classpath: classes + string(os.PathListSeparator) + strings.TrimSpace(string(cp))}
}

// run runs the pipeline with args (bounded) and returns its output and error.
func (p javaProgram) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.java, append([]string{"-cp", p.classpath, "io.spate.s3io.xlang.ReadFromS3"}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
