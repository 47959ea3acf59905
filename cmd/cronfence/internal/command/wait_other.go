//go:build !linux

package command

import (
	"os/exec"
	"syscall"
)

// waitExit reaps cmd where waitid with WNOWAIT is not available; the
// group is killed right after, by its id.
func waitExit(cmd *exec.Cmd) (reaped bool, err error) {
	return true, cmd.Wait()
}

// dieWithParent does nothing where the kernel has no parent-death signal.
func dieWithParent(*syscall.SysProcAttr) {}
