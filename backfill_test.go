package cronfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// settleSlot writes slot of job as an earlier replica left it: run and
// completed or failed (its only attempt), or passed over.
func settleSlot(t *testing.T, st store.Store, job string, slot time.Time, status store.SlotStatus) {
	t.Helper()
	ctx := context.Background()
	if status == store.SlotSkipped {
		if _, err := st.SlotSkip(ctx, []store.SlotSkipParams{{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "earlier",
			After: slot.Add(time.Minute), Reason: store.SkipPassedOver, Log: "Skipped: passed over", Now: slot.Add(time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		return
	}
	r, err := st.SlotClaim(ctx, store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "earlier", TTL: time.Minute,
		MaxAttempts: 1, Now: slot})
	if err != nil || !r.Claimed {
		t.Fatalf("claim of %s: %+v, %v", slot, r, err)
	}
	if _, err := st.SlotFinish(ctx, store.SlotFinishParams{Job: job, Slot: slot, LeaseName: r.Lease.Name, Owner: "earlier",
		Generation: r.Lease.Generation, Status: status, Now: slot.Add(time.Second),
		Run: store.Run{Attempt: 1, Success: status == store.SlotCompleted}}); err != nil {
		t.Fatal(err)
	}
}

// originLedger records the origin of each run of a slot.
type originLedger struct {
	mu      sync.Mutex
	origins map[time.Time][]Origin
}

func (l *originLedger) handler(ctx context.Context, run *Run) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.origins == nil {
		l.origins = map[time.Time][]Origin{}
	}
	l.origins[run.Slot.UTC()] = append(l.origins[run.Slot.UTC()], run.Origin)
	return nil
}

// ran returns the origins of slot's runs.
func (l *originLedger) ran(slot time.Time) []Origin {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.origins[slot.UTC()])
}

// A backfill across a range with completed, failed, skipped and missing
// slots runs only the missing ones, each once, with origin backfill, on
// three replicas; its dry run said so first; and a second backfill with
// IncludeFailed runs the failed ones again, once, and leaves the rest.
func TestABackfillRunsOnlyTheSlotsThatNeverRan(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 14, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		ctx := context.Background()
		var l originLedger
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", Handler: l.handler}
		at := func(min int) time.Time { return time.Date(2026, 3, 1, 12, min, 0, 0, time.UTC) }
		st := c.open(t)
		settleSlot(t, st, job.Name, at(0), store.SlotCompleted)
		settleSlot(t, st, job.Name, at(10), store.SlotFailed)
		settleSlot(t, st, job.Name, at(30), store.SlotSkipped)
		settleSlot(t, st, job.Name, at(50), store.SlotFailed)
		a := c.start("a", 0, job)
		c.start("b", 0, job)
		c.start("c", 0, job)

		p := BackfillParams{From: at(0), To: at(60), By: "ops"}
		plan, err := a.BackfillPlan(ctx, job.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{BackfillCompleted, BackfillFailed, BackfillRun, BackfillSkipped, BackfillRun, BackfillFailed}
		if got := outcomes(plan); !slices.Equal(got, want) || !plan[2].Slot.Equal(at(20)) {
			t.Fatalf("plan = %v (%v); want %v", got, plan, want)
		}
		b, err := a.Backfill(ctx, job.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		if b.State != store.BackfillRunning || b.Total != 6 || b.CreatedBy != "ops" {
			t.Fatalf("backfill = %+v; want running, 6 slots, by ops", b)
		}
		c.advance(10*time.Second, time.Second)
		for min, want := range map[int]int{0: 0, 10: 0, 20: 1, 30: 0, 40: 1, 50: 0} {
			got := l.ran(at(min))
			if len(got) != want || (want == 1 && got[0] != OriginBackfill) {
				t.Errorf("slot 12:%02d ran %v; want %d run of origin backfill", min, got, want)
			}
		}
		done, err := a.GetBackfill(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if wantCounts := (store.BackfillCounts{Ran: 2, Completed: 1, FailedBefore: 2, Skipped: 1}); done.State != store.BackfillDone ||
			done.Counts != wantCounts || !done.Cursor.Equal(at(50)) || done.FinishedAt.IsZero() {
			t.Fatalf("backfill at its end = %+v; want done, counts %+v", done, wantCounts)
		}

		p.IncludeFailed = true
		if plan, err = a.BackfillPlan(ctx, job.Name, p); err != nil {
			t.Fatal(err)
		}
		want = []string{BackfillCompleted, BackfillRerun, BackfillCompleted, BackfillSkipped, BackfillCompleted, BackfillRerun}
		if got := outcomes(plan); !slices.Equal(got, want) {
			t.Fatalf("plan with IncludeFailed = %v; want %v", got, want)
		}
		again, err := a.Backfill(ctx, job.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		c.advance(10*time.Second, time.Second)
		for min, want := range map[int]int{0: 0, 10: 1, 20: 1, 30: 0, 40: 1, 50: 1} {
			if got := l.ran(at(min)); len(got) != want {
				t.Errorf("after the rerun, slot 12:%02d ran %v; want %d", min, got, want)
			}
		}
		if done, err = a.GetBackfill(ctx, again.ID); err != nil || done.State != store.BackfillDone ||
			done.Counts != (store.BackfillCounts{Ran: 2, Completed: 3, Skipped: 1}) {
			t.Fatalf("the rerun at its end = %+v, %v; want done, 2 run, 3 completed, 1 skipped", done, err)
		}
		for _, min := range []int{10, 50} {
			if sl, err := st.SlotGet(ctx, job.Name, at(min)); err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 2 {
				t.Errorf("slot 12:%02d after its rerun = %+v, %v; want completed at attempt 2", min, sl, err)
			}
		}
	})
}

func outcomes(plan []BackfillSlot) []string {
	out := make([]string, len(plan))
	for i, s := range plan {
		out[i] = s.Outcome
	}
	return out
}

// Backfills of one job asked for at once, on three replicas, never both
// run: one is recorded, the others are refused naming it; and each slot
// of the range runs once.
func TestBackfillsOfAJobStartedAtOnceNeverBothRun(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 14, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		ctx := context.Background()
		var l originLedger
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", Handler: l.handler}
		var replicas []*Scheduler
		for _, name := range []string{"a", "b", "c"} {
			replicas = append(replicas, c.start(name, 0, job))
		}
		from, to := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
		const asks = 9
		var wg sync.WaitGroup
		var won atomic.Int64
		errs := make(chan error, asks)
		for i := range asks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b, err := replicas[i%3].Backfill(ctx, job.Name, BackfillParams{From: from, To: to, By: "ops"})
				if err == nil {
					won.Store(b.ID)
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		refused := 0
		for err := range errs {
			var ce *store.ConflictError
			switch {
			case err == nil:
			case errors.As(err, &ce) && errors.Is(err, store.ErrConflict):
				refused++
			default:
				t.Errorf("a backfill refused with %v; want a conflict naming the running one", err)
			}
		}
		if refused != asks-1 {
			t.Fatalf("%d of %d backfills refused; want all but one", refused, asks)
		}
		c.advance(10*time.Second, time.Second)
		for slot := from; slot.Before(to); slot = slot.Add(10 * time.Minute) {
			if got := l.ran(slot); len(got) != 1 {
				t.Errorf("slot %s ran %v; want once", slot.Format(time.TimeOnly), got)
			}
		}
		if b, err := replicas[0].GetBackfill(ctx, won.Load()); err != nil || b.State != store.BackfillDone || b.Counts.Ran != 6 {
			t.Fatalf("the backfill that ran = %+v, %v; want done, 6 run", b, err)
		}
		// Once it is done, another may be asked for: it finds each slot
		// completed.
		b, err := replicas[1].Backfill(ctx, job.Name, BackfillParams{From: from, To: to, By: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		c.advance(5*time.Second, time.Second)
		if b, err = replicas[1].GetBackfill(ctx, b.ID); err != nil || b.State != store.BackfillDone || b.Counts.Completed != 6 || b.Counts.Ran != 0 {
			t.Fatalf("a backfill of slots all run = %+v, %v; want done, 6 completed", b, err)
		}
	})
}

// The replica that drives a backfill is cut off from the database halfway
// (as a replica that died, or a network partition): its lease lapses,
// another replica goes on from the progress it recorded, and every slot
// of the range runs exactly once.
func TestABackfillSurvivesItsDriverCutOffHalfway(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 15, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		ctx := context.Background()
		var l originLedger
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", Handler: l.handler, LeaseTTL: 10 * time.Second}
		cut := map[string]*atomic.Bool{}
		for _, name := range []string{"a", "b", "c"} {
			st := intercept(c.open(t))
			off := &atomic.Bool{}
			cut[name] = off
			st.before = func(call *call) {
				if off.Load() {
					call.err = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")
				}
			}
			c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: -1, Store: st}, job)
		}
		from, to := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 14, 0, 0, 0, time.UTC)
		asker := c.replicas[0]
		b, err := asker.Backfill(ctx, job.Name, BackfillParams{From: from, To: to, Rate: 1, By: "ops"})
		if err != nil {
			t.Fatal(err)
		}
		// One slot a second: halfway through the twelve, cut the driver off.
		c.advance(8*time.Second, time.Second)
		mid, err := c.open(t).BackfillGet(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if mid.State != store.BackfillRunning || mid.Counts.Ran < 2 || mid.Counts.Ran > 10 || cut[mid.Driver] == nil {
			t.Fatalf("backfill halfway = %+v; want running, some slots run, a driver", mid)
		}
		cut[mid.Driver].Store(true)
		c.advance(2*time.Minute, time.Second) // its leases lapse; another goes on
		for slot := from; slot.Before(to); slot = slot.Add(10 * time.Minute) {
			if got := l.ran(slot); len(got) != 1 {
				t.Errorf("slot %s ran %v; want once", slot.Format(time.TimeOnly), got)
			}
		}
		end, err := c.open(t).BackfillGet(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if end.State != store.BackfillDone || end.Driver == mid.Driver || end.Counts.Handled() != 12 ||
			end.Counts.Ran+end.Counts.Running+end.Counts.Taken != 12 {
			t.Fatalf("backfill at its end = %+v; want done by another driver than %s, the 12 slots handled", end, mid.Driver)
		}
	})
}

// Bad backfills are refused naming what is wrong, and nothing is
// recorded.
func TestBackfillRefusesBadInput(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 14, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		ctx := context.Background()
		job := Job{Name: "secondly", Schedule: "* * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		a := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, MaxBackfillSlots: 100}, job)
		at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
		for _, tc := range []struct {
			job  string
			p    BackfillParams
			want string
		}{
			{"nope", BackfillParams{From: at("2026-03-01T13:00:00Z"), To: at("2026-03-01T13:00:10Z"), By: "ops"}, "unknown job"},
			{job.Name, BackfillParams{From: at("2026-03-01T13:00:10Z"), To: at("2026-03-01T13:00:00Z"), By: "ops"}, "To 2026-03-01T13:00:00Z must be after From 2026-03-01T13:00:10Z"},
			{job.Name, BackfillParams{From: at("2026-03-01T13:00:00Z"), To: at("2026-03-01T15:00:00Z"), By: "ops"}, "is ahead of now"},
			{job.Name, BackfillParams{From: at("2026-03-01T13:00:00Z"), To: at("2026-03-01T13:10:00Z"), By: "ops"}, "more than 100 slots (Config.MaxBackfillSlots)"},
			{job.Name, BackfillParams{From: at("2026-03-01T13:00:00Z"), To: at("2026-03-01T13:00:10Z"), By: "ops", Rate: -1}, "Rate must be from 0"},
			{job.Name, BackfillParams{From: at("2026-03-01T13:00:00Z"), To: at("2026-03-01T13:00:10Z")}, "By"},
			{job.Name, BackfillParams{To: at("2026-03-01T13:00:10Z"), By: "ops"}, "From and To are required"},
		} {
			_, err := a.Backfill(ctx, tc.job, tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Backfill(%s, %+v) = %v; want an error containing %q", tc.job, tc.p, err, tc.want)
			}
			if _, err := a.BackfillPlan(ctx, tc.job, tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("BackfillPlan(%s, %+v) = %v; want an error containing %q", tc.job, tc.p, err, tc.want)
			}
		}
		if list, err := a.Backfills(ctx, store.BackfillListParams{}); err != nil || len(list) != 0 {
			t.Fatalf("backfills after the refusals = %+v, %v; want none", list, err)
		}
	})
}

