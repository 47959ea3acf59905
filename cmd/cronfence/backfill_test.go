package main

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// `cronfence backfill` in direct mode on the config's SQLite file: a dry
// run lists each slot and what it would do; a backfill is recorded (with
// --detach, no replica running: it says nothing drives it yet); a second
// is refused, exit 3, naming the first; ls, show and cancel work on it; bad
// flags and an unknown job are refused naming them, recording nothing.
func TestBackfillDirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `jobs:
  - name: hourly
    schedule: "0 * * * *"
    exclude: ["2026-03-01T02:00Z/2026-03-01T03:00Z"]
    shell: "true"
`)
	if code, _, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	bf := func(want int, a ...string) (string, string) {
		t.Helper()
		code, out, errOut := runCLI(t, dir, append(append([]string{"backfill"}, a...), "--config", cfg)...)
		if code != want {
			t.Fatalf("backfill %q: exit %d, want %d; stdout:\n%s\nstderr:\n%s", a, code, want, out, errOut)
		}
		return out, errOut
	}
	rng := []string{"--from", "2026-03-01T00:00:00Z", "--to", "2026-03-01T04:00:00Z"}

	out, _ := bf(0, append([]string{"hourly", "--dry-run"}, rng...)...)
	want := "2026-03-01T00:00:00Z\trun\n2026-03-01T01:00:00Z\trun\n2026-03-01T02:00:00Z\texcluded\n2026-03-01T03:00:00Z\trun\n4 slots: 3 run, 1 excluded\n"
	if out != want {
		t.Fatalf("dry run:\n%s\nwant:\n%s", out, want)
	}
	if out, _ := bf(0, "ls", "hourly"); out != "" {
		t.Fatalf("a dry run recorded a backfill: %q", out)
	}
	out, errOut := bf(0, append([]string{"hourly", "--detach", "--by", "ana"}, rng...)...)
	m := regexp.MustCompile(`^backfill (\d+) of hourly: 4 slots from 2026-03-01T00:00:00Z to 2026-03-01T04:00:00Z\n$`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(errOut, "no live replica") {
		t.Fatalf("backfill --detach: stdout %q stderr %q", out, errOut)
	}
	id := m[1]
	if _, errOut := bf(exitConflict, append([]string{"hourly", "--detach"}, rng...)...); !strings.Contains(errOut, "hourly has a running backfill ("+id+")") {
		t.Fatalf("a second backfill: %q", errOut)
	}
	if out, _ := bf(0, "ls", "hourly"); !strings.HasPrefix(out, id+"\trunning\t") || !strings.Contains(out, "0/4") || !strings.Contains(out, "by ana") {
		t.Fatalf("ls: %q", out)
	}
	if out, _ := bf(0, "show", "hourly", id); !strings.Contains(out, "backfill "+id+" of hourly: running, 0/4 slots handled") {
		t.Fatalf("show: %q", out)
	}
	if out, _ := bf(0, "cancel", "hourly", id, "--by", "bo"); !strings.Contains(out, "cancelled, 0/4 slots handled") || !strings.Contains(out, "cancelled by bo") {
		t.Fatalf("cancel: %q", out)
	}
	if _, errOut := bf(exitConflict, "cancel", "hourly", id); !strings.Contains(errOut, "ended") {
		t.Fatalf("a second cancel: %q", errOut)
	}
	if _, errOut := bf(exitFailure, "show", "hourly", "999"); !strings.Contains(errOut, "no such backfill") {
		t.Fatalf("show of no backfill: %q", errOut)
	}

	ahead := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)
	for _, bad := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"hourly", "--from", "yesterday", "--to", "2026-03-01T04:00:00Z"}, exitUsage, `--from "yesterday": not an RFC 3339 instant`},
		{[]string{"hourly", "--from", "2026-03-01T04:00:00Z", "--to", "2026-03-01T00:00:00Z"}, exitUsage, "must be after From"},
		{[]string{"hourly", "--from", "2026-03-01T00:00:00Z", "--to", ahead}, exitUsage, "is ahead of now"},
		{append([]string{"hourly", "--rate=-1"}, rng...), exitUsage, "--rate must be from 0"},
		{append([]string{"nope"}, rng...), exitFailure, `no job named "nope"`},
		{[]string{"hourly", "--to", "2026-03-01T04:00:00Z"}, exitUsage, "--from"},
	} {
		if _, errOut := bf(bad.code, bad.args...); !strings.Contains(errOut, bad.says) {
			t.Errorf("backfill %q: stderr %q, want %q", bad.args, errOut, bad.says)
		}
	}
	if out, _ := bf(0, "ls", "hourly"); strings.Count(out, "\n") != 1 {
		t.Fatalf("the refused backfills recorded something: %q", out)
	}
}
