package main

// A command given --config requires the ${VAR}s of the values it reads,
// and only those: the admin commands read the file's database and jobs,
// never its API tokens or webhook, so an operator's shell without serve's
// secrets can pause a job (issue 37, item 6). A variable a command does
// read is still an error naming it.

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// secretsConfig is a serve file whose tokens, webhook and one job's env
// and command hold variables no test sets.
const secretsConfig = `tokens:
  - name: ops
    role: admin
    token: ${CF_TEST_UNSET_ADMIN_TOKEN}
webhook:
  url: ${CF_TEST_UNSET_HOOK_URL}
  headers:
    Authorization: Bearer ${CF_TEST_UNSET_HOOK_TOKEN}
jobs:
  - name: tick
    schedule: "0 3 * * *"
    shell: echo ticked
  - name: report
    schedule: "0 4 * * *"
    env:
      API_KEY: ${CF_TEST_UNSET_API_KEY}
    command: [/bin/sh, -c, "echo ${CF_TEST_UNSET_REPORT_ARG}"]
`

func TestAdminCommandsNeedNotServesSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, secretsConfig)
	if code, out, errOut := runCLI(t, dir, "migrate", "--sqlite", filepath.Join(dir, "cronfence.db")); code != 0 {
		t.Fatalf("migrate: exit %d stdout %q stderr %q", code, out, errOut)
	}
	for _, tc := range []struct {
		args []string
		code int
		has  string // in stdout, or for check in stderr
	}{
		{[]string{"trigger", "tick"}, 0, "succeeded"},
		{[]string{"jobs"}, 0, "report"},
		{[]string{"logs", "tick"}, 0, "manual"},
		{[]string{"pause", "tick"}, 0, "paused"},
		{[]string{"resume", "tick"}, 0, "enabled"},
		{[]string{"unset", "tick"}, 0, "none"},
		{[]string{"logs", "report"}, 0, ""},
		{[]string{"pause", "report"}, 0, "paused"},
		// No replica runs: check cannot tell, but says why, not a variable.
		{[]string{"check"}, checkUnknown, "no replica sent a heartbeat"},
	} {
		code, out, errOut := runCLI(t, dir, append(tc.args, "--config", cfg)...)
		got := out
		if tc.args[0] == "check" {
			got = errOut
		}
		if code != tc.code || !strings.Contains(got, tc.has) || strings.Contains(errOut, "CF_TEST_UNSET") {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit %d and %q, no variable required", tc.args, code, out, errOut, tc.code, tc.has)
		}
	}

	// What a command reads, it requires, naming each variable.
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"trigger", "report"}, []string{"jobs[1].env.API_KEY: environment variable CF_TEST_UNSET_API_KEY is not set",
			"jobs[1].command[2]: environment variable CF_TEST_UNSET_REPORT_ARG is not set"}, []string{"TOKEN", "HOOK"}},
		{[]string{"serve"}, []string{"tokens[0].token: environment variable CF_TEST_UNSET_ADMIN_TOKEN is not set",
			"webhook.url: environment variable CF_TEST_UNSET_HOOK_URL is not set", "CF_TEST_UNSET_HOOK_TOKEN", "CF_TEST_UNSET_API_KEY"}, nil},
	} {
		code, out, errOut := runCLI(t, dir, append(tc.args, "--config", cfg)...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d stdout %q stderr %q; want exit 2", tc.args, code, out, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr %q does not say %q", tc.args, errOut, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(errOut, n) {
				t.Errorf("%q: stderr %q requires %q, which it does not read", tc.args, errOut, n)
			}
		}
	}
}

// The file's database: is not read when --database overrides it, so its
// variable need not be set; without --database it is read, and required.
func TestConfigDatabaseVariableOverridden(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "database: ${CF_TEST_UNSET_DATABASE_URL}\njobs:\n  - {name: tick, schedule: '0 3 * * *', shell: 'echo ticked'}\n")
	if code, out, errOut := runCLI(t, dir, args(db, "migrate")...); code != 0 {
		t.Fatalf("migrate: exit %d stdout %q stderr %q", code, out, errOut)
	}
	for _, cmd := range [][]string{{"trigger", "tick"}, {"jobs"}, {"pause", "tick"}} {
		if code, out, errOut := runCLI(t, dir, args(db, append(cmd, "--config", cfg)...)...); code != 0 {
			t.Errorf("--database %q: exit %d stdout %q stderr %q", cmd, code, out, errOut)
		}
		code, out, errOut := runCLI(t, dir, append(cmd, "--config", cfg)...)
		if code != exitUsage || !strings.Contains(errOut, "database: environment variable CF_TEST_UNSET_DATABASE_URL is not set") {
			t.Errorf("%q without --database: exit %d stdout %q stderr %q; want exit 2 naming the variable", cmd, code, out, errOut)
		}
	}
}
