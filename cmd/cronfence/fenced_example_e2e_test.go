package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// throwawayDatabase creates a database of the test's own on the test server
// and returns its URL; it is dropped at cleanup. The example's SQL names
// cronfence's default schema, so it runs in a database where that schema is
// the test's alone.
func throwawayDatabase(t *testing.T) string {
	t.Helper()
	base := pgtest.URL(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "cronfence_example_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			t.Errorf("dropping %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// TestFencedPsqlExample runs examples/fenced-psql.yaml, the shell job the
// README shows (psql writing a row and completing its slot in one
// transaction), as a user would: three serve replicas, the table created
// from the file's own comment, the schedule every second (CLOSE_SCHEDULE).
// Every slot that ran has its row once and ended completed, by the job's
// own transaction; no run failed or was resumed. The README's copy of the
// job is the file's, so the two cannot drift apart.
func TestFencedPsqlExample(t *testing.T) {
	t.Parallel()
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "fenced-psql.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	job := string(example[strings.Index(string(example), "  - name: daily-close"):])
	if !strings.Contains(string(readme), job) {
		t.Fatalf("README.md does not show examples/fenced-psql.yaml's job as it is:\n%s", job)
	}

	dbURL := throwawayDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// The table, as the example's comment creates it.
	const create = `CREATE TABLE IF NOT EXISTS closings (
	    slot timestamptz PRIMARY KEY, generation bigint NOT NULL,
	    closed_at timestamptz NOT NULL DEFAULT now())`
	if !strings.Contains(strings.ReplaceAll(string(example), "#   ", ""), strings.ReplaceAll(create, "\t", "")) {
		t.Fatalf("the example's comment no longer creates the table as this test does:\n%s", create)
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "fenced-psql.yaml")
	if err := os.WriteFile(cfg, example, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"DATABASE_URL=" + dbURL, "CLOSE_SCHEDULE=* * * * * *"}
	var ps []*proc
	for range 3 {
		ps = append(ps, startEnv(t, dir, env, "serve", "--config", cfg, "--shutdown-grace", "2s", "--kill-grace", "1s"))
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM closings`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d closings after 60s, want 4; stderr of one replica:\n%s", n, ps[0].stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopReplicas(t, ps)

	// Each closing's slot completed, by the generation that wrote it, and
	// nothing else completed (a slot due while the previous run still ran
	// is skipped, as an overlap); no run failed or was a second attempt.
	var mismatched, failed, retried int
	if err := conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM closings c FULL JOIN cronfence.slots s ON s.slot = c.slot AND s.job = 'daily-close'
		         -- a slot skipped as an overlap (the previous psql still ran) has no closing, rightly
		         WHERE s.status IS DISTINCT FROM 'skipped'
		           AND (s.status IS DISTINCT FROM 'completed' OR c.slot IS NULL OR c.generation <> s.generation)),
		       (SELECT count(*) FROM cronfence.runs WHERE NOT success),
		       (SELECT count(*) FROM cronfence.runs WHERE attempt > 1)`).Scan(&mismatched, &failed, &retried); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 || failed != 0 || retried != 0 {
		rows, _ := conn.Query(ctx, `SELECT slot, status, generation, attempts FROM cronfence.slots ORDER BY slot`)
		slots, _ := pgx.CollectRows(rows, pgx.RowToMap)
		t.Fatalf("%d slots without their closing (or the reverse), %d failed runs, %d second attempts; slots: %v\nstderr:\n%s",
			mismatched, failed, retried, slots, ps[0].stderr.String())
	}
}
