package cronfence

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
	"github.com/jackc/pgx/v5"
)

// effects is a handler's own table on the store's database, written the way
// a user writes it: one transaction holding the effect and, before the
// commit, the run's fence or its completion.
type effects struct {
	// write inserts one effect for run's slot, then fences (complete
	// false) or completes the run's slot (complete true) in the same
	// transaction, and commits.
	write func(ctx context.Context, run *Run, complete bool) error
	// writeSQL is write completing with the store's SQL (complete() on
	// PostgreSQL, cronfence_complete on SQLite), as a command's own client
	// does, not through Run.Complete.
	writeSQL func(ctx context.Context, run *Run) error
	count    func(t *testing.T, job string, slot time.Time) int
}

func newEffects(t *testing.T, st store.Store) effects {
	t.Helper()
	guard := func(ctx context.Context, run *Run, tx any, complete bool) error {
		if complete {
			return run.Complete(ctx, tx)
		}
		return run.Fence(ctx, tx)
	}
	switch s := st.(type) {
	case *postgres.Store:
		table := pgx.Identifier{s.Schema(), "effects"}.Sanitize()
		if _, err := s.Pool().Exec(context.Background(), `CREATE TABLE `+table+` (job text, slot timestamptz, generation bigint)`); err != nil {
			t.Fatal(err)
		}
		return effects{
			write: func(ctx context.Context, run *Run, complete bool) error {
				return pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES ($1, $2, $3)`, run.Job, run.Slot, run.Generation); err != nil {
						return err
					}
					return guard(ctx, run, tx, complete)
				})
			},
			writeSQL: func(ctx context.Context, run *Run) error {
				return pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `INSERT INTO `+table+` VALUES ($1, $2, $3)`, run.Job, run.Slot, run.Generation); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `SELECT `+pgx.Identifier{s.Schema(), "complete"}.Sanitize()+`($1, $2)`, run.Lease, run.Generation)
					return err
				})
			},
			count: func(t *testing.T, job string, slot time.Time) int {
				var n int
				if err := s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE job = $1 AND slot = $2`, job, slot).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			},
		}
	case *sqlite.Store:
		if _, err := s.DB().Exec(`CREATE TABLE IF NOT EXISTS effects (job TEXT, slot INTEGER, generation INTEGER)`); err != nil {
			t.Fatal(err)
		}
		return effects{
			write: func(ctx context.Context, run *Run, complete bool) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, `INSERT INTO effects VALUES (?, ?, ?)`, run.Job, run.Slot.UnixMicro(), run.Generation); err != nil {
					return err
				}
				if err := guard(ctx, run, tx, complete); err != nil {
					return err
				}
				return tx.Commit()
			},
			writeSQL: func(ctx context.Context, run *Run) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if _, err := tx.ExecContext(ctx, `INSERT INTO effects VALUES (?, ?, ?)`, run.Job, run.Slot.UnixMicro(), run.Generation); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO cronfence_complete VALUES (?, ?)`, run.Lease, run.Generation); err != nil {
					return err
				}
				return tx.Commit()
			},
			count: func(t *testing.T, job string, slot time.Time) int {
				var n int
				if err := s.DB().QueryRow(`SELECT count(*) FROM effects WHERE job = ? AND slot = ?`, job, slot.UnixMicro()).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			},
		}
	case *mysql.Store:
		if _, err := s.DB().Exec(`CREATE TABLE IF NOT EXISTS effects (job VARCHAR(200), slot DATETIME(6), generation BIGINT)`); err != nil {
			t.Fatal(err)
		}
		insert := func(ctx context.Context, tx *sql.Tx, run *Run) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO effects VALUES (?, ?, ?)`, run.Job, run.Slot, run.Generation)
			return err
		}
		return effects{
			write: func(ctx context.Context, run *Run, complete bool) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if err := insert(ctx, tx, run); err != nil {
					return err
				}
				if err := guard(ctx, run, tx, complete); err != nil {
					return err
				}
				return tx.Commit()
			},
			writeSQL: func(ctx context.Context, run *Run) error {
				tx, err := s.DB().BeginTx(ctx, nil)
				if err != nil {
					return err
				}
				defer tx.Rollback()
				if err := insert(ctx, tx, run); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `CALL cronfence_complete(?, ?)`, run.Lease, run.Generation); err != nil {
					return err
				}
				return tx.Commit()
			},
			count: func(t *testing.T, job string, slot time.Time) int {
				var n int
				if err := s.DB().QueryRow(`SELECT count(*) FROM effects WHERE job = ? AND slot = ?`, job, slot).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			},
		}
	}
	t.Fatalf("no effects table for %T", st)
	return effects{}
}

