package main

import (
	"fmt"
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

// processCPU returns the CPU time a running process has used so far, from /proc/PID/stat:
// utime and stime are fields 14 and 15, counted after the command name's closing parenthesis
// (the name may contain spaces).
func processCPU(pid int) (time.Duration, error) {
	s := readFile(fmt.Sprintf("/proc/%d/stat", pid))
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %.80q", pid, s)
	}
	return ticks(f[11:13])
}

// systemBusy returns the CPU time all processes have used since boot: user, nice and system
// from the first line of /proc/stat. Interrupt time is left out (loopback networking charges
// the run's own traffic there), and steal is another VM's. Less the child's and the server's
// share of a run, what remains is other processes' load.
func systemBusy() (time.Duration, error) {
	line, _, _ := strings.Cut(readFile("/proc/stat"), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("unexpected /proc/stat: %.80q", line)
	}
	return ticks(f[1:4])
}

// ticks sums fields counted in USER_HZ, which is 100 on every Linux architecture Go supports
// (and not obtainable without cgo).
func ticks(fields []string) (time.Duration, error) {
	var sum int64
	for _, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, err
		}
		sum += n
	}
	return time.Duration(sum) * time.Second / 100, nil
}
