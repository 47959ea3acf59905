package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// binary is the cronfence binary the tests run, built once by TestMain
// with buildFlags.
var (
	binary     string
	buildFlags []string
)

// tmpPrefix starts the names of the directories holding test binaries,
// followed by the test process's pid. pgtest.Main exits the process, so a
// directory is removed by a later run once its process is gone.
const tmpPrefix = "cronfence-cmdtest-"

func TestMain(m *testing.M) {
	// A binary built with -race sleeps 1s at exit by default; every job's
	// supervisor is such a binary, so every run would last a second more.
	// The processes the tests start inherit this.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	removeStaleBinaries()
	dir, err := os.MkdirTemp("", tmpPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "cronfence")
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", binary, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building cronfence:", err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// removeStaleBinaries removes the binaries of test processes that are gone.
func removeStaleBinaries() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tmpPrefix+"*"))
	for _, d := range dirs {
		pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), tmpPrefix), "-")
		n, err := strconv.Atoi(pid)
		if err != nil || n <= 0 || errors.Is(syscall.Kill(n, 0), syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// proc is one cronfence process.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
	code           int
}

// lockedBuffer is a bytes.Buffer a test may read while the process still
// writes it (a failure message quoting a live replica's log).
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start starts cronfence with args in dir, with no CRONFENCE_ variable of
// the test's own environment.
func start(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	return startEnv(t, dir, nil, args...)
}

// startEnv is start with env added to the environment.
func startEnv(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRONFENCE_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, env...)
	// A command that outlives a killed lock holds its output pipe open.
	p.cmd.WaitDelay = 2 * time.Second
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for p to exit and returns its exit status.
func (p *proc) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("cronfence %q still running after %s; stderr:\n%s", p.cmd.Args[1:], timeout, p.stderr.String())
		return 0
	}
}

// runCLI runs cronfence with args in dir and returns its exit status,
// stdout and stderr.
func runCLI(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := start(t, dir, args...)
	code = p.wait(t, time.Minute)
	return code, p.stdout.String(), p.stderr.String()
}

// waitForFile waits for path to hold a whole line and returns its content.
func waitForFile(t *testing.T, path string, p *proc) string {
	t.Helper()
	var line string
	wait.For(t, 20*time.Second, func() bool {
		if b, err := os.ReadFile(path); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			line = strings.TrimSpace(string(b))
			return true
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("cronfence exited with %d before writing %s; stderr:\n%s", p.code, path, p.stderr.String())
			default:
			}
		}
		return false
	}, func() string {
		return path + " not written"
	})
	return line
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

// groupGone fails the test unless process group pgid is empty within a
// deadline (zombies waiting for their reaper count as gone).
func groupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	t.Fatalf("process group %d still has live processes", pgid)
}

func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range procs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		// After "pid (comm) ": state ppid pgrp ...
		fields := strings.Fields(s[i+1:])
		if len(fields) >= 3 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			return true
		}
	}
	return false
}

func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, t.TempDir(), "--help")
	if code != 0 || errOut != "" || !strings.Contains(out, "lock <name> <command> ...") || !strings.Contains(out, "CRONFENCE_DATABASE_URL") {
		t.Fatalf("exit %d stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	if strings.Contains(out, "--schema") {
		t.Errorf("--schema is for tests; help shows it:\n%s", out)
	}
}

// processAlive reports whether pid is a live process (not a zombie).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitHTTP waits until GET base+path answers 200 from p, a serve --listen
// (/healthz: it serves; /readyz: and its store answers), failing t at once
// if p exits first.
func waitHTTP(t *testing.T, p *proc, base, path string) {
	t.Helper()
	wait.For(t, 20*time.Second, func() bool {
		select {
		case <-p.done:
			t.Fatalf("serve exited with %d before %s answered; stderr:\n%s", p.code, path, p.stderr.String())
		default:
		}
		resp, err := http.Get(base + path)
		if err != nil {
			return false // still starting
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, func() string { return path + " never answered 200; stderr:\n" + p.stderr.String() })
}
