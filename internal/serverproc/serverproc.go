// Package serverproc runs a server process for the tests (versitygw, MinIO): started so that
// the kernel kills it if its starter dies, its output kept, ready once its health endpoint
// answers 200, stopped once. Test support: never imported by the library.
package serverproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Process is a running server. Close stops it; its directory is left as it is, so a caller
// can serve the same data again from a later process.
type Process struct {
	// URL is the path-style endpoint, http://127.0.0.1:PORT.
	URL string
	// Port is the loopback port the server listens on.
	Port int
	// Dir is the directory the server serves.
	Dir string

	name string
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // the process's exit status, valid once done is closed
	once sync.Once
}

// Ready is how Launch knows the server serves: a GET of Path answering 200, polled every
// Poll for at most Timeout.
type Ready struct {
	Path          string
	Poll, Timeout time.Duration
}

// Launch starts cmd, a server called name listening on 127.0.0.1:port and serving dir,
// and waits until it is ready. cmd is given the parent-death signal (on Linux), so that an
// interrupted test leaves no server holding its port, and its output is kept for Logs.
func Launch(name string, cmd *exec.Cmd, port int, dir string, ready Ready) (*Process, error) {
	setParentDeathSignal(cmd)
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &Process{URL: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port, Dir: dir, name: name, cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := p.waitReady(ready); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (p *Process) waitReady(r Ready) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(r.Timeout)
	var last error
	for {
		resp, err := client.Get(p.URL + r.Path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s answered %s", r.Path, resp.Status)
		}
		last = err
		select {
		case <-p.done:
			return fmt.Errorf("%s on %s exited before it was ready (%v):\n%s", p.name, p.URL, p.err, p.Logs())
		case <-time.After(r.Poll):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s on %s not ready after %v (last error %v):\n%s", p.name, p.URL, r.Timeout, last, p.Logs())
		}
	}
}

// Pid is the server's process ID, for callers that account for its CPU time.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Logs returns what the server has written to stdout and stderr so far.
func (p *Process) Logs() string { return p.logs.String() }

// Exited is closed when the server process has exited, whether by Close or on its own.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Close kills the server and waits for it to exit. It is safe to call more than once.
func (p *Process) Close() error {
	p.once.Do(func() {
		if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			return
		}
		<-p.done
	})
	return nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free loopback port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// lockedBuffer collects the server's output, written by the exec package's copying
// goroutines while Logs may read it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
