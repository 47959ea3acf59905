package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/cronfence/cronfence/internal/wait"
)

func TestMain(m *testing.M) {
	// The test binary is its own supervisor (SelfSupervisor re-executes it).
	if len(os.Args) > 1 && os.Args[1] == SuperviseArg {
		os.Exit(Supervise(os.Args[2:]))
	}
	// Built with -race, a supervisor would sleep 1s at exit by default.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}

// modes are the two ways Run runs a command: as this process's child, or
// under a supervisor process (Linux only).
func modes() []struct {
	name       string
	supervisor []string
} {
	ms := []struct {
		name       string
		supervisor []string
	}{{"direct", nil}}
	if sup := SelfSupervisor(); sup != nil {
		ms = append(ms, struct {
			name       string
			supervisor []string
		}{"supervised", sup})
	}
	return ms
}

// forEachMode runs test as a parallel subtest in every mode.
func forEachMode(t *testing.T, test func(t *testing.T, supervisor []string)) {
	t.Helper()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			test(t, m.supervisor)
		})
	}
}

func TestRunExitStatusAndOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		spec   Spec
		code   int
		output []string
	}{
		{"argv success", Spec{Argv: []string{"/bin/sh", "-c", "echo one; echo two >&2"}}, 0, []string{"one", "two"}},
		{"shell status", Spec{Shell: "echo out; exit 3"}, 3, []string{"out"}},
		{"path lookup", Spec{Argv: []string{"true"}}, 0, nil},
		{"env added", Spec{Shell: `echo "$CF_TEST_A:$CF_TEST_B"`, Env: []string{"CF_TEST_A=a", "CF_TEST_B=b=c"}}, 0, []string{"a:b=c"}},
		{"no trailing newline", Spec{Shell: "printf 'x\\ny'"}, 0, []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachMode(t, func(t *testing.T, supervisor []string) {
				spec := tt.spec
				spec.Supervisor = supervisor
				res := Run(context.Background(), spec)
				if res.ExitCode != tt.code || res.Signaled {
					t.Fatalf("exit %d signaled %v (err %v), want %d", res.ExitCode, res.Signaled, res.Err, tt.code)
				}
				if (res.Err == nil) != (tt.code == 0) {
					t.Errorf("err = %v with exit %d", res.Err, tt.code)
				}
				if fmt.Sprint(res.Output) != fmt.Sprint(tt.output) {
					t.Errorf("output %q, want %q", res.Output, tt.output)
				}
			})
		})
	}
}

func TestRunDir(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		dir := t.TempDir()
		res := Run(context.Background(), Spec{Supervisor: supervisor, Argv: []string{"pwd", "-P"}, Dir: dir})
		want, err := filepath.EvalSymlinks(dir)
		if err != nil {
			t.Fatal(err)
		}
		if res.Err != nil || len(res.Output) != 1 || res.Output[0] != want {
			t.Fatalf("pwd in %s: %q, %v", want, res.Output, res.Err)
		}
	})
}

func TestRunEnvOverridesProcessEnv(t *testing.T) {
	t.Setenv("CF_TEST_OVERRIDE", "process")
	res := Run(context.Background(), Spec{Shell: `echo "$CF_TEST_OVERRIDE"`, Env: []string{"CF_TEST_OVERRIDE=spec"}})
	if fmt.Sprint(res.Output) != "[spec]" {
		t.Fatalf("output %q, want [spec]", res.Output)
	}
}

func TestRunRefusesBadSpecs(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		spec    Spec
		invalid bool   // wraps ErrInvalid
		want    string // in the message
	}{
		{"empty", Spec{}, true, "Argv and Shell are both empty"},
		{"blank shell", Spec{Shell: "  "}, true, "Argv and Shell are both empty"},
		{"empty program", Spec{Argv: []string{""}}, true, "the program, is empty"},
		{"both", Spec{Argv: []string{"true"}, Shell: "true"}, true, "not both"},
		{"missing dir", Spec{Argv: []string{"true"}, Dir: filepath.Join(file, "nope")}, true, "working directory"},
		{"dir is a file", Spec{Argv: []string{"true"}, Dir: file}, true, "is not a directory"},
		{"negative grace", Spec{Argv: []string{"true"}, KillGrace: -time.Second}, true, "KillGrace must not be negative"},
		{"negative output", Spec{Argv: []string{"true"}, MaxOutput: -1}, true, "MaxOutput must not be negative"},
		{"missing executable", Spec{Argv: []string{"cronfence-no-such-program"}}, false, `"cronfence-no-such-program": executable file not found`},
		{"missing path", Spec{Argv: []string{"/nonexistent/prog"}}, false, "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			forEachMode(t, func(t *testing.T, supervisor []string) {
				spec := tt.spec
				spec.Supervisor = supervisor
				res := Run(context.Background(), spec)
				if res.Err == nil || res.ExitCode != -1 {
					t.Fatalf("got exit %d err %v, want -1 and an error", res.ExitCode, res.Err)
				}
				if errors.Is(res.Err, ErrInvalid) != tt.invalid {
					t.Errorf("errors.Is(%v, ErrInvalid) = %v, want %v", res.Err, !tt.invalid, tt.invalid)
				}
				if !strings.Contains(res.Err.Error(), tt.want) {
					t.Errorf("error %q does not contain %q", res.Err, tt.want)
				}
			})
		})
	}
}

func TestRunCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := Run(ctx, Spec{Shell: "touch should-not-exist", Dir: t.TempDir()})
	if res.ExitCode != -1 || !errors.Is(res.Err, context.Canceled) {
		t.Fatalf("got exit %d err %v", res.ExitCode, res.Err)
	}
}

func TestRunOutputBounded(t *testing.T) {
	t.Parallel()
	res := Run(context.Background(), Spec{
		Shell:     "i=0; while [ $i -lt 5000 ]; do echo line-$i; i=$((i+1)); done",
		MaxOutput: 100,
	})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	total := 0
	for _, l := range res.Output {
		total += len(l) + 1
		if !strings.HasPrefix(l, "line-") {
			t.Errorf("partial line %q kept", l)
		}
	}
	if total > 100 || len(res.Output) < 5 {
		t.Errorf("kept %d bytes in %d lines, want at most 100 and several lines: %q", total, len(res.Output), res.Output)
	}
	if last := res.Output[len(res.Output)-1]; last != "line-4999" {
		t.Errorf("last line %q, want line-4999", last)
	}
}

func TestTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		max    int
		writes []string
		want   []string
	}{
		{10, []string{"a\nb\n"}, []string{"a", "b"}},
		{4, []string{"abcdef\ngh\n"}, []string{"gh"}},
		{4, []string{"abcdefgh"}, nil},
		{6, []string{"1\n", "2\n", "3\n", "4\n", "5\n", "6\n", "7\n"}, []string{"5", "6", "7"}},
		{3, []string{"", "\n"}, nil},
		{4, []string{"ab\n", "cd\n"}, []string{"cd"}},
		{3, []string{"ab\n", "cd\n"}, []string{"cd"}},
		{2, []string{"ab\n", "cd\n"}, nil},
		{6, []string{"abcdefgh\n1\n2\n"}, []string{"1", "2"}},
	}
	for _, tt := range tests {
		tl := newTail(tt.max)
		for _, w := range tt.writes {
			if n, _ := tl.Write([]byte(w)); n != len(w) {
				t.Fatalf("Write returned %d, want %d", n, len(w))
			}
		}
		if got := tl.lines(); fmt.Sprint(got) != fmt.Sprint(tt.want) || len(got) != len(tt.want) {
			t.Errorf("max %d writes %q: lines %q, want %q", tt.max, tt.writes, got, tt.want)
		}
	}
}

// TestRunCancelKillsWholeGroup: cancellation reaches the shell's background
// child too, and nothing survives.
func TestRunCancelKillsWholeGroup(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan Result, 1)
		go func() {
			done <- Run(ctx, Spec{Supervisor: supervisor, Shell: "sleep 100 & echo $! > child.pid; wait", Dir: dir, KillGrace: 5 * time.Second})
		}()
		child := waitForPID(t, filepath.Join(dir, "child.pid"))
		start := time.Now()
		cancel()
		res := <-done
		if !res.Signaled || res.ExitCode != 128+int(syscall.SIGTERM) {
			t.Errorf("exit %d signaled %v, want killed by SIGTERM", res.ExitCode, res.Signaled)
		}
		if !errors.Is(res.Err, context.Canceled) {
			t.Errorf("err %v does not wrap context.Canceled", res.Err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s after cancel; SIGTERM should end it at once", d)
		}
		waitGone(t, child)
	})
}

// TestRunKillsStragglersAfterLeaderExits: a child left in the background by
// a shell that exits at once does not survive the run, nor hold it up.
func TestRunKillsStragglersAfterLeaderExits(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		dir := t.TempDir()
		start := time.Now()
		res := Run(context.Background(), Spec{Supervisor: supervisor, Shell: "sleep 100 & echo $! > child.pid; echo bye", Dir: dir})
		if res.Err != nil || res.ExitCode != 0 || fmt.Sprint(res.Output) != "[bye]" {
			t.Fatalf("exit %d err %v output %q", res.ExitCode, res.Err, res.Output)
		}
		child := readPID(t, filepath.Join(dir, "child.pid"))
		if supervisor != nil {
			// The supervisor reaps every descendant before it exits: no
			// time bound needed (its start-up is slow under -race and load).
			if alive(child) {
				_ = syscall.Kill(child, syscall.SIGKILL)
				t.Fatalf("straggler %d alive after the run", child)
			}
			return
		}
		if d := time.Since(start); d > drainTimeout {
			t.Errorf("took %s; the straggler held the output pipe", d)
		}
		waitGone(t, child)
	})
}

