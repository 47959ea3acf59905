package absence_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// The messages are what an operator reads in logs, the webhook and
// `cronfence check`: whole sentences naming the job, the slot or holder,
// and the threshold crossed.
func TestMessages(t *testing.T) {
	t.Parallel()
	now := at("12:10:00")
	daily := job("fechamento", "0 2 * * *", deadline(2*time.Hour), timeout(time.Hour))
	skewed := replica("b", at("09:00:00"), daily)
	skewed.ClockOffset = -3*time.Minute - 400*time.Millisecond
	s := snapshot(now, []store.Replica{replica("a", at("01:00:00"), daily), skewed}, map[string]absence.JobData{
		"fechamento": {
			DeadlineSlot: store.Slot{Job: "fechamento", Slot: at("02:00:00"), Status: store.SlotFailed, Attempts: 3, Owner: "a"},
			Lease: store.Lease{Name: "job:fechamento", Owner: "a", Generation: 42,
				AcquiredAt: at("10:00:00"), RenewedAt: at("12:09:50"), ExpiresAt: at("12:11:20")},
		},
	})
	want := map[store.AlertKind]string{
		store.AlertClockOffset:    `replica b's clock is 3m0s behind the database clock (threshold 2s)`,
		store.AlertDeadlineMissed: `job "fechamento": slot 2026-03-01T02:00:00Z was not completed within its deadline of 2h0m0s: it failed (attempt 3, on a)`,
		store.AlertLeaseStuck:     `job "fechamento": lease job:fechamento held by a (generation 42) for 2h10m0s, longer than its timeout of 1h0m0s`,
	}
	res := absence.Evaluate(s, th)
	if len(res.Alerts) != len(want) {
		t.Fatalf("%d alerts, want %d: %+v", len(res.Alerts), len(want), res.Alerts)
	}
	for _, a := range res.Alerts {
		if a.Message != want[a.Kind] {
			t.Errorf("%s message:\n got %s\nwant %s", a.Kind, a.Message, want[a.Kind])
		}
	}
}

// A count of one reads in the singular: a job whose slots have one
// attempt each (the default) failed "after 1 attempt", and with a
// threshold of one it is "its last slot" that failed.
func TestFailingMessageCountsInTheSingular(t *testing.T) {
	t.Parallel()
	runs := attemptRuns("x1", "ok1")
	for i := range runs {
		runs[i].Job = "export"
	}
	s := snapshot(at("12:10:00"), []store.Replica{replica("a", at("09:00:00"), job("export", "* * * * *", func(j *store.ReplicaJob) { j.MaxAttempts = 1 }))},
		map[string]absence.JobData{"export": {Runs: runs}})
	thr := th
	thr.Failing = 1
	want := `job "export": its last slot ended failed (the latest, 2026-03-01T12:09:00Z, after 1 attempt: exit status 1 on 2026-03-01T12:09:00Z)`
	res := absence.Evaluate(s, thr)
	if len(res.Alerts) != 1 || res.Alerts[0].Message != want {
		t.Fatalf("alerts %+v\nwant one saying %s", res.Alerts, want)
	}
}
