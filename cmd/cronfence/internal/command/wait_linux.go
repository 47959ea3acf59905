package command

import (
	"errors"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// waitExit blocks until cmd's process has exited, leaving it unreaped (a
// zombie), so its pid, which is also its group's id, cannot be reused
// before the group is killed; the caller then reaps it with cmd.Wait.
func waitExit(cmd *exec.Cmd) (reaped bool, err error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return false, nil
		}
	}
}

// dieWithParent has the kernel send SIGKILL to the command when this
// process dies, even by SIGKILL, so a process killed with -9 does not
// leave its command running without a lease. Only the command gets it,
// not its children: that is what the supervisor (Spec.Supervisor) adds.
// The signal follows the OS thread that forked, which Run keeps locked to
// its goroutine until the child is reaped: Go ends a thread only when a
// goroutine that locked it exits still locked.
func dieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
