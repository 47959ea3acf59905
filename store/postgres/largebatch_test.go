package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// A batch larger than genericPlanMax runs planned for its size and is never
// compiled to machine code (JIT), whatever the pool: on a pool left as the
// server sets it up (jit on, as an application's own pool is), a claim of
// 1,000 items passed jit_above_cost and was compiled for seconds, and
// 10,000 jobs due at once took 54 s to run on three replicas (3 s with jit
// off). A batch up to genericPlanMax keeps the pool's settings.
func TestALargeBatchIsPlannedForItsSizeAndNotCompiled(t *testing.T) {
	t.Parallel()
	base, schema := pgtest.Schema(t) // not tuned (TunePool)
	s, err := New(base, &Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	const read = `SELECT current_setting('plan_cache_mode') || ' ' || current_setting('jit')`
	var pools string
	if err := base.QueryRow(context.Background(), read).Scan(&pools); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		items int
		want  string
	}{
		{genericPlanMax, pools},
		{genericPlanMax + 1, "force_custom_plan off"},
		{10_000, "force_custom_plan off"},
	} {
		rows, err := s.querySized(context.Background(), read, c.items, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectOneRow(rows, pgx.RowTo[string])
		if err != nil || got != c.want {
			t.Errorf("a batch of %d items runs with plan_cache_mode and jit %q (%v), want %q", c.items, got, err, c.want)
		}
	}
}
