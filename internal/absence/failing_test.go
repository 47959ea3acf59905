package absence_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

// attemptRuns builds run rows, newest first, from a compact form: one
// word per row, "ok" or "x" (failed) followed by its attempt number, "s" a
// skip, "m" a manual run; a row whose attempt is 1 starts the next slot
// back, slots a minute apart, the newest at 12:09.
func attemptRuns(kinds ...string) []store.Run {
	out := make([]store.Run, len(kinds))
	slot := at("12:09:00")
	for i, k := range kinds {
		r := store.Run{ID: int64(100 - i), Job: "sync", Slot: slot, StartedAt: slot, FinishedAt: slot.Add(time.Second), Owner: "a"}
		switch {
		case k == "s":
			r.Skipped, r.Success, r.Reason = true, true, "already_executing"
		case k == "m":
			r.Manual, r.Slot, r.Success = true, time.Time{}, true
		default:
			r.Success = strings.HasPrefix(k, "ok")
			r.Attempt = int(k[len(k)-1] - '0')
			if !r.Success {
				r.Error = "exit status 1 on " + ts(slot)
			}
		}
		out[i] = r
		if k == "s" || r.Attempt == 1 {
			slot = slot.Add(-time.Minute)
		}
	}
	return out
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func TestFailing(t *testing.T) {
	t.Parallel()
	failing := func(count, latest, attempts string) got {
		return got{store.AlertFailing, "sync", map[string]string{"count": count, "latest_slot": latest, "attempts": attempts}}
	}
	for _, tc := range []struct {
		name  string
		runs  []store.Run
		limit int
		want  []got
	}{
		{name: "no runs", limit: 3},
		{name: "two failed slots: fewer than three", runs: attemptRuns("x3", "x2", "x1", "x3", "x2", "x1", "ok1"), limit: 3},
		{name: "three failed slots", runs: attemptRuns("x3", "x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1", "ok1"), limit: 3,
			want: []got{failing("3", "2026-03-01T12:09:00Z", "3")}},
		{name: "a slot that succeeded on a retry breaks the streak", runs: attemptRuns("x3", "x2", "x1", "x3", "x2", "x1", "ok2", "x1", "x3", "x2", "x1"), limit: 3},
		{name: "resolved by the newest slot's success", runs: attemptRuns("ok1", "x3", "x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1"), limit: 3},
		{name: "a newest slot with attempts left is still retried: neither counts nor breaks",
			runs: attemptRuns("x1", "x3", "x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1", "ok1"), limit: 3,
			want: []got{failing("3", "2026-03-01T12:08:00Z", "3")}},
		{name: "not yet three: the newest slot is still retried",
			runs: attemptRuns("x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1", "ok1"), limit: 3},
		{name: "a slot whose retry the next slot overtook ended failed", runs: attemptRuns("x1", "x1", "x1", "x2", "x1", "ok1"), limit: 3,
			want: []got{failing("3", "2026-03-01T12:08:00Z", "1")}},
		{name: "a skip is a later slot", runs: attemptRuns("s", "x1", "x1", "x2", "x1", "ok1"), limit: 3,
			want: []got{failing("3", "2026-03-01T12:08:00Z", "1")}},
		{name: "skips and manual runs neither make nor break a streak",
			runs: attemptRuns("x3", "x2", "x1", "m", "s", "x3", "x2", "x1", "m", "x3", "x2", "x1", "ok1"), limit: 3,
			want: []got{failing("3", "2026-03-01T12:09:00Z", "3")}},
		{name: "every row read failed", runs: attemptRuns("x3", "x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1"), limit: 3,
			want: []got{failing("3+", "2026-03-01T12:09:00Z", "3")}},
		{name: "off", runs: attemptRuns("x3", "x2", "x1", "x3", "x2", "x1", "x3", "x2", "x1"), limit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(at("12:10:00"), []store.Replica{replica("a", at("09:00:00"), job("sync", "* * * * *"))},
				map[string]absence.JobData{"sync": {Runs: tc.runs}})
			thr := th
			thr.Failing = tc.limit
			check(t, s, thr, tc.want...)
		})
	}
}

func TestFailingQuotesALongErrorsHeadAndTail(t *testing.T) {
	t.Parallel()
	runs := attemptRuns("x1", "x1", "x1")
	runs[0].Error = "command: sh -c " + strings.Repeat("é", 400) + " exited with status 3"
	s := snapshot(at("12:10:00"), []store.Replica{replica("a", at("09:00:00"), job("sync", "* * * * *", func(j *store.ReplicaJob) { j.MaxAttempts = 1 }))},
		map[string]absence.JobData{"sync": {Runs: runs}})
	thr := th
	thr.Failing = 3
	res := check(t, s, thr, got{store.AlertFailing, "sync", nil})
	quoted := res.Alerts[0].Details["last_error"]
	if len(quoted) > 304 || !strings.Contains(quoted, "é…é") || !strings.HasPrefix(quoted, "command: sh -c éé") ||
		!strings.HasSuffix(quoted, "éé exited with status 3") || strings.ContainsRune(quoted, '\uFFFD') {
		t.Fatalf("last_error = %q (%d bytes); want its head and tail, its middle cut at character boundaries, marked", quoted, len(quoted))
	}
}
