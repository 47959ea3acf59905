package main

// The admin commands never guess a database. They work on the database
// --config FILE names (as serve does) or the global flags select, never
// create a SQLite file and never migrate: pointed at nothing, they say
// where they looked and how to point them at the replicas' database,
// instead of printing success on an empty new file.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// openStore opens, for the test to look at or prepare, the store that the
// global flags db select (nil: cronfence.db in dir), closed at cleanup.
func openStore(t *testing.T, dir string, db []string) store.Store {
	t.Helper()
	var st store.Store
	switch {
	case len(db) == 0 || db[0] == "--sqlite":
		path := filepath.Join(dir, "cronfence.db")
		if len(db) > 0 {
			path = db[1]
		}
		s, err := sqlite.Open(context.Background(), path, nil)
		if err != nil {
			t.Fatal(err)
		}
		st = s
	default: // --database URL --schema NAME, as forEachStore gives them
		s, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: db[3]})
		if err != nil {
			t.Fatal(err)
		}
		st = s
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// dirEntries lists the names in dir.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// The new user's session: an admin command in a directory with no database
// creates no file, exits 2 and says which file it looked for and how to
// point at the right database; with --config, it names the config's file
// and the commands that create it. check, which never created one, is held
// to the same.
func TestAdminNoDatabaseInEmptyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgDir := t.TempDir() // a config whose database (cronfence.db beside it) does not exist yet
	cfg := writeConfig(t, cfgDir, "jobs:\n  - name: tick\n    schedule: \"@daily\"\n    shell: \"true\"\n")
	here := filepath.Join(dir, "cronfence.db")
	other := filepath.Join(dir, "other.db")
	beside := filepath.Join(cfgDir, "cronfence.db")
	flagHints := []string{"--config FILE", "--sqlite PATH", "--database URL", "cronfence serve", "cronfence migrate"}
	configHints := []string{cfg, "cronfence serve --config", "cronfence migrate", "--database URL"}
	for _, tc := range []struct {
		args  []string
		file  string
		hints []string
	}{
		{[]string{"pause", "tick"}, here, flagHints},
		{[]string{"resume", "tick"}, here, flagHints},
		{[]string{"unset", "tick", "--by", "alice"}, here, flagHints},
		{[]string{"logs", "tick"}, here, flagHints},
		{[]string{"logs", "tick", "--json"}, here, flagHints},
		{[]string{"--sqlite", other, "pause", "tick"}, other, flagHints},
		{[]string{"pause", "tick", "--config", cfg}, beside, configHints},
		{[]string{"logs", "tick", "--config", cfg}, beside, configHints},
		{[]string{"jobs", "--config", cfg}, beside, configHints},
		{[]string{"trigger", "tick", "--config", cfg}, beside, configHints},
	} {
		code, out, errOut := runCLI(t, dir, tc.args...)
		if code != exitUsage || out != "" || !strings.Contains(errOut, "no SQLite database at "+tc.file) || !strings.Contains(errOut, "nothing was created") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d naming %s and nothing printed", tc.args, code, out, errOut, exitUsage, tc.file)
			continue
		}
		for _, h := range tc.hints {
			if !strings.Contains(errOut, h) {
				t.Errorf("%q: stderr %q does not say %q", tc.args, errOut, h)
			}
		}
	}
	if code, _, errOut := runCLI(t, dir, "check"); code != checkUnknown || !strings.Contains(errOut, "no SQLite database at "+here) {
		t.Errorf("check: exit %d, stderr %q; want exit %d naming %s", code, errOut, checkUnknown, here)
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Errorf("the commands created %q in the working directory", names)
	}
	if names := dirEntries(t, cfgDir); !slices.Equal(names, []string{"cronfence.yaml"}) {
		t.Errorf("the commands created files beside the config: %q", names)
	}
}

// A database whose schema was never migrated (a SQLite file something else
// created, a PostgreSQL schema serve never used) is refused with exit 1 and
// a message saying so and what creates it; it is not migrated.
func TestAdminUnmigratedDatabase(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		cfgLine := "" // PostgreSQL: --database wins over the config's database, as with serve
		if db[0] == "--sqlite" {
			raw := openStore(t, dir, db) // creates the file, never migrated
			if err := raw.Close(); err != nil {
				t.Fatal(err)
			}
			cfgLine = "sqlite: " + db[1] + "\n" // --sqlite does not apply with --config, as with serve
		}
		cfg := writeConfig(t, dir, cfgLine+"jobs:\n  - name: tick\n    schedule: \"@daily\"\n    shell: \"true\"\n")
		for _, cmd := range [][]string{
			{"pause", "tick"}, {"resume", "tick"}, {"unset", "tick"}, {"logs", "tick"},
			{"pause", "tick", "--config", cfg}, {"logs", "tick", "--config", cfg},
			{"jobs", "--config", cfg}, {"trigger", "tick", "--config", cfg},
		} {
			code, out, errOut := runCLI(t, dir, args(db, cmd...)...)
			if code != exitFailure || out != "" || !strings.Contains(errOut, "was never migrated") ||
				!strings.Contains(errOut, "version 0") || !strings.Contains(errOut, "cronfence migrate") || !strings.Contains(errOut, "cronfence serve") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 saying the schema was never migrated", cmd, code, out, errOut)
			}
		}
		v, _, err := openStore(t, dir, db).SchemaVersion(context.Background())
		if err != nil || v != 0 {
			t.Errorf("schema version after the refused commands: %d %v, want 0 (not migrated)", v, err)
		}
	})
}

