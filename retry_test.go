package cronfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/store"
)

// attempts records every attempt a handler made, and fails those its
// policy says to.
type attempts struct {
	mu   sync.Mutex
	db   clock.Clock
	fail func(attempt int) bool
	made []attemptMade
}

type attemptMade struct {
	slot    time.Time
	attempt int
	owner   string
	origin  Origin
	at      time.Time // by the database clock
}

func (a *attempts) handler(_ context.Context, run *Run) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.made = append(a.made, attemptMade{run.Slot, run.Attempt, run.Owner, run.Origin, a.db.Now()})
	if a.fail(run.Attempt) {
		return fmt.Errorf("attempt %d failed", run.Attempt)
	}
	return nil
}

// of returns the attempts made for slot, in order.
func (a *attempts) of(slot time.Time) []attemptMade {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []attemptMade
	for _, m := range a.made {
		if m.slot.Equal(slot) {
			out = append(out, m)
		}
	}
	return out
}

// slotRuns returns the run rows of job's slot, oldest first.
func slotRuns(t *testing.T, s store.Store, job string, slot time.Time) []store.Run {
	t.Helper()
	runs, err := s.RunList(context.Background(), store.RunListParams{Job: job, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Run
	for _, r := range slices.Backward(runs) {
		if r.Slot.Equal(slot) {
			out = append(out, r)
		}
	}
	return out
}

// A handler that fails is retried after the job's backoff, doubling, each
// attempt its own run row with its number, once across three replicas,
// until an attempt succeeds.
func TestAFailedAttemptIsRetriedWithBackoffUntilItSucceeds(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(attempt int) bool { return attempt < 3 }}
		job := Job{Name: "flaky", Schedule: "0 * * * * *", MaxAttempts: 3, RetryBackoff: 10 * time.Second, Handler: a.handler}
		for i := range 3 {
			c.start(fmt.Sprintf("replica-%d", i), 0, job)
		}
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute+45*time.Second, time.Second)

		made := a.of(slot)
		if len(made) != 3 {
			t.Fatalf("attempts of slot %s = %+v, want 3: two failed, then one that succeeded", slot, made)
		}
		// The first at the slot, the second 10s after the first failed,
		// the third 20s after the second.
		wantAt := []time.Time{slot, slot.Add(10 * time.Second), slot.Add(30 * time.Second)}
		wantOrigin := []Origin{OriginScheduled, OriginRetry, OriginRetry}
		for i, m := range made {
			if m.attempt != i+1 || m.origin != wantOrigin[i] || !m.at.Equal(wantAt[i]) {
				t.Errorf("attempt %d = %+v; want number %d, origin %s, at %s", i+1, m, i+1, wantOrigin[i], wantAt[i].Format(time.TimeOnly))
			}
		}
		s := c.replicas[0].e.Store
		runs := slotRuns(t, s, "flaky", slot)
		if len(runs) != 3 {
			t.Fatalf("run rows of the slot = %+v, want one per attempt", runs)
		}
		for i, r := range runs {
			wantOK := i == 2
			if r.Attempt != i+1 || r.Success != wantOK || (!wantOK && r.Error != fmt.Sprintf("attempt %d failed", i+1)) {
				t.Errorf("run row %d = attempt %d success %v error %q; want attempt %d success %v", i, r.Attempt, r.Success, r.Error, i+1, wantOK)
			}
		}
		if !strings.Contains(strings.Join(runs[1].Logs, "\n"), "Retrying slot") {
			t.Errorf("the retry's logs %q do not say it retries", runs[1].Logs)
		}
		if sl, err := s.SlotGet(context.Background(), "flaky", slot); err != nil || sl.Status != store.SlotCompleted || sl.Attempts != 3 {
			t.Fatalf("slot = %+v, %v; want completed after 3 attempts", sl, err)
		}
		c.wantNeverDown()
	})
}

