//go:build !linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"time"
)

// setParentDeathSignal does nothing where there is no parent-death signal.
func setParentDeathSignal(*exec.Cmd) {}

// usage returns a finished child's CPU time; peak RSS is reported only on Linux, where
// ru_maxrss has a known unit.
func usage(ps *os.ProcessState) (cpu time.Duration, maxRSSKiB int64) {
	return ps.UserTime() + ps.SystemTime(), 0
}

// selfCPU needs getrusage; elsewhere the floor's and the proxy's CPU time read as zero.
func selfCPU() time.Duration { return 0 }

// offHeap is an ordinary allocation where there is no anonymous mmap here.
func offHeap(n int) []byte { return make([]byte, n) }

// processCPU needs /proc; elsewhere the server's CPU time is not reported.
func processCPU(int) (time.Duration, error) {
	return 0, errors.New("process CPU time needs /proc")
}

// systemBusy needs /proc; elsewhere other load is not reported.
func systemBusy() (time.Duration, error) {
	return 0, errors.New("system CPU time needs /proc")
}
