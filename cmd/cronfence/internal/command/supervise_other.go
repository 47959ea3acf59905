//go:build !linux

package command

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// supervisorSupported: without PR_SET_CHILD_SUBREAPER a supervisor cannot
// adopt the command's orphans; build refuses Spec.Supervisor.
const supervisorSupported = false

// SelfSupervisor returns nil where Supervise is not available: commands
// are then run directly.
func SelfSupervisor() []string { return nil }

// Supervise is not available on this system.
func Supervise([]string) int {
	fmt.Fprintf(os.Stderr, "cronfence: %s needs Linux\n", SuperviseArg)
	return exitSupervisorUsage
}

// runSupervised is never reached: build refuses Spec.Supervisor here.
func runSupervised(context.Context, Spec, *exec.Cmd, time.Duration, func()) outcome {
	return outcome{startErr: fmt.Errorf("%w: Supervisor needs Linux", ErrInvalid)}
}
