package cronfence

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/peers"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// An attempt whose process died mid-run leaves a trace: the replica that
// resumes its slot records it first, as its holding's run row
// (interrupted, its owner, generation, start, and as its end its lease's
// expiry, saying how it was found dead), once across the replicas that
// find it, and the next attempt's row follows it.
func TestResumeRecordsTheDeadAttempt(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		slot := c.db.Now().Add(-time.Minute)
		// Attempt 1 by "dead", whose process died: its lease expired 30 s ago.
		first, err := st.SlotClaim(ctx, store.SlotClaimParams{Job: "long", Slot: slot, LeaseName: "job:long", Owner: "dead",
			TTL: 30 * time.Second, MaxAttempts: 3, Now: slot})
		if err != nil || !first.Claimed {
			t.Fatalf("attempt 1's claim = %+v, %v", first, err)
		}

		l := newLedger()
		job := Job{Name: "long", Schedule: "0 0 1 1 *", MaxAttempts: 3, LeaseTTL: 30 * time.Second, Handler: l.handler(c.db)}
		c.start("a", 0, job)
		c.start("b", 0, job)
		c.advance(time.Second, time.Second) // a resume scan on each replica
		c.wantNeverDown()
		if n := l.ran("long", slot); n != 1 {
			t.Fatalf("the dead slot ran %d times, want once (attempt 2)", n)
		}
		runs, err := st.RunList(ctx, store.RunListParams{Job: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || !runs[0].Success || runs[0].Attempt != 2 {
			dumpRuns(t, st, "long")
			t.Fatalf("%d run rows; want attempt 2's success after attempt 1's interrupted row", len(runs))
		}
		dead := runs[1]
		if dead.Attempt != 1 || dead.Success || dead.Reason != store.ReasonInterrupted || dead.Owner != "dead" ||
			dead.Generation != first.Lease.Generation || dead.LeaseName != "job:long" || !dead.StartedAt.Equal(slot) ||
			!dead.FinishedAt.Equal(first.Lease.ExpiresAt) || !strings.Contains(dead.Error, "the run by dead at generation") ||
			!strings.HasSuffix(dead.Error, "("+store.DeadLeaseExpired+")") {
			t.Fatalf("attempt 1's row = %+v; want it interrupted, by dead at generation %d, from its start to its lease's expiry %s, saying its lease expired",
				dead, first.Lease.Generation, first.Lease.ExpiresAt)
		}
	})
}

// scanCounter is a PostgreSQL store that counts its scans for dead runs.
type scanCounter struct {
	*postgres.Store // its Listen too: the scheduler sees notices
	scans           atomic.Int64
}

func (s *scanCounter) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	s.scans.Add(1)
	return s.Store.SlotListInterrupted(ctx)
}

// While nobody died, replicas that listen do not scan for dead runs every
// ResumeEvery: only once as they start listening and, one replica, every
// peers.ResumeBackstopEvery. A run whose owner dies is still resumed within
// about ResumeEvery of its lease's end, by the replica that watches it.
func TestDeadRunScansOnlyWhileAWatchedRunGoesOn(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		l := newLedger()
		job := Job{Name: "report", Schedule: "0 0 1 1 *", Handler: l.handler(c.db), MaxAttempts: 3}
		var counters []*scanCounter
		var replicas []*Scheduler
		for _, o := range []string{"a", "b", "c"} {
			sc := &scanCounter{Store: c.open(t).(*postgres.Store)}
			counters = append(counters, sc)
			replicas = append(replicas, c.startWith(Config{Owner: o, Store: sc, Clock: offsetClock{c.db, 0}, Retention: -1}, job))
		}
		hearEachOther(t, replicas...)
		scans := func() (n int64) {
			for _, sc := range counters {
				n += sc.scans.Load()
			}
			return n
		}
		before := scans()
		c.advance(2*time.Minute, DefaultResumeEvery)
		// Every ResumeEvery on each replica would be 720; what is left is
		// one scan per replica after it started listening, and the
		// backstop's 5 by one replica.
		if n := scans() - before; n > int64(2*time.Minute/peers.ResumeBackstopEvery)+1+3 {
			t.Fatalf("%d scans for dead runs in 2 idle minutes on 3 replicas, want at most the backstop's", n)
		}

		// An owner outside the cluster claims a slot of the job and dies:
		// its lease (10 s) runs out without its end.
		st := c.open(t)
		dead := c.db.Now().Add(-time.Hour).Truncate(time.Minute)
		r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{Job: "report", Slot: dead, LeaseName: "job:report",
			Owner: "dead", TTL: 10 * time.Second, MaxAttempts: 3})
		if err != nil || !r.Claimed {
			t.Fatalf("claim: %+v, %v", r, err)
		}
		wait.For(t, 10*time.Second, func() bool {
			for _, s := range replicas {
				if !s.loop.peers.Watched("report", dead) {
					return false
				}
			}
			return true
		}, func() string { return "the replicas did not hear the claim" })
		c.advance(10*time.Second+DefaultResumeEvery, DefaultResumeEvery)
		if n := l.ran("report", dead); n != 1 {
			t.Fatalf("the dead owner's slot ran %d times within ResumeEvery of its lease's end, want resumed once", n)
		}
		sl, err := st.SlotGet(context.Background(), "report", dead)
		if err != nil || sl.Attempts != 2 || sl.Status != store.SlotCompleted {
			t.Fatalf("slot after the resume: %+v, %v; want completed at attempt 2", sl, err)
		}
		c.wantNeverDown()
	})
}

