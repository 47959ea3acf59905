package absence_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

func TestDeadlineMissed(t *testing.T) {
	t.Parallel()
	every5 := job("report", "*/5 * * * *", deadline(2*time.Minute))
	yes, no := true, false
	claim := func(slot string, st store.SlotStatus) store.Slot {
		return store.Slot{Job: "report", Slot: at(slot), Status: st, Owner: "a", Attempts: 1}
	}
	missed := func(slot, status string) got {
		return got{store.AlertDeadlineMissed, "report", map[string]string{"slot": at(slot).Format(time.RFC3339), "status": status}}
	}
	for _, tc := range []struct {
		name     string
		now      time.Time
		replicas []store.Replica
		states   []store.JobState
		claim    store.Slot // of the slot the check judges
		want     []got
	}{
		{name: "deadline of 12:00 not passed yet, 11:55 completed", now: at("12:01:59"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("11:55:00", store.SlotCompleted)},
		{name: "12:00 never claimed", now: at("12:02:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			want:     []got{missed("12:00:00", "missing")}},
		{name: "12:00 still running", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("12:00:00", store.SlotRunning),
			want:     []got{missed("12:00:00", "running")}},
		{name: "12:00 failed", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("12:00:00", store.SlotFailed),
			want:     []got{missed("12:00:00", "failed")}},
		{name: "12:00 skipped", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("12:00:00", store.SlotSkipped),
			want:     []got{missed("12:00:00", "skipped")}},
		{name: "12:00 completed late but completed", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("12:00:00", store.SlotCompleted)},
		{name: "a newer slot passed its deadline: judged instead of the old one", now: at("12:07:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			claim:    claim("12:05:00", store.SlotCompleted)},
		{name: "slot before the first registration", now: at("12:03:00"),
			replicas: []store.Replica{replica("a", at("12:00:30"), every5)}},
		{name: "slot at the very instant of the first registration", now: at("12:03:00"),
			replicas: []store.Replica{replica("a", at("12:00:00"), every5)}},
		{name: "a stale replica registered it earlier", now: at("12:03:00"),
			replicas: []store.Replica{
				heartbeat(replica("old", at("11:00:00"), every5), at("11:30:00")),
				replica("new", at("12:00:30"), every5),
			},
			want: []got{missed("12:00:00", "missing")}},
		{name: "paused by an override", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), every5)},
			states:   []store.JobState{{Job: "report", EnabledOverride: &no}}},
		{name: "declared disabled", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), job("report", "*/5 * * * *", deadline(2*time.Minute), func(j *store.ReplicaJob) { j.Disabled = true }))}},
		{name: "declared disabled, resumed by an override", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), job("report", "*/5 * * * *", deadline(2*time.Minute), func(j *store.ReplicaJob) { j.Disabled = true }))},
			states:   []store.JobState{{Job: "report", EnabledOverride: &yes}},
			want:     []got{missed("12:00:00", "missing")}},
		{name: "no deadline", now: at("12:04:00"),
			replicas: []store.Replica{replica("a", at("11:00:00"), job("report", "*/5 * * * *"))}},
		{name: "only a stale replica registers it", now: at("12:04:00"),
			replicas: []store.Replica{heartbeat(replica("a", at("11:00:00"), every5), at("12:00:00"))},
			want:     []got{{store.AlertOrphanJob, "report", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(tc.now, tc.replicas, map[string]absence.JobData{"report": {DeadlineSlot: tc.claim}})
			s.States = tc.states
			check(t, s, th, tc.want...)
		})
	}
}

// The slot judged follows the job's zone: 02:00 in São Paulo (UTC-3, no
// DST in 2026) is 05:00 UTC, due by 06:00 UTC with a 1h deadline.
func TestDeadlineSlotInZone(t *testing.T) {
	t.Parallel()
	j := job("fechamento", "0 2 * * *", deadline(time.Hour), func(j *store.ReplicaJob) { j.TimeZone = "America/Sao_Paulo" })
	day := time.Date(2026, 9, 25, 0, 0, 0, 0, time.UTC)
	started := day.Add(-48 * time.Hour)
	for _, tc := range []struct {
		now  time.Time
		want time.Time
	}{
		{day.Add(5*time.Hour + 59*time.Minute), day.Add(-24*time.Hour + 5*time.Hour)}, // yesterday's
		{day.Add(6 * time.Hour), day.Add(5 * time.Hour)},
		{day.Add(23 * time.Hour), day.Add(5 * time.Hour)},
	} {
		reg := absence.NewRegistry([]store.Replica{heartbeat(replica("a", started, j), tc.now)}, tc.now, th.ReplicaStale, nil)
		if err := reg.Jobs["fechamento"].ScheduleErr; err != nil {
			t.Fatal(err)
		}
		if got := reg.Jobs["fechamento"].DeadlineSlot(tc.now); !got.Equal(tc.want) {
			t.Errorf("at %s: deadline slot %s, want %s", tc.now, got, tc.want)
		}
	}
}

// A slot older than the history's retention may have been pruned (pruning
// keeps each job's latest slot only): its missing row says nothing. A
// monthly job with a 1h deadline judges last month's slot for the first
// hour of the new one, and that slot, a month old, is pruned once the new
// one exists; it was judged, and alerted on if missed, while it was young.
// An open alert of it is left open (not judged), none is raised.
func TestDeadlineOfAPrunedSlotIsNotJudged(t *testing.T) {
	t.Parallel()
	monthly := job("close", "0 0 1 * *", deadline(time.Hour))
	now := time.Date(2026, 12, 1, 0, 30, 0, 0, time.UTC) // last month's slot is judged until 01:00
	started := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	week := 7 * 24 * time.Hour
	pruned := absence.JobData{} // the 1 November row is gone
	for _, tc := range []struct {
		name      string
		retention time.Duration
		want      []got
		judged    bool
	}{
		{"pruned with a 7-day retention", week, nil, false},
		{"never pruned (retention off)", 0, []got{{store.AlertDeadlineMissed, "close", map[string]string{"slot": "2026-11-01T00:00:00Z", "status": "missing"}}}, true},
		{"a 60-day retention keeps it: missing means missed", 60 * 24 * time.Hour, []got{{store.AlertDeadlineMissed, "close", map[string]string{"slot": "2026-11-01T00:00:00Z", "status": "missing"}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			thr := th
			thr.Retention = tc.retention
			s := snapshot(now, []store.Replica{replica("a", started, monthly)}, map[string]absence.JobData{"close": pruned})
			res := check(t, s, thr, tc.want...)
			if got := res.Judged(store.AlertDeadlineMissed, "close"); got != tc.judged {
				t.Errorf("judged %v, want %v", got, tc.judged)
			}
		})
	}
}
