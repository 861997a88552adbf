package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"
)

// doneLine is what Beam's Go worker prints on stderr when its runner closed the control
// stream; the worker then sleeps until it is killed (harness/init/init.go).
const doneLine = "Worker exited successfully!"

// worker runs one SDK worker process and ends it with its boot.
type worker struct {
	path   string
	args   []string
	env    []string
	dir    string
	parent int           // the boot's parent when it started: its death ends the worker
	grace  time.Duration // between SIGTERM and SIGKILL when the worker is stopped
	poll   time.Duration // how often the parent is checked; a second if zero
}

// run starts the worker and waits until it exits by itself, reports its work done, ctx is
// cancelled or the boot's parent dies; it returns the boot's exit code. The worker is in
// a process group of its own, and every process of that group is killed before run
// returns, so nothing the worker started outlives it.
func (w *worker) run(ctx context.Context) (int, error) {
	cmd := exec.Command(w.path, w.args...)
	cmd.Env, cmd.Dir, cmd.Stdout = w.env, w.dir, os.Stdout
	// Pdeathsig fires when the thread that started the child ends, so the start happens
	// on a thread locked for the boot's lifetime; it covers a boot killed with SIGKILL.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return 1, err
	}
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the boot
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return 1, fmt.Errorf("start worker %s: %w", w.path, err)
	}
	done := make(chan struct{})
	go watchStderr(stderr, os.Stderr, done)

	poll := w.poll
	if poll == 0 {
		poll = time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			w.killGroup(cmd.Process.Pid)
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				return exit.ExitCode(), fmt.Errorf("the worker exited: %w", err)
			}
			if err != nil {
				return 1, err
			}
			return 0, nil
		case <-done:
			w.stop(cmd.Process.Pid, exited)
			return 0, nil
		case <-ctx.Done():
			w.stop(cmd.Process.Pid, exited)
			return 0, fmt.Errorf("stopped: %w", context.Cause(ctx))
		case <-tick.C:
			if os.Getppid() != w.parent {
				w.stop(cmd.Process.Pid, exited)
				return 1, fmt.Errorf("the boot's parent (pid %d) died; its worker was stopped", w.parent)
			}
		}
	}
}

// stop ends the worker's process group: SIGTERM, then SIGKILL after the grace period.
func (w *worker) stop(pid int, exited <-chan error) {
	syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(w.grace):
	}
	w.killGroup(pid)
}

// killGroup kills whatever is left of the worker's process group.
func (w *worker) killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}

// watchStderr copies the worker's stderr through and closes done when the worker reports
// that its runner is done with it.
func watchStderr(r io.Reader, out io.Writer, done chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	reported := false
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(out, line)
		if !reported && strings.TrimSpace(line) == doneLine {
			reported = true
			close(done)
		}
	}
	io.Copy(out, r) // a line over the scanner's limit: pass the rest through unscanned
}
