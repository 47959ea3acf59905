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

// readmeCurlMarker opens the README's block of curl examples.
const readmeCurlMarker = "URL=http://127.0.0.1:8080/api/admin/cron"

// TestReadmeCurlExamples runs the README's curl examples of the admin API,
// as they are written, against the README's first command served with
// --listen (on a free port instead of 8080): list the jobs, pause one and
// follow the file again, start a manual run and poll it until it finished,
// and read the job's latest runs. Each answer is what the README says.
func TestReadmeCurlExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the README's examples need curl: apt-get install -y curl")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(string(readme), readmeCurlMarker)
	if at < 0 {
		t.Fatalf("README.md has no curl examples of the admin API (a block starting %q)", readmeCurlMarker)
	}
	open := strings.LastIndex(string(readme[:at]), "```sh\n")
	end := strings.Index(string(readme[at:]), "```")
	if open < 0 || end < 0 {
		t.Fatal("README.md's curl examples are not in a ```sh block")
	}
	script := string(readme[open+len("```sh\n") : at+end])

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

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "sh", "-e", "-c", strings.ReplaceAll(script, "127.0.0.1:8080", addr))
	sh.Dir = dir
	var out, errOut lockedBuffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Run(); err != nil {
		t.Fatalf("the README's curl examples: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, out.String(), errOut.String())
	}
	answers := strings.Split(strings.TrimSpace(out.String()), "\n")
	wants := [][]string{
		{`"jobs":[`, `"name":"hello"`}, // the list
		{`"name":"hello"`, `"enabled":false`, `"by":"ops"`, `"note":"vendor outage"`},     // paused
		{`"name":"hello"`, `"override":{"enabled":null`, `"enabled":true`},                // following the file again
		{`"state":"finished"`, `"success":true`, `"manual":true`, `hello from cronfence`}, // the manual run, polled
		{`"jobId":"hello"`, `"logs":[`},                                                   // its latest runs
	}
	if len(answers) != len(wants) {
		t.Fatalf("the README's curl examples printed %d answers, want %d:\n%s\nstderr:\n%s", len(answers), len(wants), out.String(), errOut.String())
	}
	for i, want := range wants {
		for _, w := range want {
			if !strings.Contains(answers[i], w) {
				t.Errorf("answer %d %s: no %s", i+1, answers[i], w)
			}
		}
	}
	stopServe(t, srv)
}