// TestCompletedSlotIsNeverResumed: a run writes its effect and stops before
// the scheduler can record its end (here its replica loses the database
// for good the moment the handler returns). Its lease expires and another
// replica's resume scan finds the slot. With the effect only fenced, the
// slot is resumed and the effect commits a second time: fencing refuses a
// deposed writer, not a finished one. With the slot completed in the
// effect's own transaction (Run.Complete), the slot is never resumed and the
// effect commits once.
func TestCompletedSlotIsNeverResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: needs PostgreSQL")
	}
	t.Parallel()
	for _, tc := range []struct {
		name     string
		complete bool
		effects  int // how often the slot's effect commits
	}{
		{"fenced only: resumed, the effect twice", false, 2},
		{"completed in its transaction: once", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, direct, throughProxy, proxy := proxiedCluster(t)
			db := c.db
			fx := newEffects(t, direct)

			slot := db.Now().Add(time.Minute)
			var mu sync.Mutex
			var runs []string
			var cut atomic.Bool
			job := Job{Name: "close", Schedule: "0 1 12 1 3 *", LeaseTTL: 30 * time.Second, MaxAttempts: 3,
				Handler: func(ctx context.Context, run *Run) error {
					mu.Lock()
					runs = append(runs, fmt.Sprintf("%s attempt %d", run.Owner, run.Attempt))
					mu.Unlock()
					// The handler's data layer is its own pool, not the
					// scheduler's: the effect commits.
					if err := fx.write(ctx, run, tc.complete); err != nil {
						return err
					}
					if run.Owner == "a" {
						proxy.Cut() // a loses the database for good as the handler returns
						cut.Store(true)
					}
					return nil
				}}
			c.startWith(Config{Owner: "a", Clock: offsetClock{db, 0}, Retention: -1, Store: intercept(throughProxy)}, job)
			db.Advance(time.Minute) // 12:01: a claims the slot and runs it
			for !cut.Load() {
				time.Sleep(time.Millisecond) // until a's handler returned, cut off
			}
			// b, started after a's claim, resumes dead runs. a keeps trying
			// to record the end and to renew; past the lease's TTL a is dead
			// to b.
			c.startHolding(-1, Config{Owner: "b", Clock: offsetClock{db, 0}, Retention: -1}, job)
			for moved := time.Duration(0); moved < 2*time.Minute; moved += 250 * time.Millisecond {
				c.waitForTimers(2)
				time.Sleep(time.Millisecond)
				db.Advance(250 * time.Millisecond)
			}
			if got := fx.count(t, "close", slot); got != tc.effects {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("the slot's effect committed %d times (runs: %s), want %d", got, strings.Join(runs, ", "), tc.effects)
			}
			// a comes back and records its run; the slot stays as it is.
			proxy.Restore()
			c.settle() // a's next attempt (its pauses are real time, 2s at most) records it
			if !tc.complete {
				return
			}
			got, err := direct.SlotGet(context.Background(), "close", slot)
			if err != nil || got.Status != store.SlotCompleted || got.Attempts != 1 || got.Owner != "a" {
				t.Fatalf("slot = %+v, %v; want completed by a at attempt 1", got, err)
			}
			rows, err := direct.RunList(context.Background(), store.RunListParams{Job: "close"})
			if err != nil || countRuns(rows, slot) != 1 || !rows[0].Success || rows[0].LeaseName != "job:close" {
				t.Fatalf("run rows = %+v, %v; want a's success, naming its lease", rows, err)
			}
		})
	}
}

