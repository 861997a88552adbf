// Command gotest runs go test and says which tests were skipped, and why.
//
// A package whose tests all skip (the integration tests without their servers installed)
// passes, and plain go test prints only its "ok" line: nothing tells a skipped suite from a
// run one. gotest runs "go test -json" with the same arguments and prints what go test
// prints without -v — each package's ok/FAIL line, and the output of failed tests — plus,
// under each package that skipped tests, one line per distinct reason, and a last line
// counting every test:
//
//	$ go run ./internal/gotest ./integration/runners
//	ok  	github.com/spate-io/beam-s3/integration/runners	0.306s
//	    skipped 1 test: prism job server not built (stat …/.cache/bin/prism: no such file or directory): go build -o .cache/bin/prism github.com/apache/beam/sdks/v2/go/cmd/prism (TestRunners/prism_job_server)
//	tests: 1 passed, 0 failed, 1 skipped
//
// A test that never ended, because its test binary died while it ran (go test's -timeout, a
// panic in another goroutine), gets no result from go test -json; gotest counts it failed and
// prints its output, where the panic and the running tests' stacks are.
//
// With -v it prints go test -v's output unchanged, and the same last line. Its exit status is
// go test's.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output events
	FailedBuild string
}

// pkgState is what has been seen of one package so far.
type pkgState struct {
	tests   map[string][]string // output lines of each test, until it ends
	own     []string            // output that belongs to no test
	failed  []string            // output of the tests that failed, in order
	skipped []skip
}

type skip struct {
	test   string
	reason string
}

type counts struct{ passed, failed, skipped int }

func main() {
	args := os.Args[1:]
	verbose := slices.ContainsFunc(args, func(a string) bool {
		return a == "-v" || a == "--v" || a == "-v=true" || a == "--v=true"
	})
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	n := summarize(stdout, os.Stdout, verbose)
	err = cmd.Wait()
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", n.passed, n.failed, n.skipped)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "gotest:", err)
	os.Exit(2)
}

// summarize reads go test -json from r and writes the report to w.
func summarize(r io.Reader, w io.Writer, verbose bool) counts {
	var n counts
	pkgs := map[string]*pkgState{}
	state := func(name string) *pkgState {
		p := pkgs[name]
		if p == nil {
			p = &pkgState{tests: map[string][]string{}}
			pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(w, sc.Text()) // not an event: pass it on
			continue
		}
		if e.Action == "build-output" {
			fmt.Fprint(w, e.Output)
			continue
		}
		if verbose && e.Action == "output" {
			fmt.Fprint(w, e.Output)
		}
		p := state(e.Package)
		switch {
		case e.Action == "output" && e.Test != "":
			p.tests[e.Test] = append(p.tests[e.Test], e.Output)
		case e.Action == "output":
			p.own = append(p.own, e.Output)
		case e.Test != "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			out := p.tests[e.Test]
			delete(p.tests, e.Test)
			switch e.Action {
			case "pass":
				n.passed++
			case "fail":
				n.failed++
				p.failed = append(p.failed, withoutFraming(out)...)
			case "skip":
				n.skipped++
				p.skipped = append(p.skipped, skip{e.Test, skipReason(out)})
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			// Tests that never ended were running when the test binary died (a timeout, a
			// panic in another goroutine, os.Exit): go test -json reports no result for them,
			// and their output holds the panic. They count as failed, and are printed.
			for _, name := range slices.Sorted(maps.Keys(p.tests)) {
				n.failed++
				p.failed = append(p.failed, unfinished(name, p.tests[name])...)
			}
			if !verbose {
				printPackage(w, p, e.Action == "fail")
			}
			printSkips(w, p.skipped)
			delete(pkgs, e.Package)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "gotest: reading go test -json:", err)
	}
	return n
}

// printPackage prints what go test prints for a package without -v: its result line, and
// when it failed, the failed tests' output and the package's own.
func printPackage(w io.Writer, p *pkgState, failed bool) {
	if failed {
		for _, line := range p.failed {
			fmt.Fprint(w, line)
		}
		for _, line := range withoutFraming(p.own) {
			fmt.Fprint(w, line)
		}
		return
	}
	// A passing package's own output ends with its "ok" or "?" line; go test shows only that.
	for i := len(p.own) - 1; i >= 0; i-- {
		if l := p.own[i]; strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "?") {
			fmt.Fprint(w, l)
			return
		}
	}
}

// maxUnfinishedLines bounds what is printed of a test that did not finish: a timeout's
// panic dumps every goroutine, and the first stacks (the alarm's, then the running test's)
// tell what it waited on.
const maxUnfinishedLines = 300

// unfinished is what is printed of a test that was running when its test binary died: a
// FAIL line saying so, then its output (the panic, when it was the one running), cut to
// maxUnfinishedLines.
func unfinished(name string, out []string) []string {
	lines := []string{fmt.Sprintf("--- FAIL: %s (did not finish: the test binary exited while it ran)\n", name)}
	out = withoutFraming(out)
	if len(out) > maxUnfinishedLines {
		cut := len(out) - maxUnfinishedLines
		out = append(slices.Clip(out[:maxUnfinishedLines]), fmt.Sprintf("    … %d more lines (go test -json shows them)\n", cut))
	}
	return append(lines, out...)
}

// withoutFraming drops the "=== RUN"-style lines -json adds, which go test without -v
// never prints.
func withoutFraming(lines []string) []string {
	var out []string
	for _, l := range lines {
		if !strings.HasPrefix(l, "=== ") {
			out = append(out, l)
		}
	}
	return out
}

// sourcePos is the "file_test.go:123: " that t.Skip puts before its message.
var sourcePos = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is the message a skipped test gave, without its source position, so that
// tests skipped for the same reason are reported together.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		if strings.HasPrefix(l, "=== ") || strings.HasPrefix(strings.TrimSpace(l), "--- SKIP") {
			continue
		}
		if l = strings.TrimSpace(sourcePos.ReplaceAllString(l, "")); l != "" {
			msg = append(msg, l)
		}
	}
	if len(msg) == 0 {
		return "no reason given"
	}
	return strings.Join(msg, " / ")
}

// printSkips prints one line per distinct reason, naming the tests skipped for it.
func printSkips(w io.Writer, skips []skip) {
	var reasons []string
	tests := map[string][]string{}
	for _, s := range skips {
		if _, ok := tests[s.reason]; !ok {
			reasons = append(reasons, s.reason)
		}
		tests[s.reason] = append(tests[s.reason], s.test)
	}
	for _, r := range reasons {
		names := tests[r]
		what := "1 test"
		if len(names) > 1 {
			what = fmt.Sprintf("%d tests", len(names))
		}
		list := names
		if len(list) > 4 {
			list = append(slices.Clip(list[:4]), "…")
		}
		fmt.Fprintf(w, "    skipped %s: %s (%s)\n", what, r, strings.Join(list, ", "))
	}
}
