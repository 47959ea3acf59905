package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's "Time policies" commands run as written against a config
// with the job they name, beside a serve replica that drives the backfill:
// each exits 0, and the backfill ends done.
func TestReadmeTimePolicyCommands(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Time policies\n")
	if !ok {
		t.Fatal(`README.md has no "### Time policies" section`)
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal(`README.md's "Time policies" has no sh block`)
	}
	block, _, _ = strings.Cut(block, "```")
	dir := t.TempDir()
	writeConfig(t, dir, `jobs:
  - name: nightly
    schedule: "0 2 * * *"
    time_zone: Europe/Lisbon
    shell: "true"
`)
	if code, _, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	serve := start(t, dir, "serve", "--config", "cronfence.yaml")
	defer stopServe(t, serve)
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) < 4 {
		t.Fatalf("the block has %d commands:\n%s", len(lines), block)
	}
	for _, line := range lines {
		words := strings.Fields(line)
		if words[0] != "cronfence" {
			t.Fatalf("a line of the block is not a cronfence command: %q", line)
		}
		p := start(t, dir, words[1:]...)
		if code := p.wait(t, 2*time.Minute); code != 0 {
			t.Fatalf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, p.stdout.String(), p.stderr.String())
		}
		if strings.Contains(line, "--rate") && !strings.Contains(p.stdout.String(), "done, 5/5 slots handled") {
			t.Fatalf("%s did not end with the backfill done:\n%s", line, p.stdout.String())
		}
	}
}
