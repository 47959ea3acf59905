package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisorSupported: the supervisor needs PR_SET_CHILD_SUBREAPER.
const supervisorSupported = true

// sigKillNow, sent to the supervisor, kills everything of the command at
// once. It is also the supervisor's parent-death signal: a caught signal,
// unlike SIGKILL, lets the supervisor kill the descendants first.
const sigKillNow = syscall.SIGUSR1

// SelfSupervisor returns the Spec.Supervisor that re-executes the running
// binary, which must dispatch SuperviseArg to Supervise. It names
// /proc/self/exe rather than os.Executable()'s path: the inode that runs,
// so a binary replaced or removed on disk by an upgrade still supervises
// with its own code and protocol.
func SelfSupervisor() []string { return []string{"/proc/self/exe", SuperviseArg} }

// Supervise is the supervisor process's main; args are what Run appends
// to Spec.Supervisor: the kill grace, the program's path and its argv. It
// returns the process's exit status. Run reads the command's own status
// from the status pipe (file descriptor 3), not from this one.
//
// The supervisor is a child subreaper, so every descendant of the command
// that loses its parent, a daemonised or setsid one included, becomes its
// child. It starts the command in a group of its own (with the
// parent-death signal SIGKILL, from a thread it never leaves), reaps
// orphans as they exit, and ends everything:
//
//   - on SIGTERM (Run's cancellation): SIGTERM to the group and every
//     descendant, SIGKILL to all after the grace;
//   - on SIGUSR1 (Run's kill-now, and the parent-death signal Run sets) or
//     when its parent is seen gone: SIGKILL to all at once;
//   - when the command exits: SIGKILL to whatever is left.
//
// It exits once it has no child left.
func Supervise(args []string) int {
	if len(args) < 3 {
		fmt.Fprintf(os.Stderr, "cronfence: %s is internal: %s GRACE PATH ARGV0 [ARG...]\n", SuperviseArg, SuperviseArg)
		return exitSupervisorUsage
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil || grace <= 0 {
		fmt.Fprintf(os.Stderr, "cronfence: %s: grace %q is not a positive duration\n", SuperviseArg, args[0])
		return exitSupervisorUsage
	}
	// The command must not inherit the status pipe: it would hold it open.
	syscall.CloseOnExec(statusFD)
	s := &supervisor{
		self:   os.Getpid(),
		parent: os.Getppid(),
		grace:  grace,
		status: os.NewFile(statusFD, "cronfence-status"),
	}
	return s.run(args[1], args[2:])
}

// supervisor is the state of one Supervise.
type supervisor struct {
	self, parent int
	grace        time.Duration
	status       io.Writer

	leader int // the command's pid and group id; set before any goroutine starts

	mu           sync.Mutex
	leaderReaped bool // once true the group id may be reused: never signal it
}

func (s *supervisor) report(kind string, value any) {
	_, _ = fmt.Fprintf(s.status, "%s %v\n", kind, value)
}

func (s *supervisor) run(path string, argv []string) int {
	// The command's parent-death signal follows the forking thread: this
	// one, never unlocked, lives as long as the process.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		s.report(statusError, fmt.Sprintf("PR_SET_CHILD_SUBREAPER: %v", err))
		return exitSupervisorUsage
	}
	sigs := make(chan os.Signal, 8)
	// Before the start: a signal that arrives meanwhile waits in sigs.
	// SIGHUP and SIGINT (a terminal's) are caught and dropped: the
	// supervisor must not die without killing the tree, and only Run says
	// when to. Caught, not ignored: exec resets them for the command.
	signal.Notify(sigs, syscall.SIGTERM, sigKillNow, syscall.SIGCHLD, syscall.SIGHUP, syscall.SIGINT)
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Stdin:       os.Stdin,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	if err := cmd.Start(); err != nil {
		s.report(statusError, err)
		return exitNotFoundStatus
	}
	s.leader = cmd.Process.Pid
	s.report(statusStarted, s.leader)

	done, watched := make(chan struct{}), make(chan struct{})
	go s.watch(sigs, done, watched)
	ws := s.waitLeader()
	close(done)
	<-watched
	signal.Stop(sigs)
	s.sweep()

	switch {
	case ws.Signaled():
		s.report(statusSignal, int(ws.Signal()))
		return 128 + int(ws.Signal())
	default:
		s.report(statusExit, ws.ExitStatus())
		return ws.ExitStatus()
	}
}

// exitNotFoundStatus is the supervisor's exit status when the command
// cannot start, as a shell's.
const exitNotFoundStatus = 127

// waitLeader waits for the command to exit, kills what is left of its
// group while its pid, the group id, is still held by the zombie, and
// reaps it.
func (s *supervisor) waitLeader() unix.WaitStatus {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, s.leader, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = unix.Kill(-s.leader, unix.SIGKILL)
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(s.leader, &ws, 0, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	s.leaderReaped = true
	return ws
}

// watch handles signals and the parent check until done is closed.
func (s *supervisor) watch(sigs <-chan os.Signal, done <-chan struct{}, watched chan<- struct{}) {
	defer close(watched)
	tick := time.NewTicker(parentPoll)
	defer tick.Stop()
	var (
		terminating bool
		grace       <-chan time.Time
	)
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			switch sig {
			case syscall.SIGTERM:
				if !terminating {
					terminating = true
					s.signalAll(unix.SIGTERM)
					t := time.NewTimer(s.grace)
					defer t.Stop()
					grace = t.C
				}
			case sigKillNow:
				s.signalAll(unix.SIGKILL)
			case syscall.SIGCHLD:
				s.reapOrphans()
			}
		case <-grace:
			s.signalAll(unix.SIGKILL)
		case <-tick.C:
			if os.Getppid() != s.parent {
				s.signalAll(unix.SIGKILL) // the parent died and the signal was missed
			}
			s.reapOrphans()
		}
	}
}

// signalAll sends sig to the command's group and to every descendant,
// those that left the group included.
func (s *supervisor) signalAll(sig unix.Signal) {
	s.mu.Lock()
	if !s.leaderReaped {
		_ = unix.Kill(-s.leader, sig)
	}
	s.mu.Unlock()
	for _, pid := range descendants(readProcs(), s.self) {
		_ = unix.Kill(pid, sig)
	}
}

// reapOrphans reaps the exited children other than the command, which
// waitLeader reaps: orphans of the command's tree, reparented here, would
// otherwise stay zombies until the run ends.
func (s *supervisor) reapOrphans() {
	for _, pid := range zombieChildren(readProcs(), s.self) {
		if pid == s.leader {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// sweep kills every remaining descendant and reaps them until no child is
// left. A descendant whose parent dies is reparented here, so no child
// left means no descendant left.
func (s *supervisor) sweep() {
	for {
		for _, pid := range descendants(readProcs(), s.self) {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		var ws unix.WaitStatus
		_, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil: // ECHILD: nothing left
			return
		}
	}
}
