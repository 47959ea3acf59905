package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// DefaultKillGrace is the default of Spec.KillGrace.
	DefaultKillGrace = 10 * time.Second

	// DefaultMaxOutput is the default of Spec.MaxOutput.
	DefaultMaxOutput = 64 << 10

	// drainTimeout bounds reading the output after the group is killed. Only
	// a descendant that left the group (setsid) can still hold the pipe open
	// then; the run does not wait for it.
	drainTimeout = 2 * time.Second

	// exitNotStarted is Result.ExitCode when the command never started.
	exitNotStarted = -1
)

// ErrInvalid is wrapped by the error of a Spec that cannot be run: no
// command, both Argv and Shell, a bad Dir, a negative duration or size.
var ErrInvalid = errors.New("command: invalid spec")

// Spec is one command to run.
type Spec struct {
	// Argv is the program and its arguments; the program is looked up in
	// PATH when it has no slash. Exactly one of Argv and Shell is set.
	Argv []string

	// Shell is a command line run by /bin/sh -c. Exactly one of Argv and
	// Shell is set.
	Shell string

	// Env holds KEY=value entries added to os.Environ(); an entry replaces
	// the process's own variable of the same name. Defaults to none.
	Env []string

	// Dir is the working directory. Defaults to the process's own.
	Dir string

	// KillGrace is how long the group has between SIGTERM and SIGKILL once
	// ctx ends. Defaults to DefaultKillGrace (10 seconds).
	KillGrace time.Duration

	// MaxOutput is how many bytes of the combined stdout and stderr are
	// kept, the most recent ones. Defaults to DefaultMaxOutput (64 KiB).
	MaxOutput int

	// Inherit gives the command this process's stdout and stderr instead
	// of capturing them; Result.Output is then empty. Defaults to false.
	Inherit bool
	// OnLine, when set (and Inherit is not), is called with each line the
	// command writes as soon as it is written, without its newline, and
	// with the stream it came from. stdout and stderr are then read
	// through pipes of their own, so lines of the two come in the order
	// they were read, which may differ from the order they were written.
	// A line longer than MaxLine comes in pieces; a last line without a
	// newline comes at the end. Calls never overlap. Result.Output keeps
	// the lines as without OnLine. Defaults to nil.
	OnLine func(Stream, string)
	// Supervisor is the argv of a program that calls Supervise with the
	// arguments Run appends (the running binary re-executed, as
	// SelfSupervisor returns). The supervisor reaps and kills every
	// descendant of the command, including those that left its group, and
	// kills them all when this process dies. Linux only. Defaults to none:
	// the command is this process's child and only its group is covered.
	Supervisor []string
	// KillNow, closed after ctx ended, cuts KillGrace short: everything of
	// the command gets SIGKILL at once (a second SIGINT, say). Defaults to
	// nil: the whole grace.
	KillNow <-chan struct{}
}

// Stream is where a line of output came from (Spec.OnLine).
type Stream int

const (
	Stdout Stream = iota + 1
	Stderr
)

func (s Stream) String() string {
	if s == Stderr {
		return "stderr"
	}
	return "stdout"
}

// MaxLine is the longest line Spec.OnLine is given whole: a longer one
// comes in pieces of this many bytes.
const MaxLine = 16 << 10

// Result is how a run ended.
type Result struct {
	// ExitCode is the command's exit status; 128+n when it was killed by
	// signal n (as a shell reports it); -1 when it never started.
	ExitCode int

	// Err is nil when the command exited with status 0 before ctx ended.
	// Otherwise it says why, on one line: the command could not start
	// (naming the program, not a shell script), "exit status 3", "killed
	// by signal 9 (killed)", preceded by "cancelled: " and the context's
	// cause (wrapped) when the run was cancelled. A started command's
	// error does not say what the command was.
	Err error

	// Output holds the last lines of the combined stdout and stderr, at
	// most Spec.MaxOutput bytes in all. A first line cut short by the bound
	// is dropped.
	Output []string

	// Signaled is true when the command was killed by a signal.
	Signaled bool

	// Cancelled is true when ctx ended before the command exited: the
	// command was signalled (SIGTERM, then SIGKILL after KillGrace).
	Cancelled bool
}

