package main

// A serve file's database: is read as --database is (docs/config.md): a
// PostgreSQL or a MySQL/MariaDB URL, and --database (or
// CRONFENCE_DATABASE_URL) wins over it. Issue 37, item 1: a mysql:// URL in
// the file was refused by every command given the file, even with
// --database naming the same database.

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
)

// The commands given a file whose database: is the machine's MariaDB serve
// it, list and trigger its job and check it, with and without --database.
func TestConfigDatabaseMySQL(t *testing.T) {
	t.Parallel()
	url := mytest.Database(t)
	dir := t.TempDir()
	cfg := writeConfig(t, dir, `database: `+url+`
jobs:
  - name: tick
    schedule: "0 3 * * *"
    shell: echo ticked
`)
	srv := start(t, dir, "serve", "--config", cfg)
	waitForLog(t, srv, "cronfence: serving")
	if !strings.Contains(srv.stderr.String(), "MariaDB database ") && !strings.Contains(srv.stderr.String(), "MySQL database ") {
		t.Fatalf("serve does not say it serves on MySQL or MariaDB; stderr:\n%s", srv.stderr.String())
	}
	for _, db := range [][]string{nil, {"--database", url}} {
		if code, out, errOut := runCLI(t, dir, args(db, "trigger", "tick", "--config", cfg)...); code != 0 || !strings.Contains(out, "succeeded") {
			t.Fatalf("%q trigger: exit %d stdout %q stderr %q", db, code, out, errOut)
		}
		if code, out, errOut := runCLI(t, dir, args(db, "jobs", "--config", cfg)...); code != 0 || !strings.Contains(out, "tick") || !strings.Contains(out, "ok") {
			t.Fatalf("%q jobs: exit %d stdout %q stderr %q; want the job and its last run", db, code, out, errOut)
		}
		if code, out, errOut := runCLI(t, dir, args(db, "logs", "tick", "--config", cfg)...); code != 0 || !strings.Contains(out, "manual") {
			t.Fatalf("%q logs: exit %d stdout %q stderr %q", db, code, out, errOut)
		}
		// serve records itself and runs the absence checks at start; check
		// is healthy once it has.
		var code int
		var errOut string
		wait.For(t, 20*time.Second, func() bool {
			code, _, errOut = runCLI(t, dir, args(db, "check", "--config", cfg)...)
			return code == checkHealthy
		}, func() string { return "check never healthy: exit " + strconv.Itoa(code) + ": " + errOut })
	}
	stopServe(t, srv)
}

// --database wins over the file's database: whatever the file names, a
// MySQL URL or a PostgreSQL one, and the file's value is judged by the
// same rule as --database's.
func TestConfigDatabaseOverridden(t *testing.T) {
	t.Parallel()
	my := mytest.Database(t)
	_, schema := pgtest.Schema(t)
	pg := []string{"--database", pgtest.URL(t), "--schema", schema}
	for _, tc := range []struct {
		name, file string
		db         []string
		where      string
	}{
		{"mysql file, postgres flag", "mysql://root@127.0.0.1:1/nowhere", pg, "PostgreSQL database "},
		{"postgres file, mysql flag", "postgres://nobody@127.0.0.1:1/nowhere", []string{"--database", my}, "database "},
		{"mariadb file, mysql flag", "mariadb://root@127.0.0.1:1/nowhere", []string{"--database", my}, "database "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeConfig(t, dir, "database: "+tc.file+"\njobs:\n  - {name: tick, schedule: '0 3 * * *', shell: 'echo ticked'}\n")
			if code, out, errOut := runCLI(t, dir, args(tc.db, "migrate")...); code != 0 {
				t.Fatalf("migrate: exit %d stdout %q stderr %q", code, out, errOut)
			}
			if code, out, errOut := runCLI(t, dir, args(tc.db, "trigger", "tick", "--config", cfg)...); code != 0 || !strings.Contains(out, "succeeded") {
				t.Fatalf("trigger: exit %d stdout %q stderr %q", code, out, errOut)
			}
			if code, out, errOut := runCLI(t, dir, args(tc.db, "jobs", "--config", cfg)...); code != 0 || !strings.Contains(out, "tick") {
				t.Fatalf("jobs: exit %d stdout %q stderr %q", code, out, errOut)
			}
		})
	}
}
