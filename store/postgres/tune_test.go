package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store/postgres"
)

// A tuned pool's connections plan each statement once (generic plans),
// never compile one (JIT), and cost index lookups as on an SSD, as
// TunePool promises; the application's own pools are left as they are.
func TestTunePoolSettings(t *testing.T) {
	t.Parallel()
	base := pgtest.NewPool(t)
	cfg := base.Config()
	postgres.TunePool(cfg)
	tuned, err := pgxpool.NewWithConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tuned.Close()
	show := func(pool *pgxpool.Pool, setting string) string {
		var v string
		if err := pool.QueryRow(ctx(t), `SELECT current_setting($1)`, setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	for setting, want := range map[string]string{"plan_cache_mode": "force_generic_plan", "jit": "off", "random_page_cost": "1.1"} {
		if got := show(tuned, setting); got != want {
			t.Errorf("tuned pool: %s = %q, want %q", setting, got, want)
		}
		var source string
		if err := base.QueryRow(ctx(t), `SELECT source FROM pg_settings WHERE name = $1`, setting).Scan(&source); err != nil {
			t.Fatal(err)
		}
		if source == "client" {
			t.Errorf("the application's pool: %s set by the client (%q); want the server's", setting, show(base, setting))
		}
	}
}

// On a tuned pool every statement runs a generic plan, planned once for
// any arguments: listing a job's runs must still go through the job's
// index, not read the whole history backwards looking for it (as the
// statement with an optional job filter did: 5 ms at 200,000 runs, and
// growing with them).
func TestTunedRunListOfAJobUsesItsIndex(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	conn, err := s.Pool().Acquire(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx(t), `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET plan_cache_mode`) //nolint:errcheck
	if _, err := conn.Exec(ctx(t), `PREPARE run_list_job AS `+s.RunListJobSQL()); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `DEALLOCATE run_list_job`) //nolint:errcheck
	rows, err := conn.Query(ctx(t), `EXPLAIN (FORMAT TEXT) EXECUTE run_list_job('report', 'infinity', 9223372036854775807, 20)`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "runs_job_started_idx") {
		t.Fatalf("a job's runs, generic plan: %s; want it through runs_job_started_idx", plan)
	}
}

// A warmed pool keeps connections open and ready: each has the claim, the
// finishes and the batched renewal prepared and planned before any slot
// needs them (a claim on a fresh
// connection prepared and planned it first, about 13 ms), and readying
// them wrote nothing. A schema not migrated yet leaves the connections
// cold but usable.
func TestWarmPoolReadiesConnectionsWithoutWriting(t *testing.T) {
	t.Parallel()
	base, schema := pgtest.Schema(t)
	s, err := postgres.New(base, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	open := func(schema string) *pgxpool.Pool {
		cfg := base.Config()
		postgres.TunePool(cfg)
		postgres.WarmPool(cfg, schema)
		pool, err := pgxpool.NewWithConfig(ctx(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		wait.For(t, 10*time.Second, func() bool { return pool.Stat().IdleConns() >= 2 }, func() string {
			return fmt.Sprintf("%d idle connections, want 2 opened in the background", pool.Stat().IdleConns())
		})
		return pool
	}
	warm := open(schema)
	conns := warm.AcquireAllIdle(ctx(t))
	for _, c := range conns {
		for i, sql := range s.WarmedSQL() {
			var ready bool
			if err := c.QueryRow(ctx(t), `SELECT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE statement = $1 AND generic_plans > 0)`,
				sql).Scan(&ready); err != nil {
				t.Fatal(err)
			}
			if !ready {
				t.Errorf("connection %d has not prepared and planned statement %d (%.40s…)", c.Conn().PgConn().PID(), i, sql)
			}
		}
		c.Release()
	}
	for _, table := range []string{"leases", "slots", "runs"} {
		var n int
		if err := base.QueryRow(ctx(t), `SELECT count(*) FROM `+pgx.Identifier{schema, table}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("readying the connections left %d rows in %s", n, table)
		}
	}
	var one int
	if err := open("cftest_not_migrated").QueryRow(ctx(t), `SELECT 1`).Scan(&one); err != nil || one != 1 {
		t.Fatalf("a pool warmed for a schema not migrated: %d, %v; want it usable", one, err)
	}
}

// The leases table, small and written twice a run, is analysed only
// rarely once migrated: every analysis invalidates the plan each
// connection keeps of the claim, and the next claim plans it again
// (5–15 ms on a slot's start), which autovacuum's defaults did after
// every 50 or so writes. A migration down puts the defaults back.
func TestLeasesAreRarelyAnalysed(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	options := func() string {
		var opts string
		if err := s.Pool().QueryRow(ctx(t), `SELECT coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = $1::regclass`,
			pgx.Identifier{schema, "leases"}.Sanitize()).Scan(&opts); err != nil {
			t.Fatal(err)
		}
		return opts
	}
	if got, want := options(), "autovacuum_analyze_threshold=1000000,autovacuum_analyze_scale_factor=100"; got != want {
		t.Fatalf("leases' options %q, want %q", got, want)
	}
	if err := s.MigrateDown(ctx(t), 4); err != nil {
		t.Fatal(err)
	}
	if got := options(); got != "" {
		t.Fatalf("leases' options after a migration down to 4: %q, want none", got)
	}
}