// --config FILE selects the database as serve resolves it: the SQLite file
// beside the config (so logs, pause, resume and unset work from any
// directory), --database still winning over it, --sqlite not applying.
func TestAdminConfigSelectsDatabase(t *testing.T) {
	t.Parallel()
	site := t.TempDir()
	cfg := writeConfig(t, site, `jobs:
  - name: tick
    schedule: "0 3 * * *"
    shell: echo tick-output
  - name: nightly
    schedule: "0 3 * * *"
    shell: "true"
`)
	elsewhere := t.TempDir()
	cli := func(a ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, elsewhere, a...)
	}
	if code, out, errOut := cli("migrate", "--sqlite", filepath.Join(site, "cronfence.db")); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cli("trigger", "tick", "--config", cfg); code != 0 {
		t.Fatalf("trigger: %d %q %q", code, out, errOut)
	}

	code, out, errOut := cli("logs", "tick", "--config", cfg)
	if code != 0 || !strings.HasPrefix(out, "STARTED") || !strings.Contains(out, "manual") || !strings.Contains(out, " ok") {
		t.Fatalf("logs --config from another directory: %d %q %q, want the manual run", code, out, errOut)
	}
	code, out, errOut = cli("logs", "tick", "--config", cfg, "--json")
	var run map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil || run["jobId"] != "tick" || run["manual"] != true {
		t.Fatalf("logs --config --json: %d %q %q, want the one manual run", code, out, errOut)
	}
	for _, step := range []struct {
		cmd  []string
		out  string // pause, resume, unset's line
		jobs string // and what jobs --config shows of nightly after it
	}{
		{[]string{"pause", "nightly", "--by", "alice"}, "nightly: override paused, by alice", "paused by alice"},
		{[]string{"resume", "nightly", "--by", "bob"}, "nightly: override enabled, by bob", "enabled by bob"},
		{[]string{"unset", "nightly", "--by", "carol"}, "nightly: override none", ""},
	} {
		code, out, errOut := cli(append(step.cmd, "--config", cfg)...)
		if code != 0 || !strings.Contains(out, step.out) {
			t.Fatalf("%q --config: %d %q %q", step.cmd, code, out, errOut)
		}
		code, out, errOut = cli("jobs", "--config", cfg)
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "nightly ") {
				line = l
			}
		}
		if code != 0 || (step.jobs != "" && !strings.Contains(line, step.jobs)) || (step.jobs == "" && strings.Contains(line, " by ")) {
			t.Fatalf("jobs --config after %q: %d %q %q, want nightly's override %q", step.cmd, code, out, errOut, step.jobs)
		}
	}

	// --sqlite does not apply with --config, as with serve: the config's
	// file is used, and the one --sqlite names is not created.
	ignored := filepath.Join(elsewhere, "ignored.db")
	if code, out, errOut := cli("--sqlite", ignored, "pause", "nightly", "--config", cfg, "--by", "dave"); code != 0 || !strings.Contains(out, "by dave") {
		t.Fatalf("pause --config with --sqlite: %d %q %q", code, out, errOut)
	}
	if code, out, _ := cli("jobs", "--config", cfg); code != 0 || !strings.Contains(out, "paused by dave") {
		t.Fatalf("jobs --config after pause with --sqlite: %d %q, want it in the config's file", code, out)
	}

	// --database wins over the config's database, as with serve.
	_, schema := pgtest.Schema(t)
	pg := []string{"--database", pgtest.URL(t), "--schema", schema}
	if code, out, errOut := cli(args(pg, "migrate")...); code != 0 {
		t.Fatalf("migrate PostgreSQL: %d %q %q", code, out, errOut)
	}
	if code, out, errOut := cli(args(pg, "resume", "nightly", "--config", cfg, "--by", "erin")...); code != 0 || !strings.Contains(out, "by erin") {
		t.Fatalf("resume --config --database: %d %q %q", code, out, errOut)
	}
	states, err := openStore(t, elsewhere, pg).JobStateList(context.Background())
	if err != nil || len(states) != 1 || states[0].Job != "nightly" || states[0].OverrideBy != "erin" {
		t.Fatalf("PostgreSQL job states: %+v %v, want nightly's override by erin", states, err)
	}
	if code, out, _ := cli("jobs", "--config", cfg); code != 0 || !strings.Contains(out, "paused by dave") {
		t.Fatalf("jobs --config after resume --database: %d %q, want the SQLite file unchanged", code, out)
	}

	if names := dirEntries(t, elsewhere); len(names) != 0 {
		t.Errorf("the commands created %q in the working directory", names)
	}
}
