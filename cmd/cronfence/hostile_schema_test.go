package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// brokenSchemas break a migrated database in ways an operator might:
// sql runs on it (cronfence_ stands for the SQLite prefix or the
// PostgreSQL schema), and want is what every command's error must name.
var brokenSchemas = []struct {
	name, sqlite, postgres, want string
}{
	{"missing table", `DROP TABLE cronfence_runs`, `DROP TABLE cronfence_runs`, "runs"},
	{"foreign version",
		`INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (99, 0)`,
		`INSERT INTO cronfence_schema_migrations (version, name) VALUES (99, 'future')`,
		"version 99"},
}

// brokenCommands are the commands that must refuse a broken database:
// each exits non-zero, promptly, with an error naming what is wrong.
var brokenCommands = [][]string{
	{"migrate"},
	{"jobs", "--config", "CONFIG"},
	{"serve", "--config", "CONFIG", "--shutdown-grace", "500ms"},
	{"pause", "nightly"},
	{"logs", "nightly"},
	{"check"},
}

func checkBrokenCommands(t *testing.T, dir, cfg, want string, db []string) {
	t.Helper()
	for _, cmd := range brokenCommands {
		args := append([]string(nil), cmd...)
		for i := range args {
			if args[i] == "CONFIG" {
				args[i] = cfg
			}
		}
		args = append(args, db...)
		startedAt := time.Now()
		p := start(t, dir, args...)
		code := p.wait(t, 30*time.Second)
		errOut := p.stderr.String()
		if code == 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine ") {
			t.Errorf("%s: exit %d after %s, stderr %q: want a non-zero exit naming %q", cmd[0], code, time.Since(startedAt).Round(time.Millisecond), errOut, want)
		}
	}
}

func TestHostileBrokenSchemaSQLite(t *testing.T) {
	t.Parallel()
	for _, tc := range brokenSchemas {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "broken.db")
			s, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.DB().Exec(tc.sqlite); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, dir, "sqlite: broken.db\njobs:\n  - name: nightly\n    schedule: \"0 3 * * *\"\n    shell: \"true\"\n")
			checkBrokenCommands(t, dir, cfg, tc.want, []string{"--sqlite", path})
		})
	}
}

func TestHostileBrokenSchemaPostgres(t *testing.T) {
	t.Parallel()
	for _, tc := range brokenSchemas {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, schema := pgtest.Schema(t)
			s, err := postgres.New(pool, &postgres.Config{Schema: schema})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			q := strings.ReplaceAll(tc.postgres, "cronfence_", pgx.Identifier{schema}.Sanitize()+".")
			if _, err := pool.Exec(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			cfg := writeConfig(t, dir, "jobs:\n  - name: nightly\n    schedule: \"0 3 * * *\"\n    shell: \"true\"\n")
			checkBrokenCommands(t, dir, cfg, tc.want, []string{"--database", pgtest.URL(t), "--schema", schema})
		})
	}
}
