package main

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// peakRSSKiB is a finished child's peak resident set, from the rusage wait4 returned for
// it: Linux reports ru_maxrss in KiB (macOS in bytes, hence Linux only).
func peakRSSKiB(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}

// selfCPU is the CPU time (user + system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// setParentDeathSignal has the kernel kill a child when the bench dies, so an interrupted
// bench leaves no planner listing in the background.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
