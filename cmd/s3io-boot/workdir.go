package main

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// workDirPattern names a worker's private directory; sweepStale looks for it.
const workDirPattern = "s3io-worker-*"

// workDir is one worker's private directory. The boot holds an exclusive flock on its lock
// file for as long as it runs, so another boot can tell a live directory from one left by a
// boot that was killed (the kernel drops the lock with the process).
type workDir struct {
	dir  string
	lock *os.File
}

func newWorkDir(root string) (*workDir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("worker directory root %s: %w", root, err)
	}
	// The directory is locked under a name sweepStale does not look at and renamed once
	// locked, so a sweep can never take a new directory for an abandoned one.
	tmp, err := os.MkdirTemp(root, ".s3io-new-*")
	if err != nil {
		return nil, fmt.Errorf("worker directory under %s: %w", root, err)
	}
	lock, err := os.OpenFile(filepath.Join(tmp, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err == nil {
		err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	dir := filepath.Join(root, "s3io-worker-"+strings.TrimPrefix(filepath.Base(tmp), ".s3io-new-"))
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		if lock != nil {
			lock.Close()
		}
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("lock worker directory under %s: %w", root, err)
	}
	return &workDir{dir: dir, lock: lock}, nil
}

func (w *workDir) staged() string { return filepath.Join(w.dir, "staged") }

func (w *workDir) remove() {
	if err := os.RemoveAll(w.dir); err != nil {
		log.Printf("s3io-boot: remove %s: %v", w.dir, err)
	}
	w.lock.Close()
}

// sweepStale removes the worker directories under root whose boot no longer runs.
func sweepStale(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, workDirPattern))
	for _, dir := range dirs {
		lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			if err := os.RemoveAll(dir); err == nil {
				log.Printf("s3io-boot: removed %s, left by a worker that was killed", dir)
			}
		}
		lock.Close()
	}
}
