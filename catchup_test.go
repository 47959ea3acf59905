package cronfence

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// A job added at 12:29:34 with a catch-up window does not run its 12:29:00
// slot: it did not exist then (a Kubernetes CronJob created at 12:29:34 does
// not either). Its first registration is recorded, on every replica's
// behalf, so a replica started later, after a slot was missed while none
// ran, does catch that slot up.
func TestCatchUpNeverRunsASlotFromBeforeTheJobExisted(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		l := newLedger()
		job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: time.Hour, Handler: l.handler(c.db)}
		c.db.Advance(29*time.Minute + 34*time.Second) // 12:29:34
		a := c.start("a", 0, job)
		c.start("b", 0, job) // a second replica, a second later in spirit: the same answer
		if n := l.ran("minutely", c.db.Now().Truncate(time.Minute)); n != 0 {
			t.Fatalf("the new job ran its 12:29 slot, from before it existed, %d times", n)
		}
		c.advance(26*time.Second, time.Second) // 12:30 runs normally
		if n := l.ran("minutely", c.db.Now()); n != 1 {
			t.Fatalf("12:30 ran %d times, want once", n)
		}
		c.stop(a)
		c.stop(c.replicas[0])
		c.db.Advance(90 * time.Second) // 12:31:30: nobody ran 12:31
		c.start("c", 0, job)
		missed := c.db.Now().Truncate(time.Minute)
		if n := l.ran("minutely", missed); n != 1 {
			t.Fatalf("the slot missed while no replica ran (12:31) ran %d times at the next start, want once", n)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}

// The store comes back at the very tick the next slot fires. The slot
// missed during the outage is claimed first, by catch-up, and runs once;
// the next slot, due while that catch-up run held the job's lease, is no
// overlap (the lease was free when it came due) and runs once too, after
// it. Nothing is recorded skipped. (Before: the next slot was claimed
// first, and the catch-up met its run and was recorded as an overlap skip
// naming its own replica; the missed slot never ran.)
func TestCatchUpAfterAnOutageRunsTheMissedSlotBesideTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL cluster of its own")
	}
	t.Parallel()
	pg := pgtest.NewCluster(t)
	db := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC))
	c := &cluster{t: t, db: db, kind: "postgres", open: func(t *testing.T) store.Store {
		pool, err := pgxpool.New(context.Background(), pg.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		st, err := postgres.New(pool, &postgres.Config{NowFunc: db.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return st
	}}
	l := newLedger()
	missedSlot := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	held := func(ctx context.Context, run *Run) error {
		if err := l.handler(db)(ctx, run); err != nil {
			return err
		}
		if !run.Slot.Before(missedSlot) {
			<-release // the first run after the outage still runs when the other slot's claims come
		}
		return nil
	}
	job := Job{Name: "minutely", Schedule: "* * * * *", CatchUpWindow: 10 * time.Minute, Handler: held}
	a := c.start("a", 0, job)
	c.start("b", 0, job)
	pg.Stop(t)
	c.advance(30*time.Second, 30*time.Second) // 12:01 fires with the store down: left to catch-up
	pg.Start(t)
	// One tick, at 12:02:00.5: the store is back, and 12:02 is due.
	db.Advance(time.Minute + 500*time.Millisecond)
	c.settleHolding(1)
	once.Do(func() { close(release) })
	c.settle()

	missed, next := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC)
	for _, slot := range []time.Time{missed, next} {
		if n := l.ran("minutely", slot); n != 1 {
			t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), n)
		}
	}
	runs, err := a.e.Store.RunList(context.Background(), store.RunListParams{Job: "minutely"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Skipped {
			t.Fatalf("a skip was recorded: %+v", r)
		}
	}
	l.wantNoneTwiceOrEarly(t)
}