// Run runs spec's command in a process group of its own and waits for it.
// When ctx ends the group gets SIGTERM, then SIGKILL after spec.KillGrace;
// when the command exits, whatever is left of its group gets SIGKILL. With
// spec.Supervisor set, a supervisor process does the same for every
// descendant, in the group or not (see the package documentation).
func Run(ctx context.Context, spec Spec) Result {
	cmd, err := build(spec)
	if err != nil {
		return Result{ExitCode: exitNotStarted, Err: err}
	}
	grace := spec.KillGrace
	if grace == 0 {
		grace = DefaultKillGrace
	}
	maxOut := spec.MaxOutput
	if maxOut == 0 {
		maxOut = DefaultMaxOutput
	}
	if err := ctx.Err(); err != nil {
		return Result{ExitCode: exitNotStarted, Err: fmt.Errorf("command: %s not started: %w", describe(spec), context.Cause(ctx)), Cancelled: true}
	}

	var (
		out   *outputs
		tail  = newTail(maxOut)
		drain = make(chan struct{})
	)
	if spec.Inherit {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		close(drain)
	} else {
		out, err = newOutputs(spec.OnLine != nil)
		if err != nil {
			return Result{ExitCode: exitNotStarted, Err: fmt.Errorf("command: %s: output pipe: %w", describe(spec), err)}
		}
		cmd.Stdout, cmd.Stderr = out.writers()
		defer out.close()
	}
	onStart := func() {
		if out == nil {
			return
		}
		out.closeWriters() // only the child writes now: EOF when the last holder is gone
		go func() {
			defer close(drain)
			out.read(tail, spec.OnLine)
		}()
	}

	// The parent-death signal (Pdeathsig) follows the OS thread that forks:
	// keep this goroutine on it until the child is reaped, so no other
	// goroutine can lock the thread and end it while the child runs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var o outcome
	if len(spec.Supervisor) > 0 {
		o = runSupervised(ctx, spec, cmd, grace, onStart)
	} else {
		o = runDirect(ctx, spec, cmd, grace, onStart)
	}
	if o.startErr != nil {
		return Result{ExitCode: exitNotStarted, Err: o.startErr}
	}

	if out != nil {
		select {
		case <-drain:
		case <-time.After(drainTimeout):
			// A descendant out of reach holds the pipe open.
			out.stopReading()
			<-drain
		}
	}
	res := Result{ExitCode: o.code, Output: tail.lines(), Cancelled: o.cancelled}
	if o.signal != 0 {
		res.Signaled = true
		res.ExitCode = 128 + int(o.signal)
	}
	res.Err = o.err(ctx)
	return res
}

// err is how the command ended, on one line, when not with status 0 before
// ctx ended: what the command was (a script can be pages long) is left to
// the caller, which knows where its detail belongs.
func (o outcome) err(ctx context.Context) error {
	var how []string
	var wrapped []error
	switch {
	case o.signal != 0:
		how = append(how, fmt.Sprintf("killed by signal %d (%s)", int(o.signal), o.signal))
	case o.code != 0:
		how = append(how, fmt.Sprintf("exit status %d", o.code))
	case o.waitErr != nil:
		how = append(how, "waiting for it: %w")
		wrapped = append(wrapped, o.waitErr)
	}
	if o.note != nil {
		how = append(how, "%w")
		wrapped = append(wrapped, o.note)
	}
	if o.cancelled {
		how = append([]string{"cancelled: %w"}, how...)
		wrapped = append([]error{context.Cause(ctx)}, wrapped...)
	}
	if len(how) == 0 {
		return nil
	}
	args := make([]any, len(wrapped))
	for i, e := range wrapped {
		args[i] = e
	}
	return fmt.Errorf(strings.Join(how, "; "), args...)
}

// outcome is how a started (or not started) command ended, whichever way
// it was run.
type outcome struct {
	startErr  error          // the command never started
	code      int            // its exit status when it exited
	signal    syscall.Signal // the signal that killed it, or 0
	waitErr   error          // waiting for it failed
	note      error          // something else worth reporting (a dead supervisor)
	cancelled bool           // ctx ended before it exited
}

// runDirect runs cmd as a child of this process, leading its own group.
func runDirect(ctx context.Context, spec Spec, cmd *exec.Cmd, grace time.Duration, onStart func()) outcome {
	if err := cmd.Start(); err != nil {
		return outcome{startErr: fmt.Errorf("command: start %s: %w", describe(spec), err)}
	}
	onStart()
	pgid := cmd.Process.Pid
	exited := make(chan struct{})
	var (
		wg sync.WaitGroup
		o  outcome // cancelled is written by the goroutine, read after wg.Wait
	)
	wg.Go(func() { o.cancelled = signalOnCancel(ctx, pgid, grace, spec.KillNow, exited) })
	reaped, waitErr := waitExit(cmd)
	close(exited)
	wg.Wait()
	// The leader is gone (on Linux not yet reaped, so pgid is still ours):
	// nothing of the run may outlive it.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if !reaped {
		waitErr = cmd.Wait()
	}
	o.code = cmd.ProcessState.ExitCode()
	o.waitErr = waitErr
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		o.signal = ws.Signal()
	}
	return o
}

