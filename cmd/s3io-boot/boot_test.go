package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/runtime"
)

// The test binary doubles as the processes a boot supervises, chosen by fakeEnv.
const fakeEnv = "S3IO_BOOT_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnv) {
	case "":
		os.Exit(m.Run())
	case "worker-done":
		// Beam's worker when its runner is done: report it, then sleep until killed. A
		// child of its own (a process group member) must die with it.
		child := exec.Command("sleep", "600")
		child.Start()
		os.WriteFile(filepath.Join(os.Getenv("FAKE_DIR"), "grandchild.pid"), []byte(strconv.Itoa(child.Process.Pid)), 0o600)
		fmt.Fprintln(os.Stderr, "some log line")
		fmt.Fprintln(os.Stderr, doneLine)
		time.Sleep(time.Hour)
	case "worker-fail":
		fmt.Fprintln(os.Stderr, "Worker failed: boom")
		os.Exit(3)
	case "worker-stubborn":
		// Ignores SIGTERM: only the grace period's SIGKILL ends it.
		signal.Ignore(syscall.SIGTERM)
		os.WriteFile(filepath.Join(os.Getenv("FAKE_DIR"), "worker.pid"), []byte(strconv.Itoa(os.Getpid())), 0o600)
		time.Sleep(time.Hour)
	case "boot":
		// A boot supervising a stubborn worker, for the parent-death tests.
		self, _ := os.Executable()
		w := &worker{path: self, env: append(os.Environ(), fakeEnv+"=worker-stubborn"), dir: os.Getenv("FAKE_DIR"),
			parent: os.Getppid(), grace: 100 * time.Millisecond, poll: 50 * time.Millisecond}
		code, err := w.run(context.Background())
		os.WriteFile(filepath.Join(os.Getenv("FAKE_DIR"), "boot.exit"), []byte(fmt.Sprint(code, err)), 0o600)
		os.Exit(code)
	case "middle":
		// The boot's parent (a TaskManager): starts the boot, then waits to be killed.
		self, _ := os.Executable()
		boot := exec.Command(self)
		boot.Env = append(os.Environ(), fakeEnv+"=boot")
		boot.Start()
		time.Sleep(time.Hour)
	}
}

func fakeWorker(t *testing.T, role string) *worker {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return &worker{path: self, env: append(os.Environ(), fakeEnv+"="+role, "FAKE_DIR="+dir), dir: dir,
		parent: os.Getppid(), grace: 200 * time.Millisecond, poll: 50 * time.Millisecond}
}

// alive reports whether pid is a live process (not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitDead waits (bounded) until pid is gone.
func waitDead(t *testing.T, pid int, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still runs a minute after its boot ended it", what, pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkerReportingDoneIsEnded(t *testing.T) {
	w := fakeWorker(t, "worker-done")
	code, err := w.run(context.Background())
	if code != 0 || err != nil {
		t.Fatalf("run = %d, %v; want 0, nil once the worker reports it is done", code, err)
	}
	waitDead(t, readPID(t, filepath.Join(w.dir, "grandchild.pid")), "the worker's child")
}

func TestWorkerExitCodeIsTheBoots(t *testing.T) {
	w := fakeWorker(t, "worker-fail")
	code, err := w.run(context.Background())
	if code != 3 || err == nil {
		t.Fatalf("run = %d, %v; want the worker's exit code 3 and an error", code, err)
	}
}

func TestStoppedBootKillsAStubbornWorker(t *testing.T) {
	w := fakeWorker(t, "worker-stubborn")
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { _, err := w.run(ctx); result <- err }()
	pid := readPID(t, filepath.Join(w.dir, "worker.pid"))
	cancel()
	if err := <-result; err == nil {
		t.Error("run returned no error for a stopped boot")
	}
	waitDead(t, pid, "a worker ignoring SIGTERM")
}

func TestWorkerEndsWhenTheBootsParentDies(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	middle := exec.Command(self)
	middle.Env = append(os.Environ(), fakeEnv+"=middle", "FAKE_DIR="+dir)
	if err := middle.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "worker.pid"))
	middle.Process.Kill() // the TaskManager dies; the boot is reparented
	middle.Wait()
	waitDead(t, pid, "the worker of a boot whose parent died")
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "boot.exit"))
		if err == nil {
			if !strings.Contains(string(b), "parent") {
				t.Errorf("boot ended with %q, want the parent's death", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the boot did not end after its parent died")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWorkerDiesWithAKilledBoot(t *testing.T) {
	dir := t.TempDir()
	self, _ := os.Executable()
	boot := exec.Command(self)
	boot.Env = append(os.Environ(), fakeEnv+"=boot", "FAKE_DIR="+dir)
	if err := boot.Start(); err != nil {
		t.Fatal(err)
	}
	pid := readPID(t, filepath.Join(dir, "worker.pid"))
	boot.Process.Kill() // SIGKILL: the boot cannot clean up; Pdeathsig must
	boot.Wait()
	waitDead(t, pid, "the worker of a boot killed with SIGKILL")
}

func TestSweepRemovesOnlyAbandonedDirectories(t *testing.T) {
	root := t.TempDir()
	live, err := newWorkDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer live.remove()
	// An abandoned directory: made and locked by a boot that is gone (its lock released).
	gone, err := newWorkDir(root)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(gone.staged()+"-worker"), []byte("a worker binary"), 0o600)
	gone.lock.Close()
	sweepStale(root)
	if _, err := os.Stat(live.dir); err != nil {
		t.Errorf("the live worker's directory was removed: %v", err)
	}
	if _, err := os.Stat(gone.dir); !os.IsNotExist(err) {
		t.Errorf("the abandoned directory %s is still there (%v)", gone.dir, err)
	}
	live.remove()
	if left, _ := filepath.Glob(filepath.Join(root, "*")); len(left) != 0 {
		t.Errorf("left under the root after the boot ended: %v", left)
	}
}

func TestUnquoteID(t *testing.T) {
	for in, want := range map[string]string{"'job-001[job]_go'": "job-001[job]_go", "1-1": "1-1", "'": "'", "''": "", "'a": "'a"} {
		if got := unquoteID(in); got != want {
			t.Errorf("unquoteID(%q) = %q, want %q", in, got, want)
		}
	}
}

// Python's options, as prism hands them to a Go worker of a cross-language read, must
// decode into the Go harness's typed options.
func TestForGoHarness(t *testing.T) {
	py := `{"beam:option:parallelism:v1":"-1", "beam:option:experiments:v1":["beam_fn_api"], "beam:option:runner:v1":"PortableRunner",
		"beam:option:retain_docker_containers:v1":"yes", "beam:option:app_name:v1":7, "beam:option:flink_master:v1":"[auto]"}`
	got, err := forGoHarness(py)
	if err != nil {
		t.Fatal(err)
	}
	var w runtime.RawOptionsWrapper
	if err := json.Unmarshal([]byte(got), &w); err != nil {
		t.Fatalf("the Go harness cannot decode %s: %v", got, err)
	}
	if w.Parallelism != -1 || w.Runner != "PortableRunner" || len(w.Experiments) != 1 || w.AppName != "" || w.RetainDocker {
		t.Errorf("decoded %+v from %s", w, got)
	}
	if !strings.Contains(got, `"beam:option:flink_master:v1":"[auto]"`) {
		t.Errorf("%s lost an option the harness does not type", got)
	}
}
