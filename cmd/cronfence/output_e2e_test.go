package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A command's output reaches serve's log line by line as it is written:
// its first line is logged while the command still runs (it waits, after
// printing it, for a file this test creates only once the line is in the
// log), its stderr at WARN; the run row holds both lines, and the run ends
// with one line naming job, slot, attempt, result and duration.
func TestServeLogsACommandsOutputAsItIsWritten(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goOn := filepath.Join(dir, "go-on")
	cfg := writeConfig(t, dir, `jobs:
  - name: talker
    schedule: "* * * * * *"
    shell: echo "first line of $CRONFENCE_SLOT"; while [ ! -e `+goOn+` ]; do sleep 0.1; done; echo "second line" >&2
`)
	p := start(t, dir, "serve", "--config", cfg)
	waitForLog(t, p, "first line of ")
	if strings.Contains(p.stderr.String(), "second line") || strings.Contains(p.stderr.String(), "run ended") {
		t.Fatalf("the second line or the run's end logged before the command could write it:\n%s", p.stderr.String())
	}
	if err := os.WriteFile(goOn, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitForLog(t, p, "cronfence: run ended")
	stopReplicas(t, []*proc{p})

	log := p.stderr.String()
	if !regexp.MustCompile(`level=WARN msg="second line" .*job=talker`).MatchString(log) {
		t.Errorf("the stderr line is not logged at WARN:\n%s", log)
	}
	if !regexp.MustCompile(`level=INFO msg="first line of [^"]+" .*job=talker`).MatchString(log) {
		t.Errorf("the stdout line is not logged at INFO with its job:\n%s", log)
	}
	if !regexp.MustCompile(`msg="cronfence: run ended" .*job=talker slot=\S+ attempt=1 origin=scheduled result=success duration=\S+`).MatchString(log) {
		t.Errorf("no run-end line naming job, slot, attempt, result and duration:\n%s", log)
	}
	code, out, errOut := runCLI(t, dir, "logs", "talker", "--config", cfg, "--json", "-n", "1")
	if code != 0 || !strings.Contains(out, "INFO first line of ") || !strings.Contains(out, "WARN second line") {
		t.Errorf("logs --json: exit %d, %q, %q; want the run row with both lines", code, out, errOut)
	}
}