// A backfill that meets an exclusion window or a paused job says so per
// slot and leaves those slots untouched (no row: a later backfill, once
// the job is resumed, runs them); cancelled, its driver claims no slot
// after.
func TestABackfillLeavesExcludedAndPausedSlotsAndStopsWhenCancelled(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 14, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		ctx := context.Background()
		var l originLedger
		at := func(min int) time.Time { return time.Date(2026, 3, 1, 12, min, 0, 0, time.UTC) }
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", Handler: l.handler,
			Exclude: []string{"2026-03-01T12:10Z/2026-03-01T12:30Z"}}
		a := c.start("a", 0, job)
		c.start("b", 0, job)
		p := BackfillParams{From: at(0), To: at(60), By: "ops"}
		plan, err := a.BackfillPlan(ctx, job.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := outcomes(plan), []string{BackfillRun, BackfillExcluded, BackfillExcluded, BackfillRun, BackfillRun, BackfillRun}; !slices.Equal(got, want) {
			t.Fatalf("plan = %v; want %v", got, want)
		}
		if _, err := a.SetEnabled(ctx, job.Name, ptr(false), "ops", "maintenance"); err != nil {
			t.Fatal(err)
		}
		if plan, err = a.BackfillPlan(ctx, job.Name, p); err != nil {
			t.Fatal(err)
		}
		if got, want := outcomes(plan), []string{BackfillPaused, BackfillExcluded, BackfillExcluded, BackfillPaused, BackfillPaused, BackfillPaused}; !slices.Equal(got, want) {
			t.Fatalf("plan while paused = %v; want %v", got, want)
		}
		b, err := a.Backfill(ctx, job.Name, p)
		if err != nil {
			t.Fatal(err)
		}
		c.advance(5*time.Second, time.Second)
		if b, err = a.GetBackfill(ctx, b.ID); err != nil || b.State != store.BackfillDone || b.Counts != (store.BackfillCounts{Paused: 4, Excluded: 2}) {
			t.Fatalf("backfill while paused = %+v, %v; want done, 4 paused, 2 excluded", b, err)
		}
		for min := 0; min < 60; min += 10 {
			if got := l.ran(at(min)); len(got) != 0 {
				t.Errorf("slot 12:%02d ran %v while paused or excluded", min, got)
			}
			if _, err := c.open(t).SlotGet(ctx, job.Name, at(min)); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("slot 12:%02d has a row (%v); want none written", min, err)
			}
		}

		// Resumed, a backfill at one slot a second is cancelled after its
		// first: nothing runs after the cancel.
		if _, err := a.SetEnabled(ctx, job.Name, ptr(true), "ops", ""); err != nil {
			t.Fatal(err)
		}
		p.Rate = 1
		if b, err = a.Backfill(ctx, job.Name, p); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 30 && len(l.ran(at(0))) == 0; i++ {
			c.advance(100*time.Millisecond, 100*time.Millisecond)
		}
		cancelled, err := a.CancelBackfill(ctx, b.ID, "ops")
		if err != nil || cancelled.State != store.BackfillCancelled || cancelled.CancelledBy != "ops" {
			t.Fatalf("CancelBackfill = %+v, %v; want cancelled by ops", cancelled, err)
		}
		c.advance(10*time.Second, time.Second)
		ran := 0
		for min := 0; min < 60; min += 10 {
			ran += len(l.ran(at(min)))
		}
		if ran > 2 || len(l.ran(at(0))) != 1 {
			t.Fatalf("%d slots ran after the cancel of a backfill at one a second (12:00 %v); want 12:00, and at most the one in flight", ran, l.ran(at(0)))
		}
		if _, err := a.CancelBackfill(ctx, b.ID, "ops"); !errors.Is(err, ErrBackfillEnded) {
			t.Fatalf("a second cancel = %v; want ErrBackfillEnded", err)
		}
	})
}

