package xlang

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spate-io/beam-s3/internal/jobservers"
)

// The Java side of the cross-language tests: the Java program of integration/xlang/java,
// compiled and run; the servers it needs are servers_test.go's, shared with the Python tests.

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
	cpFile := filepath.Join(repoRoot(), ".cache", "xlang-java", "classpath.txt")
	cp, err := os.ReadFile(cpFile)
	if err != nil || len(bytes.TrimSpace(cp)) == 0 {
		jobservers.Unavailable(t, "the Java program's classpath is not resolved (%v): mvn -q -B -f integration/xlang/java/pom.xml dependency:build-classpath -Dmdep.outputFile=$PWD/.cache/xlang-java/classpath.txt", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		jobservers.Unavailable(t, "java not found: the Java pipeline needs Java 17")
	}
	javac, err := exec.LookPath("javac")
	if err != nil {
		jobservers.Unavailable(t, "javac not found: the Java pipeline needs a Java 17 JDK")
	}
	src, err := filepath.Glob(filepath.Join(repoRoot(), "integration", "xlang", "java", "src", "main", "java", "io", "spate", "s3io", "xlang", "*.java"))
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
