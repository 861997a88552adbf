//go:build !linux

package main

import (
	"errors"
	"os/exec"
	"time"
)

// Elsewhere there is no parent-death signal, the floor's and the proxy's CPU time read as
// zero, the floor's records are on the heap, and the server's and other processes' CPU time
// are not reported.
func setParentDeathSignal(*exec.Cmd)        {}
func selfCPU() time.Duration                { return 0 }
func offHeap(n int) []byte                  { return make([]byte, n) }
func processCPU(int) (time.Duration, error) { return 0, errors.ErrUnsupported }
func systemBusy() (time.Duration, error)    { return 0, errors.ErrUnsupported }