// TestRunSIGKILLAfterGrace: a group that ignores SIGTERM is killed after
// KillGrace.
func TestRunSIGKILLAfterGrace(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan Result, 1)
		const grace = 300 * time.Millisecond
		go func() {
			// An ignored signal stays ignored across exec: sleep ignores it too.
			done <- Run(ctx, Spec{Supervisor: supervisor, Shell: `trap "" TERM; sleep 100 & echo $! > child.pid; wait; wait`, Dir: dir, KillGrace: grace})
		}()
		child := waitForPID(t, filepath.Join(dir, "child.pid"))
		start := time.Now()
		cancel()
		res := <-done
		d := time.Since(start)
		if !res.Signaled || res.ExitCode != 128+int(syscall.SIGKILL) {
			t.Errorf("exit %d signaled %v err %v, want killed by SIGKILL", res.ExitCode, res.Signaled, res.Err)
		}
		if d < grace || d > grace+3*time.Second {
			t.Errorf("ended %s after cancel, want just after the %s grace", d, grace)
		}
		waitGone(t, child)
	})
}

func TestRunCancelCause(t *testing.T) {
	t.Parallel()
	forEachMode(t, func(t *testing.T, supervisor []string) {
		lost := errors.New("lease lost")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(lost) })
		res := Run(ctx, Spec{Supervisor: supervisor, Argv: []string{"sleep", "100"}})
		if !errors.Is(res.Err, lost) || !res.Signaled {
			t.Fatalf("err %v signaled %v, want the cause and a signal", res.Err, res.Signaled)
		}
	})
}

// A run's error says how the command ended, not what the command was: a
// shell job's script can be pages long, and the error goes into log
// lines, the API and one-line tables.
func TestRunErrorSaysHowTheCommandEndedNotWhatItWas(t *testing.T) {
	t.Parallel()
	script := "echo working\n# " + strings.Repeat("the rest of a long script; ", 20) + "\n"
	forEachMode(t, func(t *testing.T, supervisor []string) {
		res := Run(context.Background(), Spec{Supervisor: supervisor, Shell: script + "exit 3"})
		if res.Err == nil || res.Err.Error() != "exit status 3" {
			t.Errorf("a script that exits 3: error %q, want %q", res.Err, "exit status 3")
		}
		timedOut := errors.New("timed out after 50ms")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(50*time.Millisecond, func() { cancel(timedOut) })
		res = Run(ctx, Spec{Supervisor: supervisor, Shell: script + "sleep 100"})
		if res.Err == nil || !errors.Is(res.Err, timedOut) || strings.Contains(res.Err.Error(), "long script") ||
			!strings.Contains(res.Err.Error(), "killed by signal 15 (terminated)") || strings.Contains(res.Err.Error(), "\n") {
			t.Errorf("a cancelled script: error %q, want one line with the cause and the signal, without the script", res.Err)
		}
	})
}

// waitForPID waits for a shell to write a pid into path.
func waitForPID(t *testing.T, path string) int {
	t.Helper()
	wait.For(t, 10*time.Second, func() bool {
		b, err := os.ReadFile(path)
		return err == nil && strings.HasSuffix(string(b), "\n")
	}, func() string {
		return "no pid in " + path
	})
	return readPID(t, path)
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("bad pid %q in %s", b, path)
	}
	return pid
}

// waitGone fails the test unless process pid is gone (or a zombie, dead
// and waiting for its new parent to reap it) within a deadline.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	wait.For(t, 5*time.Second, func() bool {
		return !alive(pid)
	}, func() string {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return fmt.Sprintf("process %d still alive after the run", pid)
	})
}

func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestRunLeaderDiesWithSupervisor: a supervisor killed with SIGKILL takes
// the command (the group leader) with it. The supervisor is this test
// binary run as a helper process.
func TestRunLeaderDiesWithSupervisor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signal is Linux only")
	}
	t.Parallel()
	dir := t.TempDir()
	sup := exec.Command(os.Args[0], "-test.run=^TestHelperSupervisor$")
	sup.Env = append(os.Environ(), "CRONFENCE_TEST_SUPERVISOR_DIR="+dir)
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	leader := waitForPID(t, filepath.Join(dir, "leader.pid"))
	t.Cleanup(func() { _ = syscall.Kill(-leader, syscall.SIGKILL) })
	if err := sup.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sup.Wait()
	waitGone(t, leader)
}

// TestHelperSupervisor is the supervisor of TestRunLeaderDiesWithSupervisor,
// run in a process of its own.
func TestHelperSupervisor(t *testing.T) {
	dir := os.Getenv("CRONFENCE_TEST_SUPERVISOR_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	Run(context.Background(), Spec{Shell: "echo $$ > leader.pid; sleep 100; echo done", Dir: dir})
}
