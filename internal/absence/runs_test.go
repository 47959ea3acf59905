package absence_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// runs builds run rows, newest first, from a compact form: "s" a skip,
// "p" a slot skipped while the job was paused, "ok" a run of 10s, "m" a
// manual run; slots a minute apart, the newest at 12:09.
func runs(kinds ...string) []store.Run {
	out := make([]store.Run, len(kinds))
	for i, k := range kinds {
		slot := at("12:09:00").Add(-time.Duration(i) * time.Minute)
		r := store.Run{ID: int64(100 - i), Job: "sync", Slot: slot, StartedAt: slot, FinishedAt: slot.Add(10 * time.Second), Owner: "a", Success: true}
		switch k {
		case "s":
			r.Skipped, r.Reason, r.FinishedAt = true, "already_executing", slot
			r.Logs = []string{"skipped: lease job:sync held by b at generation 3"}
		case "p":
			r.Skipped, r.Reason, r.FinishedAt = true, string(store.ClaimPaused), slot
			r.Logs = []string{store.PausedSkipLine(true)}
		case "m":
			r.Manual, r.Slot = true, time.Time{}
		}
		out[i] = r
	}
	return out
}

func TestSkipStreak(t *testing.T) {
	t.Parallel()
	streak := func(count string) got {
		return got{store.AlertSkipStreak, "sync", map[string]string{"count": count, "first_slot": "", "reason": "already_executing"}}
	}
	for _, tc := range []struct {
		name  string
		runs  []store.Run
		limit int
		want  []got
	}{
		{name: "no runs", limit: 3},
		{name: "three skips: not more than three", runs: runs("s", "s", "s", "ok"), limit: 3},
		{name: "four skips", runs: runs("s", "s", "s", "s", "ok"), limit: 3, want: []got{streak("4")}},
		{name: "broken by a run", runs: runs("s", "s", "ok", "s", "s", "s"), limit: 3},
		{name: "ended by a run", runs: runs("ok", "s", "s", "s", "s", "s"), limit: 3},
		{name: "manual runs neither make nor break a streak", runs: runs("s", "m", "s", "m", "s", "s", "ok"), limit: 3, want: []got{streak("4")}},
		// A paused job skips every slot by design: it did not outgrow
		// its interval.
		{name: "slots skipped while paused are no streak", runs: runs("p", "p", "p", "p", "p", "ok"), limit: 3},
		{name: "slots skipped while paused neither make nor break a streak", runs: runs("s", "p", "s", "p", "p", "s", "s", "ok"), limit: 3, want: []got{streak("4")}},
		{name: "every run read is a skip", runs: runs("s", "s", "s", "s"), limit: 3, want: []got{streak("4+")}},
		{name: "off", runs: runs("s", "s", "s", "s", "s"), limit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(at("12:10:00"), []store.Replica{replica("a", at("09:00:00"), job("sync", "* * * * *"))},
				map[string]absence.JobData{"sync": {Runs: tc.runs}})
			thr := th
			thr.SkipStreak = tc.limit
			check(t, s, thr, fillFirstSlot(tc.want, tc.runs)...)
		})
	}
}

// fillFirstSlot sets the expected first_slot detail: the oldest skip of the
// leading streak.
func fillFirstSlot(want []got, rs []store.Run) []got {
	for _, w := range want {
		var first time.Time
		for _, r := range rs {
			if r.Manual || r.Reason == string(store.ClaimPaused) {
				continue
			}
			if !r.Skipped {
				break
			}
			first = r.Slot
		}
		w.Details["first_slot"] = first.Format(time.RFC3339)
	}
	return want
}

func TestSlowRun(t *testing.T) {
	t.Parallel()
	run := func(slot string, took time.Duration) store.Run {
		return store.Run{ID: 5, Job: "sync", Slot: at(slot), StartedAt: at(slot).Add(time.Second), FinishedAt: at(slot).Add(time.Second + took), Success: true}
	}
	slow := func(interval string) got {
		return got{store.AlertSlowRun, "sync", map[string]string{"interval": interval}}
	}
	for _, tc := range []struct {
		name  string
		sched string
		runs  []store.Run
		want  []got
	}{
		{name: "no runs", sched: "*/10 * * * *"},
		{name: "half the interval exactly", sched: "*/10 * * * *", runs: []store.Run{run("12:00:00", 5*time.Minute)}},
		{name: "more than half", sched: "*/10 * * * *", runs: []store.Run{run("12:00:00", 5*time.Minute+time.Second)}, want: []got{slow("10m0s")}},
		{name: "the latest run decides", sched: "*/10 * * * *",
			runs: []store.Run{run("12:00:00", time.Minute), run("11:50:00", 9*time.Minute)}},
		{name: "skips and manual runs are not judged", sched: "*/10 * * * *",
			runs: []store.Run{{ID: 9, Job: "sync", Slot: at("12:10:00"), Skipped: true}, {ID: 8, Job: "sync", Manual: true, StartedAt: at("12:05:00"), FinishedAt: at("12:09:00")}, run("12:00:00", 6*time.Minute)},
			want: []got{slow("10m0s")}},
		// An attempt found dead: its row ends when its lease expired (the
		// TTL after its last renewal), not when its work did. The run
		// before it decides.
		{name: "an interrupted attempt is not judged", sched: "*/10 * * * *",
			runs: []store.Run{{ID: 9, Job: "sync", Slot: at("12:10:00"), StartedAt: at("12:10:00"), FinishedAt: at("12:16:30"), Reason: store.ReasonInterrupted},
				run("12:00:00", time.Minute)}},
		// An uneven schedule: the interval is the gap to the next slot
		// after the run's own.
		{name: "uneven: short gap after 12:00", sched: "0,5,30 12 * * *", runs: []store.Run{run("12:00:00", 3*time.Minute)}, want: []got{slow("5m0s")}},
		{name: "uneven: long gap after 12:05", sched: "0,5,30 12 * * *", runs: []store.Run{run("12:05:00", 3*time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(at("12:20:00"), []store.Replica{replica("a", at("09:00:00"), job("sync", tc.sched))},
				map[string]absence.JobData{"sync": {Runs: tc.runs}})
			check(t, s, th, tc.want...)
		})
	}
}
