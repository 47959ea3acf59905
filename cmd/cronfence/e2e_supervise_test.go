package main

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// treeShell is a job command that leaves processes of every kind behind,
// each writing its pid into a file of the working directory: the command
// itself (leader.pid), its supervisor (sup.pid), a background child in its
// group (bg.pid), a child that left the group with setsid (setsid.pid) and
// a daemon, setsid and orphaned by a double fork (daemon.pid). The pid
// files are written through a temporary name, so a file that exists is
// whole. It then waits for its children.
const treeShell = `sleep 1000 & echo $! > bg.tmp; mv bg.tmp bg.pid
setsid sleep 1000 & echo $! > setsid.tmp; mv setsid.tmp setsid.pid
(setsid sh -c 'sleep 1000 & echo $! > daemon.tmp; mv daemon.tmp daemon.pid' &)
while [ ! -e daemon.pid ]; do sleep 0.01; done
echo $PPID > sup.tmp; mv sup.tmp sup.pid
echo $$ > leader.tmp; mv leader.tmp leader.pid
wait`

// treePIDs waits for every pid file of treeShell in dir (leader.pid last)
// and returns the pids by file, killing them at cleanup should the test
// fail.
func treePIDs(t *testing.T, dir string, p *proc) map[string]int {
	t.Helper()
	pids := map[string]int{}
	for _, f := range []string{"bg.pid", "setsid.pid", "daemon.pid", "sup.pid", "leader.pid"} {
		pid := int(atoi(t, waitForFile(t, filepath.Join(dir, f), p)))
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		pids[f] = pid
	}
	return pids
}

// allGone fails the test unless every process of pids is dead (or a
// zombie) within a deadline.
func allGone(t *testing.T, what string, pids map[string]int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for f, pid := range pids {
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Errorf("%s: process %d of %s still alive 10s later", what, pid, f)
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestServeKilledLeavesNoDescendant: kill -9 of serve kills every process
// its running command started, those that left the command's process
// group (setsid, a double-forked daemon) included.
func TestServeKilledLeavesNoDescendant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: tree
    schedule: "*/1 * * * * *"
    overlap: skip
    shell: |
`+indent(treeShell, "      ")+`
`)
	p := start(t, dir, "serve", "--config", cfg)
	pids := treePIDs(t, dir, p)
	if parent := ppid(pids["sup.pid"]); parent != p.cmd.Process.Pid {
		t.Fatalf("the command's supervisor %d has parent %d, not serve %d", pids["sup.pid"], parent, p.cmd.Process.Pid)
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	allGone(t, "after kill -9 of serve", pids)
}

// TestLockKilledLeavesNoDescendant: the same for kill -9 of lock.
func TestLockKilledLeavesNoDescendant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := start(t, dir, "--sqlite", filepath.Join(dir, "cronfence.db"), "lock", "tree", "--", "/bin/sh", "-c", treeShell)
	pids := treePIDs(t, dir, p)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	allGone(t, "after kill -9 of lock", pids)
}

// TestLockExitLeavesNoDescendant: a command that exits leaving daemons
// behind: lock exits with its status at once, and the daemons are gone.
func TestLockExitLeavesNoDescendant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errOut := runCLI(t, dir, "--sqlite", filepath.Join(dir, "cronfence.db"), "lock", "tree", "--", "/bin/sh", "-c",
		`setsid sleep 1000 & echo $! > setsid.pid
(setsid sh -c 'sleep 1000 & echo $! > daemon.tmp; mv daemon.tmp daemon.pid' &)
while [ ! -e daemon.pid ]; do sleep 0.01; done
exit 4`)
	if code != 4 {
		t.Fatalf("exit %d, want the command's 4; stderr %q", code, errOut)
	}
	pids := map[string]int{}
	for _, f := range []string{"setsid.pid", "daemon.pid"} {
		pid := int(atoi(t, waitForFile(t, filepath.Join(dir, f), nil)))
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		pids[f] = pid
	}
	// Gone before lock exited: its supervisor reaps them all first.
	for f, pid := range pids {
		if processAlive(pid) {
			t.Errorf("process %d of %s alive after lock exited", pid, f)
		}
	}
}

// indent prefixes every line of s with prefix (a YAML block scalar).
func indent(s, prefix string) string {
	out := prefix
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += prefix
		}
	}
	return out
}