// A handler that completes its slot and then fails (a step after the
// commit) leaves the slot completed, its failure recorded on the run row,
// and nothing to resume or retry: its effect is committed. The same when
// its failure is a lost lease. A manual run completes nothing (it has no
// slot); Complete fences it.
func TestCompleteThenFail(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		fx := newEffects(t, c.open(t))
		failWith := map[string]error{
			"after-commit": errors.New("the report could not be mailed"),
			"lease-lost":   fmt.Errorf("stopped: %w", ErrLeaseLost),
		}
		var jobs []Job
		for name, fail := range failWith {
			jobs = append(jobs, Job{Name: name, Schedule: "* * * * *", MaxAttempts: 3, Handler: func(ctx context.Context, run *Run) error {
				if err := fx.write(ctx, run, true); err != nil {
					return err
				}
				if run.Origin == OriginManual {
					return nil
				}
				return fail
			}})
		}
		a := c.start("a", 0, jobs...)
		c.start("b", 0, jobs...)
		c.advance(time.Minute, time.Minute)
		slot := c.db.Now()
		c.advance(5*time.Minute, 500*time.Millisecond) // resume scans, retries: none may run it again

		for name, fail := range failWith {
			if n := fx.count(t, name, slot); n != 1 {
				t.Fatalf("%s: the slot's effect committed %d times, want once", name, n)
			}
			got, err := a.e.Store.SlotGet(context.Background(), name, slot)
			if err != nil || got.Status != store.SlotCompleted || got.Attempts != 1 {
				t.Fatalf("%s: slot = %+v, %v; want completed at attempt 1", name, got, err)
			}
			rows, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: name})
			if err != nil {
				t.Fatal(err)
			}
			var row store.Run
			for _, r := range rows {
				if r.Slot.Equal(slot) {
					row = r
				}
			}
			if countRuns(rows, slot) != 1 || row.Success || !strings.Contains(row.Error, fail.Error()) || strings.Contains(row.Error, "left for a replica to resume") {
				t.Fatalf("%s: run rows of the slot %+v; want one failure saying %q, not left to resume", name, rows, fail)
			}
		}

		mr, err := a.Trigger(context.Background(), "after-commit")
		if err != nil {
			t.Fatal(err)
		}
		c.settle()
		if n := fx.count(t, "after-commit", time.Time{}); n != 1 {
			t.Fatalf("manual run: %d effects, want 1", n)
		}
		rows, _ := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "after-commit"})
		if len(rows) == 0 || !rows[0].Manual || !rows[0].Success || rows[0].Generation != mr.Generation {
			t.Fatalf("manual run row = %+v; want its success", rows)
		}
	})
}

// A handler that completes its slot with the store's own SQL (complete()
// on PostgreSQL, cronfence_complete on SQLite), as a command's psql does,
// and is then cut short by a lost lease: its end is recorded as a finished
// run's, since the store says its slot is completed, not "left for a
// replica to resume" (which Run.Complete alone used to tell the scheduler).
// The SQL reads the database's own clock, so the cluster's clock starts at
// the real time here.
func TestCompleteInSQLThenInterrupted(t *testing.T) {
	eachStoreNow(t, func(t *testing.T, c *cluster) {
		fx := newEffects(t, c.open(t))
		job := Job{Name: "psql", Schedule: "* * * * *", MaxAttempts: 3, Handler: func(ctx context.Context, run *Run) error {
			if err := fx.writeSQL(ctx, run); err != nil {
				return err
			}
			return fmt.Errorf("cut short: %w", ErrLeaseLost)
		}}
		a := c.start("a", 0, job)
		c.advance(time.Minute, time.Minute)
		slot := c.db.Now()
		c.advance(10*time.Second, 500*time.Millisecond)
		if n := fx.count(t, "psql", slot); n != 1 {
			t.Fatalf("the slot's effect committed %d times, want once", n)
		}
		rows, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "psql"})
		if err != nil || countRuns(rows, slot) != 1 {
			t.Fatalf("run rows = %+v, %v; want one", rows, err)
		}
		if strings.Contains(rows[0].Error, "left for a replica to resume") || rows[0].Success {
			t.Fatalf("run row %+v; want a failure recorded as the end of a completed slot, not left to resume", rows[0])
		}
		if got, err := a.e.Store.SlotGet(context.Background(), "psql", slot); err != nil || got.Status != store.SlotCompleted {
			t.Fatalf("slot = %+v, %v; want completed", got, err)
		}
	})
}

// A job that completes its slot in its own transaction (CompletesInTx)
// counts a slot completed only when that transaction completed it. A
// handler that returns nil without it (its COMMIT's answer was a success
// from a server that then lost the commit in a failover, a demoted primary
// that took it, or a handler that forgot) has no committed effect the
// scheduler can know of: the slot is left to resume (attempts left) or
// ends failed (none left), never completed on the handler's word. Without
// the option the handler's nil completes the slot, as ever.
func TestCompletesInTxTrustsOnlyTheTransaction(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		fx := newEffects(t, st)
		var mu sync.Mutex
		attempts := map[string][]int{}
		handler := func(ctx context.Context, run *Run) error {
			mu.Lock()
			attempts[run.Job] = append(attempts[run.Job], run.Attempt)
			mu.Unlock()
			if run.Attempt == 1 || run.Job == "never" {
				return nil // as if its transaction's commit were lost
			}
			return fx.write(ctx, run, true)
		}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "trusts", Schedule: "0 1 12 1 3 *", MaxAttempts: 3, CompletesInTx: true, Handler: handler},
			Job{Name: "never", Schedule: "0 1 12 1 3 *", MaxAttempts: 2, CompletesInTx: true, Handler: handler},
			Job{Name: "believes", Schedule: "0 1 12 1 3 *", MaxAttempts: 3, Handler: handler})
		slot := c.db.Now().Add(time.Minute)
		c.advance(time.Minute, time.Minute)
		c.advance(3*time.Second, 500*time.Millisecond) // the resume scan's passes

		sl, err := st.SlotGet(ctx, "trusts", slot)
		if err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 2 {
			t.Errorf("trusts' slot = %+v, %v; want completed by attempt 2, whose transaction completed it", sl, err)
		}
		if n := fx.count(t, "trusts", slot); n != 1 {
			t.Errorf("trusts' effect committed %d times, want 1", n)
		}
		rows, err := st.RunList(ctx, store.RunListParams{Job: "trusts"})
		if err != nil || len(rows) != 2 || rows[1].Success || !strings.Contains(rows[1].Error, "did not complete its slot") {
			t.Errorf("trusts' run rows = %+v, %v; want attempt 1 recorded as not completed, then attempt 2", rows, err)
		}
		if sl, err := st.SlotGet(ctx, "never", slot); err != nil || sl.Status != store.SlotFailed || sl.Attempts != 2 {
			t.Errorf("never's slot = %+v, %v; want failed after its 2 attempts, neither completing it", sl, err)
		}
		if sl, err := st.SlotGet(ctx, "believes", slot); err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 1 {
			t.Errorf("believes' slot = %+v, %v; want completed at attempt 1 on the handler's word", sl, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := fmt.Sprint(attempts["trusts"], attempts["never"], attempts["believes"]); got != "[1 2] [1 2] [1]" {
			t.Errorf("attempts trusts, never, believes = %s; want [1 2] [1 2] [1]", got)
		}
		c.wantNeverDown()
	})
}

