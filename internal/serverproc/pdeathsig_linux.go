package serverproc

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the server when the process that started it
// dies, so a killed test binary or benchmark leaves no server holding its port.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
