package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// escapees is a shell fragment that leaves three processes behind, each
// writing its pid into a file of the working directory: a background
// child in the group (bg.pid), a child that left the group with setsid
// (setsid.pid), and a daemon, setsid and orphaned by a double fork
// (daemon.pid). It returns once the three files are written.
const escapees = `sleep 1000 & echo $! > bg.pid
setsid sleep 1000 & echo $! > setsid.pid
(setsid sh -c 'sleep 1000 & echo $! > daemon.pid' &)
while [ ! -s daemon.pid ]; do sleep 0.01; done
`

var escapeeFiles = []string{"bg.pid", "setsid.pid", "daemon.pid"}

func needSupervisor(t *testing.T) []string {
	t.Helper()
	sup := SelfSupervisor()
	if sup == nil {
		t.Skipf("no supervisor on %s", runtime.GOOS)
	}
	return sup
}

// escapeePIDs waits for the escapees' pid files in dir and returns the
// pids, killing them at cleanup should the test fail.
func escapeePIDs(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for _, f := range escapeeFiles {
		pid := waitForPID(t, filepath.Join(dir, f))
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		pids = append(pids, pid)
	}
	return pids
}

// TestSupervisedCancelKillsEveryDescendant: cancellation reaches the
// processes that left the command's group too.
func TestSupervisedCancelKillsEveryDescendant(t *testing.T) {
	t.Parallel()
	sup := needSupervisor(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		done <- Run(ctx, Spec{Shell: escapees + "wait", Dir: dir, KillGrace: time.Minute, Supervisor: sup})
	}()
	pids := escapeePIDs(t, dir)
	start := time.Now()
	cancel()
	res := <-done
	if !res.Signaled || res.ExitCode != 128+int(syscall.SIGTERM) || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("exit %d signaled %v err %v, want killed by SIGTERM and cancelled", res.ExitCode, res.Signaled, res.Err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %s after cancel; SIGTERM should end it at once, not after the 1m grace", d)
	}
	for _, pid := range pids {
		waitGone(t, pid)
	}
}

// TestSupervisedExitKillsEveryDescendant: when the command exits, the
// processes it left behind, in its group or not, are killed before Run
// returns.
func TestSupervisedExitKillsEveryDescendant(t *testing.T) {
	t.Parallel()
	sup := needSupervisor(t)
	dir := t.TempDir()
	res := Run(context.Background(), Spec{Shell: escapees + "echo bye", Dir: dir, Supervisor: sup})
	if res.Err != nil || res.ExitCode != 0 || fmt.Sprint(res.Output) != "[bye]" {
		t.Fatalf("exit %d err %v output %q", res.ExitCode, res.Err, res.Output)
	}
	for _, f := range escapeeFiles {
		// Gone already: Run returns once the supervisor has reaped them all.
		if pid := readPID(t, filepath.Join(dir, f)); alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s: process %d alive after the run", f, pid)
		}
	}
}

// TestSupervisedKillNow: a command ignoring SIGTERM is killed as soon as
// KillNow is closed, well within its grace, in both modes.
func TestSupervisedKillNow(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		killNow := make(chan struct{})
		done := make(chan Result, 1)
		go func() {
			done <- Run(ctx, Spec{Shell: `trap "" TERM; sleep 1000 & echo $! > child.pid; wait; wait`, Dir: dir,
				KillGrace: time.Minute, KillNow: killNow, Supervisor: supervisor})
		}()
		child := waitForPID(t, filepath.Join(dir, "child.pid"))
		t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
		cancel()
		select {
		case res := <-done:
			t.Fatalf("ended on SIGTERM, which it ignores: %+v", res)
		case <-time.After(300 * time.Millisecond):
		}
		start := time.Now()
		close(killNow)
		res := <-done
		if !res.Signaled || res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d signaled %v err %v, want killed by SIGKILL", res.ExitCode, res.Signaled, res.Err)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("took %s after KillNow, want at once, not after the 1m grace", d)
		}
		waitGone(t, child)
	})
}