// A run whose own replica loses its lease while it runs (here: another
// owner takes the lease and lets it go, as after renewals that could not
// reach the database until it expired) is cancelled, and its slot is left
// running for a replica to resume with one more attempt, not counted as
// failed — unless it was the slot's last attempt, which ends failed, since
// nothing could take the slot again.
func TestLostLeaseLeavesTheSlotToResume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		maxAttempts int
		resumed     bool
	}{
		{maxAttempts: 3, resumed: true},
		{maxAttempts: 1, resumed: false},
	} {
		t.Run(fmt.Sprintf("max_attempts=%d", tc.maxAttempts), func(t *testing.T) {
			eachStore(t, func(t *testing.T, c *cluster) {
				const ttl = 30 * time.Second
				b := newBlocker()
				close(b.release) // a resumed attempt succeeds at once
				first := make(chan *Run, 1)
				job := Job{Name: "victim", Schedule: "* * * * *", LeaseTTL: ttl, MaxAttempts: tc.maxAttempts,
					Handler: func(ctx context.Context, run *Run) error {
						if run.Attempt > 1 {
							return b.handler(ctx, run)
						}
						first <- run
						<-ctx.Done()
						return context.Cause(ctx)
					}}
				a := c.start("a", 0, job)
				c.start("b", 0, job)
				c.db.Advance(time.Minute)
				run := <-first // on either replica
				c.settleHolding(1)

				st := a.e.Store
				held, err := st.LeaseGet(context.Background(), "job:victim")
				if err != nil {
					t.Fatal(err)
				}
				other, ok, err := st.LeaseAcquire(context.Background(), store.LeaseAcquireParams{Name: "job:victim", Owner: "other", TTL: ttl, Now: held.ExpiresAt})
				if err != nil || !ok {
					t.Fatalf("takeover: %v, %v", ok, err)
				}
				if ok, err := st.LeaseRelease(context.Background(), other.Ref()); err != nil || !ok {
					t.Fatalf("release: %v, %v", ok, err)
				}
				// The holder's next renewal finds its lease gone, and its
				// run ends; the resume scans (every 500 ms) then find the
				// slot's run dead.
				c.db.Advance(ttl / 3)
				c.settle()
				c.advance(2*time.Second, 500*time.Millisecond)

				runs, err := st.RunList(context.Background(), store.RunListParams{Job: "victim"})
				if err != nil {
					t.Fatal(err)
				}
				slot, err := st.SlotGet(context.Background(), "victim", run.Slot)
				if err != nil {
					t.Fatal(err)
				}
				if !tc.resumed {
					if slot.Status != store.SlotFailed || slot.Attempts != 1 || len(runs) != 1 || runs[0].Success ||
						!strings.Contains(runs[0].Error, "lease") {
						t.Fatalf("last attempt: slot %+v, runs %+v; want the slot failed after 1 attempt, one failed run naming the lease", slot, runs)
					}
					return
				}
				if slot.Status != store.SlotCompleted || slot.Attempts != 2 {
					t.Fatalf("slot %+v; want completed at attempt 2", slot)
				}
				// The resume may start before the cut-short run has ended: the
				// slot's lease moved on, so its run was dead already.
				byAttempt := map[int]store.Run{}
				for _, r := range runs {
					byAttempt[r.Attempt] = r
				}
				cut, again := byAttempt[1], byAttempt[2]
				if len(runs) != 2 || !again.Success || cut.Success ||
					!strings.Contains(cut.Error, "interrupted by lease loss, left for a replica to resume") ||
					strings.Count(cut.Error, "lease lost") != 1 || !cut.FinishedAt.Equal(held.AcquiredAt.Add(ttl/3)) {
					t.Fatalf("runs = %+v; want attempt 1 interrupted by lease loss (said once, ended at the renewal), attempt 2 successful", runs)
				}
				if resumed := <-b.started; !resumed.Slot.Equal(run.Slot) || resumed.Generation <= other.Generation {
					t.Fatalf("resumed run %+v; want slot %s at a generation above %d", resumed, run.Slot, other.Generation)
				}
			})
		})
	}
}

