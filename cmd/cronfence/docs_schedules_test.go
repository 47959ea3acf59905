package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shBlock returns the ```sh block of doc that holds marker, from its
// first line.
func shBlock(t *testing.T, doc, marker string) string {
	t.Helper()
	at := strings.Index(doc, marker)
	if at < 0 {
		t.Fatalf("no block holding %q", marker)
	}
	open := strings.LastIndex(doc[:at], "```sh\n")
	end := strings.Index(doc[at:], "```")
	if open < 0 || end < 0 {
		t.Fatalf("the block holding %q is not a ```sh block", marker)
	}
	return doc[open+len("```sh\n") : at+end]
}

// runScript runs script with sh -e in dir with env added, and returns its
// stdout, failing t when it fails.
func runScript(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	sh.Dir = dir
	sh.Env = append(os.Environ(), env...)
	var out, errOut lockedBuffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Run(); err != nil {
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, out.String(), errOut.String())
	}
	return out.String()
}

// TestDocsSchedulesExamples runs docs/schedules.md's REST and command
// line examples as they are written against the README's first command
// served with --listen (on a free port instead of 8080): each answer is
// what the page says, and the schedules they delete are gone.
func TestDocsSchedulesExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the examples need curl: apt-get install -y curl")
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "schedules.md"))
	if err != nil {
		t.Fatal(err)
	}
	rest := shBlock(t, string(page), "URL=http://127.0.0.1:8080/api/admin/cron/schedules")
	cli := shBlock(t, string(page), "cronfence schedules add")

	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "cronfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "examples", "cronfence.yaml"), example, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	srv := startEnv(t, dir, []string{"CRONFENCE_EXAMPLE_LOG=" + filepath.Join(dir, "example.log")},
		"serve", "--config", "examples/cronfence.yaml", "--listen", addr)
	waitHTTP(t, srv, "http://"+addr, "/readyz")

	out := runScript(t, dir, nil, strings.ReplaceAll(rest, "127.0.0.1:8080", addr))
	answers := strings.Split(strings.TrimSpace(out), "\n")
	wants := [][]string{
		{`"name":"report-tenant-7"`, `"version":1`, `"kind":"report"`, `"args":{"tenant":7}`, `"createdBy":"ops"`}, // created
		{`"version":2`, `"spec":"30 6 * * 1-5"`, `"updatedBy":"ops"`},                                              // changed
		{`"code":"SCHEDULE_CONFLICT"`, `"currentVersion":2`},                                                       // stale
		{`"schedules":[`, `"name":"report-tenant-7"`},                                                              // listed
		{`"changes":[`, `"action":"update"`, `"action":"create"`, `"by":"ops"`},                                    // audited
		{`"name":"report-tenant-7"`, `"version":2`},                                                                // deleted
	}
	if len(answers) != len(wants) {
		t.Fatalf("the REST examples printed %d answers, want %d:\n%s", len(answers), len(wants), out)
	}
	for i, want := range wants {
		for _, w := range want {
			if !strings.Contains(answers[i], w) {
				t.Errorf("answer %d %s: no %s", i+1, answers[i], w)
			}
		}
	}

	// The command line examples, with this test's binary as cronfence.
	path := "PATH=" + filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
	out = runScript(t, dir, []string{path}, strings.ReplaceAll(cli, "127.0.0.1:8080", addr))
	for _, want := range []string{
		"report-tenant-8: created at version 1 by ops",
		"version 1 → 2",
		"30 6 * * 1-5",
		"Europe/Lisbon",
		`{"tenant":8}`,
		"deleted",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the command line examples printed no %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"report-tenant-7", "report-tenant-8"} {
		if code, _, _ := runCLI(t, dir, "schedules", "show", gone, "--server", "http://"+addr, "--token", "change-me-admin"); code != exitFailure {
			t.Errorf("schedules show %s after the examples deleted it: exit %d, want %d", gone, code, exitFailure)
		}
	}
	stopServe(t, srv)
}