// A handler may keep its fenced transaction open for its whole run, here
// three lease TTLs and the job's next three slots. Meanwhile its replica
// renews the lease (the fence's row lock does not hold renewals up), so the
// other replica never takes the run over; each overlapping slot is
// refused at once, so "tick", fired in the same batches, runs every slot;
// and the transaction commits at the end under its own generation.
func TestLongFencedTransactionHoldsNothingUp(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		pg := c.open(t).(*postgres.Store)
		pool, writes := pg.Pool(), pgx.Identifier{pg.Schema(), "long_writes"}.Sanitize()
		if _, err := pool.Exec(ctx, `CREATE TABLE `+writes+` (slot timestamptz, generation bigint)`); err != nil {
			t.Fatal(err)
		}
		started, release, committed := make(chan *Run, 4), make(chan struct{}), make(chan error, 4)
		long := func(ctx context.Context, run *Run) error {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.Background()) }()
			if err := run.Fence(ctx, tx); err != nil {
				return err
			}
			started <- run
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			if _, err := tx.Exec(ctx, `INSERT INTO `+writes+` VALUES ($1, $2)`, run.Slot, run.Generation); err != nil {
				return err
			}
			err = tx.Commit(ctx)
			committed <- err
			return err
		}
		l := newLedger()
		jobs := []Job{{Name: "long", Schedule: "* * * * *", LeaseTTL: 50 * time.Second, Handler: long},
			{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)}}
		// b starts once a's run holds the lease: a claim that races the
		// winner of the very slot it fences may still wait for the fenced
		// transaction (see finding 14 in docs/reliability.md); the slots
		// after it must not.
		c.start("a", 0, jobs...)
		start := c.db.Now()
		c.db.Advance(time.Minute)
		run := <-started
		c.settleHolding(1)
		c.startHolding(1, Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1}, jobs...)
		// Three more minutes in steps of a renewal period: the held run is
		// renewed at each, and long's slots come due beside tick's.
		for range 9 {
			c.db.Advance(20 * time.Second)
			c.settleHolding(1)
		}
		close(release)
		if err := <-committed; err != nil {
			t.Fatalf("the fenced transaction's commit after three TTLs: %v", err)
		}
		c.settle()
		c.wantNeverDown()
		select {
		case r := <-started:
			t.Fatalf("long's run was started again (slot %s, by %s) while the first held its lease", r.Slot, r.Owner)
		default:
		}
		l.wantEachOnce(t, "tick", start.Add(time.Minute), c.db.Now().Add(time.Second), time.Minute)
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+writes+` WHERE generation = $1`, run.Generation).Scan(&n); err != nil || n != 1 {
			t.Fatalf("fenced writes at generation %d = %d, %v; want 1", run.Generation, n, err)
		}
		runs, err := c.replicas[0].e.Store.RunList(ctx, store.RunListParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		var skips int
		for _, r := range runs {
			switch {
			case r.Skipped && r.Reason == "already_executing":
				skips++
			case r.Skipped || !r.Success || r.Generation != run.Generation:
				t.Errorf("long's run row %+v; want its one run, successful at generation %d", r, run.Generation)
			}
		}
		if skips != 3 {
			t.Errorf("long's overlapping slots: %d skip rows, want 3", skips)
		}
	})
}
