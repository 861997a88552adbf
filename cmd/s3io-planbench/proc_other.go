//go:build !linux

package main

import (
	"os"
	"os/exec"
	"time"
)

// peakRSSKiB is not reported where ru_maxrss has another unit or does not exist.
func peakRSSKiB(*os.ProcessState) int64 { return 0 }

// selfCPU is not measured without Linux's getrusage here: CPU columns read zero.
func selfCPU() time.Duration { return 0 }

// setParentDeathSignal does nothing where there is no parent-death signal.
func setParentDeathSignal(*exec.Cmd) {}
