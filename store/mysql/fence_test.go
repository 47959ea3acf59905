package mysql

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
)

// manualClock is a clock the test moves by hand, shared by every Store on
// one database (Config.NowFunc), so a lease expires without waiting.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func bg() context.Context { return context.Background() }

// claimOf is a claim of job "report" at slot, with a 10 s lease.
func claimOf(slot time.Time, owner string) store.SlotClaimParams {
	return store.SlotClaimParams{Job: "report", Slot: slot, LeaseName: "job:report", Owner: owner, TTL: 10 * time.Second, MaxAttempts: 3}
}

// TestTakeoverWaitsForTheFencedCommit: a handler's fenced transaction is
// open when its lease expires (its process froze). A contender's claim is
// refused lease_busy and writes nothing, rather than take the lease from
// under the open transaction; once that commits, the contender takes the
// lease at the next generation, and the deposed writer's next fence fails.
// The writer's effect landed before the successor existed.
func TestTakeoverWaitsForTheFencedCommit(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	clock := &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := openStore(t, url, &Config{NowFunc: clock.Now})
	b := openStore(t, url, &Config{NowFunc: clock.Now})
	if err := a.Migrate(bg()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.DB().Exec(`CREATE TABLE effects (k VARCHAR(20) PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	first := clock.Now()
	won, err := a.SlotClaim(bg(), claimOf(first, "a"))
	if err != nil || !won.Claimed {
		t.Fatalf("first claim = %+v, %v", won, err)
	}
	tx, err := a.DB().BeginTx(bg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // committed below
	if err := a.LeaseFence(bg(), tx, "job:report", won.Lease.Generation); err != nil {
		t.Fatalf("fence of the live holding: %v", err)
	}
	if _, err := tx.Exec(`INSERT INTO effects VALUES ('a')`); err != nil {
		t.Fatal(err)
	}

	clock.Add(time.Minute) // the lease expired while the transaction is open
	next := first.Add(30 * time.Second)
	busy, err := b.SlotClaim(bg(), claimOf(next, "b"))
	if err != nil {
		t.Fatal(err)
	}
	if busy.Claimed || busy.Refusal != store.ClaimLeaseBusy || busy.Lease.Generation != won.Lease.Generation {
		t.Fatalf("claim beside the open fenced transaction = %+v; want lease_busy naming generation %d", busy, won.Lease.Generation)
	}
	if _, err := b.SlotGet(bg(), "report", next); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the busy claim wrote slot %s: %v", next, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}

	taken, err := b.SlotClaim(bg(), claimOf(next, "b"))
	if err != nil || !taken.Claimed || taken.Lease.Generation != won.Lease.Generation+1 {
		t.Fatalf("claim after the commit = %+v, %v; want generation %d", taken, err, won.Lease.Generation+1)
	}
	late, err := a.DB().BeginTx(bg(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Rollback() //nolint:errcheck // read only
	if err := a.LeaseFence(bg(), late, "job:report", won.Lease.Generation); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("deposed writer's fence = %v; want ErrLeaseLost", err)
	}
}

// TestFenceSeesATakeoverAfterItsSnapshot: a handler's REPEATABLE READ
// transaction (the server's default) read something before its lease was
// taken over. Its fence still sees the takeover: a locking read reads the
// newest committed row, not the transaction's snapshot.
func TestFenceSeesATakeoverAfterItsSnapshot(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	clock := &manualClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := openStore(t, url, &Config{NowFunc: clock.Now})
	if err := a.Migrate(bg()); err != nil {
		t.Fatal(err)
	}
	won, err := a.SlotClaim(bg(), claimOf(clock.Now(), "a"))
	if err != nil || !won.Claimed {
		t.Fatalf("claim = %+v, %v", won, err)
	}
	tx, err := a.DB().BeginTx(bg(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var n int
	if err := tx.QueryRow(`SELECT count(*) FROM ` + a.t("leases")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	clock.Add(time.Minute)
	if _, ok, err := a.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:report", Owner: "b", TTL: time.Hour}); err != nil || !ok {
		t.Fatalf("takeover: %v, %v", ok, err)
	}
	clock.Add(-time.Minute) // by the clock alone the old holding would pass
	if err := a.LeaseFence(bg(), tx, "job:report", won.Lease.Generation); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fence after a takeover committed since the snapshot = %v; want ErrLeaseLost", err)
	}
}

// TestFenceProcedures: clients other than the Go package fence with CALL
// cronfence_fence(name, generation) and complete with cronfence_complete,
// inside their own transaction; a lost generation raises SQLSTATE CF001
// and writes nothing.
func TestFenceProcedures(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	now, err := s.Now(bg())
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Second).Truncate(time.Second)
	p := claimOf(slot, "a")
	p.TTL = time.Hour
	won, err := s.SlotClaim(bg(), p)
	if err != nil || !won.Claimed {
		t.Fatalf("claim = %+v, %v", won, err)
	}
	call := func(proc string, generation int64) error {
		tx, err := s.DB().Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback() //nolint:errcheck // committed when it passed
		if _, err := tx.Exec(`CALL `+s.t(proc)+`(?, ?)`, "job:report", generation); err != nil {
			return err
		}
		return tx.Commit()
	}
	for _, proc := range []string{"fence", "complete"} {
		err := call(proc, won.Lease.Generation+1)
		var me *driver.MySQLError
		if !errors.As(err, &me) || string(me.SQLState[:]) != "CF001" {
			t.Fatalf("%s of a generation that does not hold the lease = %v; want SQLSTATE CF001", proc, err)
		}
	}
	if got, err := s.SlotGet(bg(), "report", slot); err != nil || got.Status != store.SlotRunning {
		t.Fatalf("slot after refused calls = %+v, %v; want running", got, err)
	}
	if err := call("fence", won.Lease.Generation); err != nil {
		t.Fatalf("fence of the holding: %v", err)
	}
	if err := call("complete", won.Lease.Generation); err != nil {
		t.Fatalf("complete of the holding: %v", err)
	}
	if got, err := s.SlotGet(bg(), "report", slot); err != nil || got.Status != store.SlotCompleted {
		t.Fatalf("slot after cronfence_complete = %+v, %v; want completed", got, err)
	}
	// The other running slots are left alone: the procedure's parameters
	// do not shadow its columns.
	other := claimOf(slot, "a")
	other.Job, other.LeaseName, other.TTL = "other", "job:other", time.Hour
	if r, err := s.SlotClaim(bg(), other); err != nil || !r.Claimed {
		t.Fatalf("claim of another job = %+v, %v", r, err)
	}
	if err := call("complete", won.Lease.Generation); err != nil {
		t.Fatal(err)
	}
	if got, err := s.SlotGet(bg(), "other", slot); err != nil || got.Status != store.SlotRunning {
		t.Fatalf("another job's slot after completing report's = %+v, %v; want running", got, err)
	}
}