// A slot whose every attempt failed ends failed after MaxAttempts, and the
// job's next slot runs on time, with attempts of its own.
func TestASlotWhoseAttemptsAreSpentEndsFailed(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(int) bool { return true }}
		job := Job{Name: "broken", Schedule: "0 * * * * *", MaxAttempts: 3, RetryBackoff: 5 * time.Second, Handler: a.handler}
		for i := range 2 {
			c.start(fmt.Sprintf("replica-%d", i), 0, job)
		}
		first := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(2*time.Minute+20*time.Second, time.Second)

		for _, slot := range []time.Time{first, first.Add(time.Minute)} {
			made := a.of(slot)
			if len(made) != 3 || made[0].at != slot || made[1].at != slot.Add(5*time.Second) || made[2].at != slot.Add(15*time.Second) {
				t.Fatalf("attempts of slot %s = %+v; want 3, at +0s, +5s and +15s", slot.Format(time.TimeOnly), made)
			}
		}
		s := c.replicas[0].e.Store
		if sl, err := s.SlotGet(context.Background(), "broken", first); err != nil || sl.Status != store.SlotFailed || sl.Attempts != 3 {
			t.Fatalf("slot = %+v, %v; want failed after 3 attempts", sl, err)
		}
		if runs := slotRuns(t, s, "broken", first); len(runs) != 3 || runs[2].Success {
			t.Fatalf("run rows = %+v, want 3 failed", runs)
		}
	})
}

// A retry is never made at or after the job's next slot: the slot ends
// failed, and the next one starts on time, not behind a retry.
func TestARetryNeverPassesTheNextSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(int) bool { return true }}
		job := Job{Name: "quick", Schedule: "*/15 * * * * *", MaxAttempts: 5, RetryBackoff: 5 * time.Second, Handler: a.handler}
		c.start("a", 0, job)
		c.start("b", 0, job)
		first := c.db.Now().Add(15 * time.Second)
		c.advance(31*time.Second, time.Second)

		// +0s fails; the retry after 5s fails; one after 10s more would
		// come at +15s, the next slot's instant: not made.
		if made := a.of(first); len(made) != 2 || made[1].at != first.Add(5*time.Second) {
			t.Fatalf("attempts of the first slot = %+v; want 2, the second 5s after", made)
		}
		next := a.of(first.Add(15 * time.Second))
		if len(next) == 0 || next[0].attempt != 1 || next[0].at != first.Add(15*time.Second) {
			t.Fatalf("attempts of the next slot = %+v; want its first on time", next)
		}
		if sl, err := c.replicas[0].e.Store.SlotGet(context.Background(), "quick", first); err != nil || sl.Status != store.SlotFailed || sl.Attempts != 2 {
			t.Fatalf("first slot = %+v, %v; want failed after 2 attempts", sl, err)
		}
	})
}

// MaxAttempts 1 turns retries off.
func TestOneAttemptMeansNoRetry(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(int) bool { return true }}
		job := Job{Name: "once", Schedule: "0 * * * * *", MaxAttempts: 1, RetryBackoff: time.Second, Handler: a.handler}
		c.start("a", 0, job)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute+30*time.Second, time.Second)
		if made := a.of(slot); len(made) != 1 {
			t.Fatalf("attempts = %+v, want 1", made)
		}
	})
}

func TestRetryDelayDoublesAndSaturates(t *testing.T) {
	for _, tc := range []struct {
		first   time.Duration
		attempt int
		want    time.Duration
	}{
		{10 * time.Second, 1, 10 * time.Second},
		{10 * time.Second, 2, 20 * time.Second},
		{10 * time.Second, 4, 80 * time.Second},
		{time.Hour, 200, time.Hour << 21}, // doubled until past 1<<62 ns, then left
	} {
		if got := retryDelay(tc.first, tc.attempt); got != tc.want || got <= 0 {
			t.Errorf("retryDelay(%s, %d) = %s, want %s", tc.first, tc.attempt, got, tc.want)
		}
	}
}

func TestRetryBackoffMustNotBeNegative(t *testing.T) {
	_, err := Job{Name: "j", Schedule: "@hourly", Handler: func(context.Context, *Run) error { return nil }, RetryBackoff: -time.Second}.prepare()
	if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "RetryBackoff must not be negative") {
		t.Fatalf("err = %v", err)
	}
}

