package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// A claim that asks to wait for its slot but reaches the point of judging
// it only after the slot (its statement started before the slot, then
// waited: here for a table lock, in production for a busy CPU or a plan)
// judges it by the clock it reads then, not by the statement's start: the
// slot is due, and claimed. (It was judged by now(), the start, and
// refused not_due, so the replica tried again 20 ms later.)
func TestClaimThatWaitedPastItsSlotIsJudgedWhenItRuns(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	// The claimer's one connection has the claim statement prepared, so
	// the claim's transaction starts when the statement is sent, and the
	// wait for the lock comes inside it.
	claimer := openOnWith(t, schema, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	warm := store.SlotClaimParams{Job: "warm", Slot: now.Add(-time.Second), LeaseName: "job:warm", Owner: "a", TTL: time.Minute, MaxAttempts: 3, WaitDue: true}
	if r, err := claimer.SlotClaim(ctx(t), warm); err != nil || !r.Claimed {
		t.Fatalf("claim of a due slot = %+v, %v", r, err)
	}
	now, err = s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(50 * time.Millisecond)
	p := store.SlotClaimParams{Job: "report", Slot: slot, LeaseName: "job:report", Owner: "a", TTL: time.Minute, MaxAttempts: 3, WaitDue: true}

	lock, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx(t))
	if _, err := lock.Exec(ctx(t), `LOCK TABLE `+pgx.Identifier{schema, "slots"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	done := claimInBackground(t, claimer, p)
	// The claim's statement has started, and waits for the table.
	wait.For(t, wait.Forever, func() bool {
		var n int
		err := s.Pool().QueryRow(ctx(t), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'
			  AND $1 = ANY (pg_blocking_pids(pid))`, backendPID(t, lock)).Scan(&n)
		return err == nil && n > 0
	}, func() string { return "the claim did not wait for the table lock" })
	// Held until the slot has passed by the database clock.
	wait.For(t, wait.Forever, func() bool {
		now, err := s.Now(ctx(t))
		return err == nil && now.After(slot.Add(5*time.Millisecond))
	}, func() string { return "the database clock did not pass the slot" })
	if err := lock.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if !a.r.Claimed || a.r.Slot.StartedAt.Before(slot) {
		t.Fatalf("claim = claimed %v, refusal %q, started %s; want claimed, at or after the slot %s",
			a.r.Claimed, a.r.Refusal, a.r.Slot.StartedAt.Format(time.RFC3339Nano), slot.Format(time.RFC3339Nano))
	}
}

// A claim that waits for its slot before judging it reads the rows as
// they were when its statement started. (It judges after the wait when one
// of its items' leases is held at the start, here the blocker's: that
// lease might be given back before the slot. Otherwise it judges, writes
// and commits ahead; TestAClaimSentAheadCommitsBeforeItsSlot.) When
// another replica claims,
// runs and ends the slot during the wait, the claim answers what stands,
// refused completed, and keeps no lease: it may have taken the job's
// lease (free again) and then found the slot ended, and gives it back; or
// the lease was created after its snapshot, so it took nothing and saw no
// holder, and reads the slot. (The wait made these paths, untested before,
// common under load: 12,000 lost races a minute at 10,000 jobs a second.
// The second answered "already executing", naming nobody.)
func TestClaimWaitingWhileTheSlotRanElsewhereAnswersWhatStands(t *testing.T) {
	for _, leaseExists := range []bool{true, false} {
		t.Run(fmt.Sprintf("lease row before the wait=%v", leaseExists), func(t *testing.T) {
			t.Parallel()
			claimWhileTheSlotRunsElsewhere(t, leaseExists)
		})
	}
}

// claimWhileTheSlotRunsElsewhere has a's claim wait for a slot just under
// store.MaxClaimWait ahead while b claims, runs and ends it. The race is
// real, so a loaded machine can lose it either way before it tests
// anything: a's statement reaches the server so late that its sleep is
// over before it is seen, or b's claim lands only after a woke and took
// the slot, or ended it only after a woke. Each is tried again, with a new
// job; only a's answer to a slot b ended during a's wait is judged.
func claimWhileTheSlotRunsElsewhere(t *testing.T, leaseExists bool) {
	_, schema := newStore(t)
	other := openOn(t, schema)
	s := claimerStore(t, schema)
	untilConclusive(t, 50, "a's claim never waited for its slot while b ran it", func(job string) bool {
		return claimWhileRunElsewhere(t, s, other, schema, job, leaseExists)
	})
}

// claimWhileRunElsewhere is one attempt of claimWhileTheSlotRunsElsewhere
// on job; false means it was inconclusive.
func claimWhileRunElsewhere(t *testing.T, s, other *postgres.Store, schema, job string, leaseExists bool) bool {
	leaseName := "job:" + job
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(store.MaxClaimWait * 9 / 10)
	p := store.SlotClaimParams{Job: job, Slot: slot, LeaseName: leaseName, Owner: "a", TTL: time.Minute, MaxAttempts: 3, WaitDue: true}
	b := p
	b.Owner, b.WaitDue, b.Now = "b", false, slot
	// b runs the blocker's earlier slot through a's wait.
	blocker := store.SlotClaimParams{Job: "blocker-" + job, Slot: slot, LeaseName: "job:blocker-" + job, Owner: "a",
		TTL: time.Minute, MaxAttempts: 3, WaitDue: true}
	running := blocker
	running.Owner, running.WaitDue, running.Slot, running.Now = "b", false, now.Add(-time.Minute), now
	if r, err := other.SlotClaim(ctx(t), running); err != nil || !r.Claimed {
		t.Fatalf("b's claim of the blocker = %+v, %v", r, err)
	}
	end := func(r store.SlotClaimResult, at time.Time) {
		t.Helper()
		if _, err := other.SlotFinish(ctx(t), store.SlotFinishParams{Job: job, Slot: r.Slot.Slot, LeaseName: leaseName, Owner: "b",
			Generation: r.Lease.Generation, Status: store.SlotCompleted, Now: at, Run: store.Run{Attempt: 1, Success: true}}); err != nil {
			t.Fatal(err)
		}
	}
	if leaseExists {
		// b ran the slot before, and released the lease.
		earlier := b
		earlier.Slot, earlier.Now = slot.Add(-time.Minute), slot.Add(-time.Minute)
		r, err := other.SlotClaim(ctx(t), earlier)
		if err != nil || !r.Claimed {
			t.Fatalf("b's earlier claim = %+v, %v", r, err)
		}
		end(r, earlier.Now)
	}
	done := claimBatchInBackground(t, s, p, blocker)
	// a's statement sleeps, its snapshot taken.
	if _, a, ok := sleepingClaim(t, other, schema, done); !ok {
		t.Logf("a's claim answered before it was seen waiting: %+v, %v", a.r, a.err)
		return false
	}
	// Meanwhile b runs the slot and ends it (on a pinned clock, at the
	// slot: judged due).
	won, err := other.SlotClaim(ctx(t), b)
	if err != nil {
		t.Fatal(err)
	}
	if !won.Claimed {
		a := <-done
		if a.err == nil && a.r.Claimed {
			t.Logf("b's claim came after a's woke and took the slot: %+v", won)
			return false
		}
		t.Fatalf("b's claim = %+v; a's = %+v, %v", won, a.r, a.err)
	}
	end(won, slot)
	if ended, err := other.Now(ctx(t)); err != nil {
		t.Fatal(err)
	} else if !ended.Before(slot) {
		a := <-done
		t.Logf("b's run ended only once a's wait was over: %+v, %v", a.r, a.err)
		return false
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.r.Claimed || a.r.Refusal != store.ClaimCompleted || a.r.Slot.Owner != "b" {
		t.Fatalf("a's claim = %+v; want refused completed, the slot b's", a.r)
	}
	l, err := s.LeaseGet(ctx(t), leaseName)
	if err != nil {
		t.Fatal(err)
	}
	if now, _ := s.Now(ctx(t)); l.Owner == "a" && l.ExpiresAt.After(now) {
		t.Fatalf("a kept the lease it took for a slot it did not claim: %+v", l)
	}
	if sl, err := s.SlotGet(ctx(t), job, slot); err != nil || sl.Status != store.SlotCompleted || sl.Owner != "b" || sl.Attempts != 1 {
		t.Fatalf("the slot = %+v, %v; want completed by b, once", sl, err)
	}
	return true
}

// claimAnswer is a SlotClaim's answer, delivered by claimInBackground.
type claimAnswer struct {
	r   store.SlotClaimResult
	err error
}

// claimInBackground claims p on s in a goroutine of its own, for a test
// that acts while the claim is in flight.
func claimInBackground(t *testing.T, s *postgres.Store, p store.SlotClaimParams) <-chan claimAnswer {
	return claimBatchInBackground(t, s, p)
}

// untilConclusive runs try with a new job each time ("report-1",
// "report-2", ...) until try says the race it set up was conclusive (its
// checks ran), at most attempts times: on a loaded machine a race can be
// lost before it tests anything, and try logs how.
func untilConclusive(t *testing.T, attempts int, never string, try func(job string) bool) {
	t.Helper()
	for attempt := 1; attempt <= attempts; attempt++ {
		if try(fmt.Sprintf("report-%d", attempt)) {
			return
		}
	}
	t.Fatalf("in %d attempts, %s", attempts, never)
}

// claimerStore is a store on schema whose connections name themselves, so
// that its claim sleeping for its slot can be told from any other test's
// (sleepingClaim).
func claimerStore(t *testing.T, schema string) *postgres.Store {
	return openOnWith(t, schema, func(cfg *pgxpool.Config) {
		cfg.ConnConfig.RuntimeParams["application_name"] = "claimer-" + schema
	})
}

// sleepingClaim waits, polling every millisecond (the sleep may be short),
// until the claim of claimerStore(schema) that done will answer sleeps for
// its slot, and tells whether its transaction has written by then (it
// holds a transaction ID). ok is false, with the claim's answer, when the
// claim answered before it was seen sleeping: on a loaded machine its
// statement can reach the server so late that the sleep is over first.
func sleepingClaim(t *testing.T, other *postgres.Store, schema string, done <-chan claimAnswer) (wrote bool, answered claimAnswer, ok bool) {
	t.Helper()
	for sleeping := false; !sleeping; time.Sleep(time.Millisecond) {
		select {
		case a := <-done:
			return false, a, false
		default:
		}
		err := other.Pool().QueryRow(ctx(t), `SELECT count(*) > 0, coalesce(bool_or(backend_xid IS NOT NULL), false)
			FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep'`, "claimer-"+schema).Scan(&sleeping, &wrote)
		if err != nil {
			t.Fatal(err)
		}
	}
	return wrote, claimAnswer{}, true
}

// claimBatchInBackground claims p with others in one batch, in the
// background, and answers p's result.
func claimBatchInBackground(t *testing.T, s *postgres.Store, p store.SlotClaimParams, others ...store.SlotClaimParams) <-chan claimAnswer {
	done := make(chan claimAnswer, 1)
	go func() {
		res, err := s.SlotClaimBatch(ctx(t), append([]store.SlotClaimParams{p}, others...))
		if err != nil {
			done <- claimAnswer{err: err}
			return
		}
		done <- claimAnswer{r: res[0]}
	}()
	return done
}

// A claim sent ahead of its slot, whose leases are free, judges, writes and
// commits before its slot, so that its commit and the answer's way back are
// behind the slot when it comes, and answers how long is left (Wait):
// another replica sees the slot claimed before it is due, its own claim of
// the slot is refused held, and the winner's run is dated at the slot,
// never before. (It used to sleep for the slot inside its transaction and
// commit after it: about a millisecond more before every run started, most
// of it the commit's WAL flush.)
func TestAClaimSentAheadCommitsBeforeItsSlot(t *testing.T) {
	t.Parallel()
	_, schema := newStore(t)
	other := openOn(t, schema)
	s := claimerStore(t, schema)
	untilConclusive(t, 20, "the claim never answered before its slot", func(job string) bool {
		now, err := s.Now(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		slot := now.Add(store.MaxClaimWait * 9 / 10)
		p := store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: time.Minute, MaxAttempts: 3, WaitDue: true}
		a, err := s.SlotClaim(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Claimed || a.Slot.StartedAt.Before(slot) || a.Lease.AcquiredAt.Before(slot) {
			t.Fatalf("a's claim = %+v; want claimed, dated at or after the slot %s", a, slot.Format(time.RFC3339Nano))
		}
		seen, err := other.SlotGet(ctx(t), job, slot)
		if err != nil {
			t.Fatalf("another replica cannot read the claimed slot: %v", err)
		}
		if at, err := other.Now(ctx(t)); err != nil {
			t.Fatal(err)
		} else if !at.Before(slot) {
			t.Logf("%s: the claim answered only after its slot (a slow moment); trying again", job)
			return false
		}
		if a.Wait <= 0 {
			t.Errorf("a claim that answered before its slot says it may start at once (Wait %s)", a.Wait)
		}
		if seen.Status != store.SlotRunning || seen.Owner != "a" {
			t.Errorf("the slot as another replica reads it before it is due = %+v; want running, a's", seen)
		}
		b := p
		b.Owner, b.WaitDue, b.Now = "b", false, slot
		lost, err := other.SlotClaim(ctx(t), b)
		if err != nil {
			t.Fatal(err)
		}
		if lost.Claimed || lost.Refusal != store.ClaimHeld || lost.Lease.Owner != "a" {
			t.Fatalf("b's claim = %+v; want refused, held by a", lost)
		}
		return true
	})
}

// A claim sent ahead of its slot while the job's previous run still holds
// the lease judges at the slot, not before: the run may end during the
// wait, and then the slot is the claim's, not an overlap of that run.
func TestAWaitingClaimSeesARunThatEndsBeforeTheSlot(t *testing.T) {
	t.Parallel()
	_, schema := newStore(t)
	other := openOn(t, schema)
	s := claimerStore(t, schema)
	untilConclusive(t, 20, "the previous run never ended during the claim's wait", func(job string) bool {
		now, err := s.Now(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		// b runs the job's previous slot, on a lease that outlives the next.
		prev := store.SlotClaimParams{Job: job, Slot: now.Add(-time.Second), LeaseName: "job:" + job, Owner: "b", TTL: time.Minute, MaxAttempts: 3}
		run, err := other.SlotClaim(ctx(t), prev)
		if err != nil || !run.Claimed {
			t.Fatalf("b's claim of the previous slot = %+v, %v", run, err)
		}
		slot := now.Add(store.MaxClaimWait * 9 / 10)
		p := store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: time.Minute, MaxAttempts: 3, WaitDue: true}
		done := claimInBackground(t, s, p)
		if _, a, ok := sleepingClaim(t, other, schema, done); !ok {
			t.Logf("%s: the claim answered before it was seen waiting: %+v, %v; trying again", job, a.r, a.err)
			return false
		}
		if _, err := other.SlotFinish(ctx(t), store.SlotFinishParams{Job: job, Slot: prev.Slot, LeaseName: prev.LeaseName, Owner: "b",
			Generation: run.Lease.Generation, Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true}}); err != nil {
			t.Fatal(err)
		}
		if ended, err := other.Now(ctx(t)); err != nil {
			t.Fatal(err)
		} else if !ended.Before(slot) {
			t.Logf("%s: the previous run ended only after the slot; trying again", job)
			<-done
			return false
		}
		a := <-done
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !a.r.Claimed || a.r.Recorded != "" {
			t.Fatalf("a's claim = %+v; want the slot claimed: the run it waited behind ended before the slot", a.r)
		}
		return true
	})
}