// told keeps a store's notices behind an intercepted store, which hides
// them (see intercepted).
type told struct {
	*intercepted
	notices store.Notices
}

func (t told) Listen(ctx context.Context, fn func(store.Notice)) error {
	return t.notices.Listen(ctx, fn)
}

// On PostgreSQL, whose replicas are told of each backfill created, a
// replica looks for backfills once a minute while none of its jobs' runs,
// not every ten seconds (at ten replicas that was two statements a slot
// of a job every 2 s), and a backfill written straight into the store, as
// the CLI's direct mode writes it, still starts at once: within two
// seconds on the cluster's clock, not the minute to the next look.
func TestBackfillsAreToldRatherThanLookedForOnPostgres(t *testing.T) {
	eachStoreFrom(t, time.Date(2026, 3, 1, 14, 0, 30, 0, time.UTC), func(t *testing.T, c *cluster) {
		if c.kind != "postgres" {
			t.Skip("only PostgreSQL tells the replicas of a backfill")
		}
		var l originLedger
		job := Job{Name: "tenminutely", Schedule: "*/10 * * * *", Handler: l.handler}
		raw := c.open(t)
		st := intercept(raw)
		a := c.startWith(Config{Owner: "a", Store: told{st, raw.(store.Notices)}, Clock: offsetClock{c.db, 0}}, job)
		wait.For(t, 10*time.Second, a.loop.peers.Hearing, func() string { return "replica a hearing the notices" })

		st.reset()
		c.advance(3*time.Minute, 10*time.Second)
		if n := st.count("BackfillList"); n > 4 {
			t.Errorf("%d looks for backfills in 3 minutes with none running, want one a minute", n)
		}

		at := func(min int) time.Time { return time.Date(2026, 3, 1, 12, min, 0, 0, time.UTC) }
		b, err := raw.(store.Backfills).BackfillCreate(context.Background(), store.BackfillCreateParams{
			Job: job.Name, From: at(0), To: at(30), Total: 3, By: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		// Told, the replica looks at its next tick, whenever the last look.
		wait.For(t, 10*time.Second, func() bool {
			a.backfiller.mu.Lock()
			defer a.backfiller.mu.Unlock()
			return a.backfiller.nextPoll.IsZero()
		}, func() string { return fmt.Sprintf("replica a told of backfill %d", b.ID) })
		c.advance(2*time.Second, time.Second)
		for _, min := range []int{0, 10, 20} {
			if got := l.ran(at(min)); !slices.Equal(got, []Origin{OriginBackfill}) {
				t.Errorf("slot 12:%02d ran %v, want once, by the backfill", min, got)
			}
		}
	})
}