// TestSupervisedReapsOrphans: orphans of the command that exit while it
// runs are reaped at once, not left as zombies until the run ends.
func TestSupervisedReapsOrphans(t *testing.T) {
	t.Parallel()
	sup := needSupervisor(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() {
		done <- Run(ctx, Spec{Shell: `for i in 1 2 3 4 5; do (sleep 0.01 &); done; echo $PPID > sup.pid; exec sleep 1000`,
			Dir: dir, Supervisor: sup})
	}()
	defer func() { cancel(); <-done }()
	supPID := waitForPID(t, filepath.Join(dir, "sup.pid"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		procs := readProcs()
		zombies := zombieChildren(procs, supPID)
		if len(zombies) == 0 && len(descendants(procs, supPID)) == 1 { // the command only
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("supervisor %d still has zombie children %v after 5s", supPID, zombies)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSupervisedSupervisorKilled: a supervisor killed with SIGKILL takes
// the command with it (its parent-death signal), and Run says so.
func TestSupervisedSupervisorKilled(t *testing.T) {
	t.Parallel()
	sup := needSupervisor(t)
	dir := t.TempDir()
	done := make(chan Result, 1)
	go func() {
		done <- Run(context.Background(), Spec{Shell: `echo $PPID > sup.pid; echo $$ > leader.pid; sleep 1000; true`, Dir: dir, Supervisor: sup})
	}()
	supPID := waitForPID(t, filepath.Join(dir, "sup.pid"))
	leader := waitForPID(t, filepath.Join(dir, "leader.pid"))
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL) })
	if err := syscall.Kill(supPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := <-done
	// The shell can write its pid files in the moment between the
	// supervisor starting it and reporting that it started; a kill that
	// lands there leaves Run unable to tell the command ever ran, and it
	// says the command did not start. Either way the error names the
	// supervisor and the command is gone.
	notStarted := res.ExitCode == exitNotStarted && !res.Signaled
	if res.Err == nil || !strings.Contains(res.Err.Error(), "supervisor") || (!res.Signaled && !notStarted) {
		t.Errorf("exit %d signaled %v err %v, want an error naming the supervisor, the supervisor's signal or not started",
			res.ExitCode, res.Signaled, res.Err)
	}
	waitGone(t, leader)
}

// TestSupervisedAllDieWithRunner: kill -9 of the process calling Run
// kills every descendant of the command, those that left its group
// included. The runner is this test binary run as a helper process.
func TestSupervisedAllDieWithRunner(t *testing.T) {
	needSupervisor(t)
	t.Parallel()
	dir := t.TempDir()
	runner := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisedRunner$")
	runner.Env = append(os.Environ(), "CRONFENCE_TEST_RUNNER_DIR="+dir)
	if err := runner.Start(); err != nil {
		t.Fatal(err)
	}
	pids := escapeePIDs(t, dir)
	leader := waitForPID(t, filepath.Join(dir, "leader.pid"))
	supPID := waitForPID(t, filepath.Join(dir, "sup.pid"))
	if err := runner.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = runner.Wait()
	for _, pid := range append(pids, leader, supPID) {
		waitGone(t, pid)
	}
}

// TestHelperSupervisedRunner is the runner of TestSupervisedAllDieWithRunner,
// run in a process of its own.
func TestHelperSupervisedRunner(t *testing.T) {
	dir := os.Getenv("CRONFENCE_TEST_RUNNER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	Run(context.Background(), Spec{Shell: escapees + "echo $PPID > sup.pid; echo $$ > leader.pid; wait", Dir: dir, Supervisor: SelfSupervisor()})
}

// TestSupervisedCancelAtStart: a cancellation that comes while the
// supervisor is starting (before it handles signals) is not lost, and the
// run reports its cause, whether the command started or not.
func TestSupervisedCancelAtStart(t *testing.T) {
	t.Parallel()
	sup := needSupervisor(t)
	lost := errors.New("lease lost")
	for delay := range 10 {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Duration(delay)*time.Millisecond, func() { cancel(lost) })
		res := Run(ctx, Spec{Argv: []string{"sleep", "100"}, Supervisor: sup})
		if !errors.Is(res.Err, lost) || (!res.Signaled && res.ExitCode != -1) {
			t.Errorf("cancelled after %dms: exit %d signaled %v err %v, want the cause, and a signal or not started",
				delay, res.ExitCode, res.Signaled, res.Err)
		}
	}
}