// The resume scan leaves a dead slot that has used all its attempts alone
// (claiming it would be refused on every scan) and resumes an older dead
// slot of the same job that has attempts left, which the newer one used to
// hide.
func TestResumeSkipsSlotsOutOfAttempts(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := c.open(t)
		start := c.db.Now() // 12:00
		older, newer := start.Add(-2*time.Minute), start.Add(-time.Minute)
		claim := func(slot time.Time, at time.Duration) {
			t.Helper()
			r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
				Job: "victim", Slot: slot, LeaseName: "job:victim", Owner: "dead", TTL: time.Second, MaxAttempts: 3,
				Now: newer.Add(at),
			})
			if err != nil || !r.Claimed {
				t.Fatalf("claim of %s: %+v, %v", slot.Format(time.TimeOnly), r, err)
			}
		}
		// A dead owner ran the older slot once and the newer one three
		// times, each run dying with its lease (TTL 1 s).
		claim(older, 0)
		claim(newer, 2*time.Second)
		claim(newer, 4*time.Second)
		claim(newer, 6*time.Second)

		l := newLedger()
		rec := &recorder{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec},
			Job{Name: "victim", Schedule: "* * * * *", MaxAttempts: 3, Handler: l.handler(c.db)})
		c.advance(2*time.Second, 500*time.Millisecond)

		if n := l.ran("victim", older); n != 1 {
			t.Errorf("older slot (1 attempt of 3 used) ran %d times, want resumed once", n)
		}
		if n := l.ran("victim", newer); n != 0 {
			t.Errorf("newer slot (3 attempts of 3 used) ran %d times, want never", n)
		}
		for _, e := range rec.take() {
			if ce, ok := e.(ClaimEvent); ok && ce.Origin == OriginResume && ce.Slot.Equal(newer) {
				t.Errorf("the resume scan claimed the slot out of attempts: %+v", ce)
			}
		}
		if sl, err := st.SlotGet(context.Background(), "victim", older); err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 2 {
			t.Errorf("older slot = %+v, %v; want completed at attempt 2", sl, err)
		}
	})
}

// A resume pass whose claim meets a lease row held FOR KEY SHARE — a
// deposed writer frozen inside its fenced transaction — does not hold up
// the fires of other jobs: "tick" runs its slot while "frozen"'s dead run
// cannot be taken over, and the run is resumed by the first scan after the
// writer's transaction ends. (On SQLite a frozen writer holds the file's
// one write lock, and every write waits for it.)
func TestResumeOfAFrozenWritersRunDoesNotHoldUpFires(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		dead := start.Add(-time.Minute)
		_, tx := frozenWriter(t, st, dead, 3)

		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: "frozen", Schedule: "0 0 1 1 *", Handler: l.handler(c.db)},
			Job{Name: "tick", Schedule: "* * * * *", Handler: l.handler(c.db)})
		// A minute on, the lease has expired: the resume pass's claim of the
		// dead run's slot is refused lease_busy; tick's slot comes due.
		c.db.Advance(time.Minute)
		slot := start.Add(time.Minute)
		c.settle() // nothing waits: not the fires, not the resume pass
		if n := l.ran("tick", slot); n != 1 {
			t.Fatalf("tick's slot ran %d times while a resume claim met another job's fenced lease row, want 1", n)
		}
		if n := l.ran("frozen", dead); n != 0 {
			t.Fatalf("the frozen writer's slot ran %d times while its transaction held the lease row", n)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, time.Second) // the next resume scan
		if n := l.ran("frozen", dead); n != 1 {
			t.Fatalf("the dead run's slot ran %d times after the writer's transaction ended, want resumed once", n)
		}
	})
}

