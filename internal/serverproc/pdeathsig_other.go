//go:build !linux

package serverproc

import "os/exec"

// setParentDeathSignal does nothing where there is no parent-death signal; Close still stops
// the server on every normal exit.
func setParentDeathSignal(*exec.Cmd) {}