// signalOnCancel sends SIGTERM to the group when ctx ends, then SIGKILL
// after grace or as soon as killNow is closed, until exited is closed. It
// reports whether ctx ended first.
func signalOnCancel(ctx context.Context, pgid int, grace time.Duration, killNow <-chan struct{}, exited <-chan struct{}) (cancelled bool) {
	select {
	case <-exited:
		return false
	case <-ctx.Done():
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	case <-killNow:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return true
}

// build checks spec and returns the command it describes, not started.
func build(spec Spec) (*exec.Cmd, error) {
	switch {
	case len(spec.Argv) > 0 && spec.Shell != "":
		return nil, fmt.Errorf("%w: set Argv or Shell, not both", ErrInvalid)
	case len(spec.Argv) == 0 && strings.TrimSpace(spec.Shell) == "":
		return nil, fmt.Errorf("%w: no command: Argv and Shell are both empty", ErrInvalid)
	case len(spec.Argv) > 0 && spec.Argv[0] == "":
		return nil, fmt.Errorf("%w: Argv[0], the program, is empty", ErrInvalid)
	case spec.KillGrace < 0:
		return nil, fmt.Errorf("%w: KillGrace must not be negative, got %s", ErrInvalid, spec.KillGrace)
	case spec.MaxOutput < 0:
		return nil, fmt.Errorf("%w: MaxOutput must not be negative, got %d", ErrInvalid, spec.MaxOutput)
	case len(spec.Supervisor) > 0 && !supervisorSupported:
		return nil, fmt.Errorf("%w: Supervisor needs Linux (PR_SET_CHILD_SUBREAPER), this is %s", ErrInvalid, runtime.GOOS)
	case len(spec.Supervisor) > 0 && spec.Supervisor[0] == "":
		return nil, fmt.Errorf("%w: Supervisor[0], the supervisor program, is empty", ErrInvalid)
	}
	if spec.Dir != "" {
		fi, err := os.Stat(spec.Dir)
		if err != nil {
			return nil, fmt.Errorf("%w: working directory: %w", ErrInvalid, err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("%w: working directory %q is not a directory", ErrInvalid, spec.Dir)
		}
	}
	var cmd *exec.Cmd
	if spec.Shell != "" {
		cmd = exec.Command("/bin/sh", "-c", spec.Shell)
	} else {
		cmd = exec.Command(spec.Argv[0], spec.Argv[1:]...)
	}
	if cmd.Err != nil {
		return nil, fmt.Errorf("command: start %s: %w", describe(spec), cmd.Err)
	}
	if len(spec.Supervisor) > 0 {
		// The supervisor starts the program; what a direct start would
		// report (not found, not executable) is checked here, where the
		// error keeps its type.
		path := cmd.Path
		if spec.Dir != "" && !filepath.IsAbs(path) {
			path = filepath.Join(spec.Dir, path)
		}
		if _, err := exec.LookPath(path); err != nil {
			return nil, fmt.Errorf("command: start %s: %w", describe(spec), err)
		}
	}
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	return cmd, nil
}

// describe names the command in the errors of a command that did not
// start or lost its supervisor: the program, or "sh -c" without its
// script, which can be pages long.
func describe(spec Spec) string {
	if spec.Shell != "" {
		return "sh -c"
	}
	return fmt.Sprintf("%q", spec.Argv[0])
}

// tail keeps the last max bytes written to it, and the byte before them,
// which tells whether the first kept line is whole.
type tail struct {
	max int
	buf []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	n := len(p)
	keep := t.max + 1
	if len(p) > keep {
		p = p[len(p)-keep:]
		t.buf = t.buf[:0]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*keep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	return n, nil
}

// lines returns the kept bytes as lines, without a first line cut short.
func (t *tail) lines() []string {
	b := t.buf
	if len(b) > t.max {
		whole := b[len(b)-t.max-1] == '\n'
		b = b[len(b)-t.max:]
		if !whole {
			if i := bytes.IndexByte(b, '\n'); i >= 0 {
				b = b[i+1:]
			} else {
				b = nil
			}
		}
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\n")
}
