package command

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runSupervised runs cmd under spec.Supervisor: the supervisor is this
// process's child (leading a group of its own, with SIGUSR1 as its
// parent-death signal), the command is the supervisor's. Cancellation is
// SIGTERM to the supervisor, which applies grace itself; spec.KillNow is
// SIGUSR1. A supervisor that outlives grace by supervisorMargin is killed.
func runSupervised(ctx context.Context, spec Spec, cmd *exec.Cmd, grace time.Duration, onStart func()) outcome {
	args := append(append([]string(nil), spec.Supervisor[1:]...), grace.String(), cmd.Path)
	args = append(args, cmd.Args...)
	sup := exec.Command(spec.Supervisor[0], args...)
	if sup.Err != nil {
		return outcome{startErr: fmt.Errorf("command: start the supervisor of %s: %w", describe(spec), sup.Err)}
	}
	sup.Env, sup.Dir = cmd.Env, cmd.Dir
	sup.Stdin, sup.Stdout, sup.Stderr = cmd.Stdin, cmd.Stdout, cmd.Stderr
	sr, sw, err := os.Pipe()
	if err != nil {
		return outcome{startErr: fmt.Errorf("command: %s: status pipe: %w", describe(spec), err)}
	}
	defer sr.Close()
	sup.ExtraFiles = []*os.File{sw}
	sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sigKillNow}
	err = sup.Start()
	_ = sw.Close() // the supervisor holds its own copy
	if err != nil {
		return outcome{startErr: fmt.Errorf("command: start the supervisor %q of %s: %w", spec.Supervisor[0], describe(spec), err)}
	}
	onStart()

	var st supervisorStatus
	read, ready := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(read)
		st.read(sr, ready)
	}()
	exited := make(chan struct{})
	var (
		wg        sync.WaitGroup
		cancelled bool // written by the goroutine, read after wg.Wait
	)
	wg.Go(func() { cancelled = signalSupervisor(ctx, sup.Process, grace, spec.KillNow, ready, exited) })
	waitErr := sup.Wait()
	close(exited)
	wg.Wait()
	<-read // EOF: the supervisor, the only writer, is gone

	o := outcome{cancelled: cancelled}
	switch {
	case st.startErr != "":
		o.startErr = fmt.Errorf("command: start %s: %s", describe(spec), st.startErr)
	case st.final:
		o.code, o.signal = st.code, st.signal
	default:
		// The supervisor died before the command's end (SIGKILL, OOM):
		// the kernel killed the command (its parent-death signal), and
		// its group is killed here; a descendant that left the group may
		// survive.
		if st.leader > 0 {
			_ = syscall.Kill(-st.leader, syscall.SIGKILL)
		}
		o.code = sup.ProcessState.ExitCode()
		if ws, ok := sup.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			o.signal = ws.Signal()
		}
		o.note = fmt.Errorf("command: the supervisor of %s ended before reporting the command's status (%v)", describe(spec), waitErr)
		if !st.started() {
			o.startErr = o.note
		}
	}
	return o
}

// signalSupervisor sends SIGTERM to the supervisor when ctx ends, SIGUSR1
// when killNow is closed then, and SIGKILL if it is still there
// supervisorMargin after grace, until exited is closed. It reports whether
// ctx ended first. No signal is sent before ready is closed: until the
// supervisor has started the command it may not handle them yet, and
// SIGTERM would end it without a word; the command then gets it at once.
func signalSupervisor(ctx context.Context, sup *os.Process, grace time.Duration, killNow, ready, exited <-chan struct{}) (cancelled bool) {
	select {
	case <-exited:
		return false
	case <-ctx.Done():
	}
	backstop := time.NewTimer(grace + supervisorMargin)
	defer backstop.Stop()
	select {
	case <-exited:
		return true
	case <-ready:
		_ = sup.Signal(syscall.SIGTERM)
	case <-backstop.C: // never ready: stuck before the start
		_ = sup.Kill()
		return true
	}
	for {
		select {
		case <-exited:
			return true
		case <-killNow:
			_ = sup.Signal(sigKillNow)
			killNow = nil
		case <-backstop.C:
			_ = sup.Kill()
			return true
		}
	}
}

// supervisorStatus is what the supervisor reported on the status pipe.
type supervisorStatus struct {
	leader   int
	startErr string
	final    bool // an exit or signal line came
	code     int
	signal   syscall.Signal
}

func (st *supervisorStatus) started() bool { return st.leader > 0 }

// read reads the status lines until EOF, closing ready when the command
// has started or at EOF, whichever comes first.
func (st *supervisorStatus) read(r *os.File, ready chan<- struct{}) {
	var once sync.Once
	setReady := func() { once.Do(func() { close(ready) }) }
	defer setReady()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		kind, value, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.Atoi(value)
		switch kind {
		case statusStarted:
			st.leader = n
			setReady()
		case statusError:
			st.startErr = value
		case statusExit:
			st.final, st.code = true, n
		case statusSignal:
			st.final, st.signal = true, syscall.Signal(n)
		}
	}
}