// A run that died on its job's last attempt (its process killed, say) can
// be claimed by nobody again: the resume scan ends its slot failed, with a
// run row saying why, once across replicas, instead of leaving it running
// for good; and the slot that waited for it (buffer-one) runs then.
func TestDeadRunOnItsLastAttemptEndsFailed(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		dead := start.Add(-2 * time.Minute)
		claim := func(slot time.Time, owner string, now time.Time) store.SlotClaimResult {
			t.Helper()
			r, err := st.SlotClaim(ctx, store.SlotClaimParams{
				Job: "once", Slot: slot, LeaseName: "job:once", Owner: owner, TTL: 30 * time.Second, MaxAttempts: 2,
				Overlap: store.OverlapBuffer, Now: now, RetryFailed: true, // the second attempt retries the first
			})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		first := claim(dead, "dead", dead)
		if _, err := st.SlotFinish(ctx, store.SlotFinishParams{Job: "once", Slot: dead, LeaseName: "job:once", Owner: "dead",
			Generation: first.Lease.Generation, Status: store.SlotFailed, Now: dead.Add(time.Second),
			Run: store.Run{Attempt: 1, Error: "exit status 1"}}); err != nil {
			t.Fatal(err)
		}
		// The second, last attempt dies mid-way; the next slot, overlapping
		// it, waits buffered.
		last := claim(dead, "dead", dead.Add(5*time.Second))
		next := dead.Add(10 * time.Second)
		if r := claim(next, "dead", next); r.Claimed || r.Recorded != store.SlotBuffered {
			t.Fatalf("the next slot's claim = %+v; want it buffered behind the dying run", r)
		}
		if !last.Claimed || last.Slot.Attempts != 2 {
			t.Fatalf("last attempt's claim = %+v", last)
		}

		l := newLedger()
		job := Job{Name: "once", Schedule: "0 0 1 1 *", MaxAttempts: 2, LeaseTTL: 30 * time.Second, Overlap: OverlapBufferOne, Handler: l.handler(c.db)}
		c.start("a", 0, job)
		c.start("b", 0, job)
		c.advance(time.Second, time.Second) // a resume scan on each replica
		c.wantNeverDown()

		sl, err := st.SlotGet(ctx, "once", dead)
		if err != nil || sl.Status != store.SlotFailed || sl.Attempts != 2 || sl.FinishedAt.IsZero() {
			t.Fatalf("the dead slot = %+v, %v; want failed after its 2 attempts", sl, err)
		}
		if n := l.ran("once", dead); n != 0 {
			t.Errorf("the dead slot ran %d more times with no attempt left", n)
		}
		if n := l.ran("once", next); n != 1 {
			t.Errorf("the buffered slot ran %d times once the dead run was ended, want 1", n)
		}
		runs, err := st.RunList(ctx, store.RunListParams{Job: "once"})
		if err != nil {
			t.Fatal(err)
		}
		var ended []store.Run
		for _, r := range runs {
			if r.Slot.Equal(dead) && r.Attempt == 2 {
				ended = append(ended, r)
			}
		}
		if len(ended) != 1 || ended[0].Success || ended[0].Owner != "dead" || !strings.Contains(ended[0].Error, "last attempt (2 of 2)") ||
			len(ended[0].Logs) != 1 || !strings.Contains(ended[0].Logs[0], "no attempt is left") {
			t.Fatalf("run rows of the last attempt = %+v; want one, failed, saying it died on its last attempt", ended)
		}
	})
}