// The retry of a replica that stops (a deploy) or dies during the backoff
// is not lost: another replica finds the slot open to a retry and retries
// it once the backoff has passed, before the job's next slot.
func TestARetryOutlivesTheReplicaWhoseAttemptFailed(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(attempt int) bool { return attempt == 1 }}
		job := Job{Name: "handover", Schedule: "0 * * * * *", MaxAttempts: 2, RetryBackoff: 10 * time.Second, Handler: a.handler}
		for _, name := range []string{"a", "b", "c"} {
			c.start(name, 0, job)
		}
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Second)
		first := a.of(slot)
		if len(first) != 1 {
			t.Fatalf("attempts at the slot = %+v, want the first", first)
		}
		for _, r := range c.replicas {
			if r.e.cfg.Owner == first[0].owner {
				c.stop(r) // gone during the backoff, its retry armed
			}
		}
		c.advance(50*time.Second, time.Second)

		made := a.of(slot)
		if len(made) != 2 {
			t.Fatalf("attempts = %+v; want the retry made by another replica", made)
		}
		retry := made[1]
		if retry.owner == first[0].owner || retry.attempt != 2 || retry.origin != OriginRetry ||
			retry.at.Before(slot.Add(10*time.Second)) || !retry.at.Before(slot.Add(time.Minute)) {
			t.Fatalf("retry = %+v; want attempt 2 by another replica, after the 10s backoff and before the next slot", retry)
		}
		if sl, err := c.replicas[0].e.Store.SlotGet(context.Background(), "handover", slot); err != nil || sl.Status != store.SlotCompleted {
			t.Fatalf("slot = %+v, %v; want completed by the retry", sl, err)
		}
	})
}

// A failed slot left open to a retry whose job is paused meanwhile is
// tried about once by each replica, not again at every scan until the
// job's next slot (an hour here: 7,200 refused claims a replica on
// SQLite, whose replicas scan every ResumeEvery; 60 in these 30 seconds
// before the fix).
func TestARetryRefusedIsNotTriedAgainAtEveryScan(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := &attempts{db: c.db, fail: func(int) bool { return true }}
		job := Job{Name: "hourly", Schedule: "0 * * * *", MaxAttempts: 3, RetryBackoff: 10 * time.Second, Handler: a.handler}
		var mu sync.Mutex
		refused := map[string]int{}
		observer := ObserverFunc(func(e Event) {
			if ce, ok := e.(ClaimEvent); ok && ce.Origin == OriginRetry && !ce.Won {
				mu.Lock()
				refused[string(ce.Refusal)]++
				mu.Unlock()
			}
		})
		var replicas []*Scheduler
		for _, name := range []string{"a", "b"} {
			replicas = append(replicas, c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: -1, Observer: observer}, job))
		}
		// To the slot at 13:00: the hour before it has nothing to fire, so
		// it passes a minute a step (in seconds it was 3,600 settles a
		// replica), and the last minute a second a step, as a slot is met.
		c.advance(time.Hour-time.Minute-c.db.Now().Sub(c.db.Now().Truncate(time.Hour)), time.Minute)
		c.advance(time.Minute, time.Second)
		if made := a.of(c.db.Now().Truncate(time.Hour)); len(made) != 1 {
			t.Fatalf("attempts at the slot: %+v, want the first", made)
		}
		if _, err := replicas[0].SetEnabled(context.Background(), "hourly", new(false), "ops", "paused during the backoff"); err != nil {
			t.Fatal(err)
		}
		c.advance(30*time.Second, time.Second) // a scan of each replica at every step, on SQLite
		mu.Lock()
		defer mu.Unlock()
		// Once a replica, and the failed replica's own timer besides (its
		// timer's claim and its scan's may be in flight together).
		if n := refused[string(store.ClaimPaused)]; n == 0 || n > 4 {
			t.Fatalf("refused retries %v; want the paused retry tried about once a replica, not at every scan", refused)
		}
		if made := a.of(c.db.Now().Truncate(time.Hour)); len(made) != 1 {
			t.Fatalf("attempts %+v: a paused job's slot was retried", made)
		}
	})
}
