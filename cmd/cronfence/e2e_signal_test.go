package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stillRunning fails the test if p exits within d: the graceful shutdown
// must still be waiting.
func stillRunning(t *testing.T, p *proc, d time.Duration, what string) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("%s: exited with %d after one signal, before its grace; stderr:\n%s", what, p.code, p.stderr.String())
	case <-time.After(d):
	}
}

// TestServeSecondSignalCancelsAtOnce: the first SIGTERM lets a running
// command have the shutdown grace (a minute); a second signal cancels it
// at once, and serve says so and exits 0.
func TestServeSecondSignalCancelsAtOnce(t *testing.T) {
	t.Parallel()
	for _, second := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(second.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := writeConfig(t, dir, `jobs:
  - name: long
    schedule: "*/1 * * * * *"
    overlap: skip
    shell: echo $$ > pid.tmp && mv pid.tmp pid; sleep 1000 & wait
`)
			p := start(t, dir, "serve", "--config", cfg, "--shutdown-grace", "1m", "--kill-grace", "1m")
			pgid := int(atoi(t, waitForFile(t, filepath.Join(dir, "pid"), p)))
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			stillRunning(t, p, 500*time.Millisecond, "serve")
			if !processAlive(pgid) {
				t.Fatalf("the command %d ended on the first signal; it should have the shutdown grace", pgid)
			}
			began := time.Now()
			if err := p.cmd.Process.Signal(second); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 20*time.Second); code != 0 {
				t.Errorf("serve exited %d, want 0; stderr:\n%s", code, p.stderr.String())
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("serve took %s after the second signal, want well under the 1m grace", d)
			}
			if !strings.Contains(p.stderr.String(), "second signal; cancelling running commands now") {
				t.Errorf("stderr does not log the second signal:\n%s", p.stderr.String())
			}
			groupGone(t, pgid)
		})
	}
}

// TestLockSecondSignalKillsAtOnce: lock's first SIGINT sends SIGTERM to a
// command that ignores it, which has the kill grace (a minute); a second
// signal kills it at once.
func TestLockSecondSignalKillsAtOnce(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		p := start(t, dir, args(db, "lock", "stubborn", "--kill-grace", "1m", "--", "/bin/sh", "-c",
			`trap "" TERM; echo $$ > pid.tmp && mv pid.tmp pid; sleep 1000 & wait; wait`)...)
		pgid := int(atoi(t, waitForFile(t, filepath.Join(dir, "pid"), p)))
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		stillRunning(t, p, 500*time.Millisecond, "lock")
		began := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := p.wait(t, 20*time.Second); code != 128+int(syscall.SIGKILL) {
			t.Errorf("lock exited %d, want the command's %d (SIGKILL); stderr:\n%s", code, 128+int(syscall.SIGKILL), p.stderr.String())
		}
		if d := time.Since(began); d > 10*time.Second {
			t.Errorf("lock took %s after the second signal, want well under the 1m grace", d)
		}
		if !strings.Contains(p.stderr.String(), `second signal; killing "/bin/sh" now`) {
			t.Errorf("stderr does not report the second signal:\n%s", p.stderr.String())
		}
		groupGone(t, pgid)
	})
}
