package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// kinds: maps a kind to a script or to a command mapping, as a job's;
// schedules.allow_shell is off unless set.
func TestKinds(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
kinds:
  send-report: /usr/local/bin/send-report "$CRONFENCE_JOB"
  reindex:
    command: [/usr/local/bin/reindex, --all]
    env: {INDEX: "5"}
    workdir: index
jobs:
  - name: a
    schedule: "@daily"
    command: ["true"]
`)
	if len(f.Kinds) != 2 || f.Schedules.AllowShell {
		t.Fatalf("kinds %+v, schedules %+v", f.Kinds, f.Schedules)
	}
	if k := f.Kinds[0]; k.Name != "send-report" || k.Shell != `/usr/local/bin/send-report "$CRONFENCE_JOB"` || k.Command != nil || k.Line != 2 {
		t.Fatalf("a script: %+v", k)
	}
	if k := f.Kinds[1]; k.Name != "reindex" || !slices.Equal(k.Command, []string{"/usr/local/bin/reindex", "--all"}) ||
		k.Env["INDEX"] != "5" || k.Workdir != "/etc/cronfence/index" || k.Shell != "" {
		t.Fatalf("a command: %+v", k)
	}
	if f := mustParse(t, "schedules: {allow_shell: true}\n"); !f.Schedules.AllowShell || f.Kinds != nil || f.Schedules.PollEvery != 0 {
		t.Fatalf("allow_shell: %+v", f.Schedules)
	}
	if f := mustParse(t, "schedules: {poll_every: 500ms}\n"); f.Schedules.PollEvery != 500*time.Millisecond || f.Schedules.AllowShell {
		t.Fatalf("poll_every: %+v", f.Schedules)
	}
}

// Each bad kinds: or schedules: entry is reported naming its field, all
// at once.
func TestKindsRefused(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, `
kinds:
  shell: echo hi
  both: {command: ["true"], shell: "true"}
  neither: {env: {A: b}}
  blank: "  "
  typo: {comand: ["true"]}
  env: {shell: "true", env: {CRONFENCE_ARGS: x}}
  list: [a, b]
schedules:
  allow_shell: yes please
  allow_all: true
  poll_every: 10ms
`)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		`:2: kinds.shell: "shell" is the built-in kind of schedules.allow_shell`,
		`:3: kinds.both: set command or shell, not both`,
		`:4: kinds.neither: command (an argv list) or shell`,
		`:5: kinds.blank: must not be empty`,
		`:6: kinds.typo.comand: unknown field; expected one of command, shell, env, workdir`,
		`:7: kinds.env.env.CRONFENCE_ARGS: CRONFENCE_ variables are set by cronfence`,
		`:8: kinds.list: must be a mapping`,
		`:10: schedules.allow_shell: must be true or false`,
		`:11: schedules.allow_all: unknown field; expected one of allow_shell, poll_every`,
		`:12: schedules.poll_every: "10ms" must be at least 100ms`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("no %q in:\n%v", want, err)
		}
	}
	if _, err := parseTest(t, "kinds: [a]\n"); err == nil || !strings.Contains(err.Error(), "kinds: must be a mapping of kind name to its command") {
		t.Fatalf("kinds as a list: %v", err)
	}
}

// A kind's variables are required by the commands that read the jobs'
// commands (serve), not by the others.
func TestKindsVariablesRead(t *testing.T) {
	t.Parallel()
	src := []byte("kinds:\n  r: echo ${NOT_SET_ANYWHERE}\n")
	none := func(string) (string, bool) { return "", false }
	if _, err := parse(src, "/etc/cronfence/cronfence.yaml", none, Reads{}); err != nil {
		t.Fatalf("a command that does not read commands: %v", err)
	}
	if _, err := parse(src, "/etc/cronfence/cronfence.yaml", none, Everything); err == nil || !strings.Contains(err.Error(), "NOT_SET_ANYWHERE") {
		t.Fatalf("serve: %v", err)
	}
}
