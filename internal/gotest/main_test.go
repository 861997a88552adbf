package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A package whose test binary dies while a test runs (here: go test's -timeout) reports no
// result for that test in go test -json; gotest counts it failed and prints its panic.
func TestUnfinishedTestsCountAsFailed(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/hang\n\ngo 1.26\n",
		"hang_test.go": `package hang

import "testing"

func TestPasses(t *testing.T) {}

func TestHangs(t *testing.T) {
	t.Log("waiting for what never comes")
	select {}
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-timeout", "2s", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	js, err := cmd.Output()
	if err == nil {
		t.Fatalf("go test passed a test that hangs:\n%s", js)
	}
	var out bytes.Buffer
	n := summarize(bytes.NewReader(js), &out, false)
	if n != (counts{passed: 1, failed: 1}) {
		t.Errorf("counts %+v, want 1 passed, 1 failed; output:\n%s", n, out.String())
	}
	for _, want := range []string{
		"--- FAIL: TestHangs (did not finish: the test binary exited while it ran)",
		"waiting for what never comes",
		"panic: test timed out after 2s",
		"FAIL\texample.com/hang",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// A test's output beyond maxUnfinishedLines is cut, saying how much.
func TestUnfinishedOutputIsBounded(t *testing.T) {
	out := make([]string, maxUnfinishedLines+50)
	for i := range out {
		out[i] = "line\n"
	}
	got := unfinished("TestX", append([]string{"=== RUN   TestX\n"}, out...))
	if len(got) != maxUnfinishedLines+2 {
		t.Fatalf("%d lines, want the FAIL line, %d of output and a note", len(got), maxUnfinishedLines)
	}
	if last := got[len(got)-1]; !strings.Contains(last, "50 more lines") {
		t.Errorf("last line %q, want it to say 50 more lines were cut", last)
	}
}
