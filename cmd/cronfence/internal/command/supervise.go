package command

import "time"

// SuperviseArg is the argument that makes a binary run Supervise with the
// arguments after it. A binary that sets Spec.Supervisor to
// SelfSupervisor() checks for it first thing in main, before parsing its
// own flags:
//
//	if len(os.Args) > 1 && os.Args[1] == command.SuperviseArg {
//		os.Exit(command.Supervise(os.Args[2:]))
//	}
const SuperviseArg = "__supervise"

const (
	// statusFD is the supervisor's file descriptor of the status pipe: the
	// first of exec.Cmd.ExtraFiles.
	statusFD = 3
	// exitSupervisorUsage is the supervisor's exit status when it is run
	// with bad arguments (by hand, not by Run).
	exitSupervisorUsage = 125
	// supervisorMargin is how long Run waits for a cancelled supervisor
	// past KillGrace before it kills the supervisor itself.
	supervisorMargin = 5 * time.Second
	// parentPoll is how often the supervisor checks that its parent is
	// alive, in case the parent-death signal was missed.
	parentPoll = 500 * time.Millisecond
)

// The status pipe carries one line per event, from the supervisor to Run:
//
//	started PID   the command started; PID is its pid and group id
//	exit N        it exited with status N, and nothing of it is left
//	signal N      it was killed by signal N, and nothing of it is left
//	error TEXT    it could not start
const (
	statusStarted = "started"
	statusExit    = "exit"
	statusSignal  = "signal"
	statusError   = "error"
)
