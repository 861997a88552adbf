package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// setParentDeathSignal makes the kernel kill a child run when the benchmark dies, so an
// interrupted benchmark leaves no pipeline reading in the background.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// usage returns a finished child's CPU time (user + system) and its peak resident set in
// KiB, from the rusage that wait4 returned for it.
func usage(ps *os.ProcessState) (cpu time.Duration, maxRSSKiB int64) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return ps.UserTime() + ps.SystemTime(), 0
	}
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(ru.Utime) + tv(ru.Stime), ru.Maxrss // Linux reports ru_maxrss in KiB
}

// selfCPU returns the CPU time (user + system) this process has used so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// offHeap returns n zeroed bytes of anonymous memory outside the Go heap, which the garbage
// collector neither scans nor counts towards its next cycle; it is never freed.
func offHeap(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		panic(fmt.Sprintf("mmap %d bytes: %v", n, err))
	}
	return b
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux
// architecture Go supports, and not obtainable without cgo.
const clockTicks = 100

// processCPU returns the CPU time (user + system) a running process has used so far, from
// /proc/<pid>/stat: the benchmark samples the S3 server before and after each run.
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; the fields after its closing
	// parenthesis are space-separated: state is field 3, utime 14, stime 15.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.80q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.80q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.80q", pid, s)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// systemBusy returns the CPU time all processes on the machine have used since boot, from
// the first line of /proc/stat: user, nice and system time. Interrupt and softirq time are
// left out, because loopback networking charges the run's own traffic there and no process
// gets it; steal is another VM's, not another process's. The benchmark subtracts the child's
// and the server's share of a run: what remains is other processes' load, which makes that
// run's numbers suspect.
func systemBusy() (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %.80q", line)
	}
	var busy int64
	for _, v := range f[1:4] { // user nice system
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("unexpected /proc/stat: %.80q", line)
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}
