package absence_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

func TestConfigDrift(t *testing.T) {
	t.Parallel()
	v1 := job("sync", "*/5 * * * *")
	v2 := job("sync", "*/10 * * * *")
	v1Longer := job("sync", "*/5 * * * *", timeout(time.Hour))
	now := at("12:00:00")
	for _, tc := range []struct {
		name     string
		replicas []store.Replica
		want     []got
	}{
		{name: "all agree", replicas: []store.Replica{replica("a", at("09:00:00"), v1), replica("b", at("09:00:00"), v1), replica("c", at("09:00:00"), v1)}},
		{name: "one schedule differs", replicas: []store.Replica{replica("a", at("09:00:00"), v1), replica("b", at("09:00:00"), v2), replica("c", at("09:00:00"), v1)},
			want: []got{{store.AlertConfigDrift, "sync", map[string]string{
				"a": `hash=` + v1.Hash + ` schedule="*/5 * * * *"`, "b": `hash=` + v2.Hash + ` schedule="*/10 * * * *"`, "differences": "schedule",
			}}}},
		{name: "same schedule, another setting differs", replicas: []store.Replica{replica("a", at("09:00:00"), v1), replica("b", at("09:00:00"), v1Longer)},
			want: []got{{store.AlertConfigDrift, "sync", map[string]string{"differences": "timeout"}}}},
		{name: "the odd replica is stale", replicas: []store.Replica{replica("a", at("09:00:00"), v1), heartbeat(replica("b", at("09:00:00"), v2), now.Add(-31*time.Second))}},
		{name: "a replica without the job is no drift", replicas: []store.Replica{replica("a", at("09:00:00"), v1), replica("b", at("09:00:00"))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, snapshot(now, tc.replicas, nil), th, tc.want...)
		})
	}
}

// During drift the newest replica's settings are judged: the configuration
// being rolled out.
func TestRegistryPrefersNewestSettings(t *testing.T) {
	t.Parallel()
	now := at("12:00:00")
	reg := absence.NewRegistry([]store.Replica{
		heartbeat(replica("b", at("11:00:00"), job("sync", "*/10 * * * *")), now),
		heartbeat(replica("a", at("11:30:00"), job("sync", "*/5 * * * *")), now),
		heartbeat(replica("c", at("10:00:00"), job("sync", "*/15 * * * *")), now),
	}, now, th.ReplicaStale, nil)
	j := reg.Jobs["sync"]
	if j.Settings.Schedule != "*/5 * * * *" || !j.FirstRegistered.Equal(at("10:00:00")) || len(j.Registrations) != 3 {
		t.Fatalf("settings %q, first registered %s, %d registrations; want */5 from a, 10:00, 3", j.Settings.Schedule, j.FirstRegistered, len(j.Registrations))
	}
}

// A job is an orphan when a replica that died (its row left behind, its
// heartbeat lapsed) registered it and no live replica does. A job no
// recorded replica registers was retired (its replicas stopped cleanly) or
// was never a replica's (a lock line, another application): nothing.
func TestOrphanJob(t *testing.T) {
	t.Parallel()
	now := at("12:00:00")
	yes := true
	syncJob, old := job("sync", "* * * * *"), job("old", "* * * * *")
	live := replica("a", at("09:00:00"), syncJob)
	died := func(owner string, ago time.Duration, jobs ...store.ReplicaJob) store.Replica {
		return heartbeat(replica(owner, at("09:00:00"), jobs...), now.Add(-ago))
	}
	ran := func(job, owner string, ago time.Duration) store.Run {
		return store.Run{ID: int64(1000 - ago/time.Second), Job: job, Owner: owner, StartedAt: now.Add(-ago), FinishedAt: now.Add(-ago)}
	}
	for _, tc := range []struct {
		name     string
		replicas []store.Replica
		states   []store.JobState
		recent   []store.Run
		window   time.Duration
		want     []got
	}{
		{name: "registered jobs are no orphans", replicas: []store.Replica{live, died("b", time.Hour, syncJob)},
			recent: []store.Run{ran("sync", "b", time.Hour)}, states: []store.JobState{{Job: "sync", EnabledOverride: &yes}}},
		{name: "its only replica died", replicas: []store.Replica{live, died("b", time.Minute, syncJob, old)},
			recent: []store.Run{ran("sync", "a", time.Minute), ran("old", "b", 2*time.Minute), ran("old", "b", 3*time.Minute)},
			want: []got{{store.AlertOrphanJob, "old", map[string]string{
				"replicas": "b (last heartbeat 2026-03-01T11:59:00Z)", "last_heartbeat": "2026-03-01T11:59:00Z",
				"last_run": "2026-03-01T11:58:00Z", "last_run_owner": "b",
			}}}},
		{name: "every replica died", replicas: []store.Replica{died("c", time.Minute, syncJob), died("b", 2*time.Minute, syncJob)},
			states: []store.JobState{{Job: "sync", EnabledOverride: &yes, OverrideBy: "ops", OverrideAt: at("10:00:00")}},
			want: []got{{store.AlertOrphanJob, "sync", map[string]string{
				"replicas":       "b (last heartbeat 2026-03-01T11:58:00Z), c (last heartbeat 2026-03-01T11:59:00Z)",
				"last_heartbeat": "2026-03-01T11:59:00Z", "override": "enabled=true by ops at 2026-03-01T10:00:00Z",
			}}}},
		{name: "died longer ago than the window", replicas: []store.Replica{live, died("b", 25*time.Hour, old)}},
		{name: "orphan_job off", replicas: []store.Replica{live, died("b", time.Minute, old)}, window: -1},
		{name: "retired: ran lately, no replica registers it", replicas: []store.Replica{live},
			recent: []store.Run{ran("sync", "a", time.Minute), ran("old", "gone", time.Hour)}},
		{name: "a lock line, paused", replicas: []store.Replica{live}, recent: []store.Run{ran("backup", "cron-host:1:x", time.Minute)},
			states: []store.JobState{{Job: "backup", EnabledOverride: new(bool), OverrideBy: "ops"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(now, tc.replicas, nil)
			s.States, s.Recent = tc.states, tc.recent
			thr := th
			if tc.window != 0 {
				thr.OrphanWindow = max(tc.window, 0)
			}
			check(t, s, thr, tc.want...)
		})
	}
}

func TestClockOffset(t *testing.T) {
	t.Parallel()
	now := at("12:00:00")
	off := func(owner string, d time.Duration) store.Replica {
		r := replica(owner, at("09:00:00"))
		r.ClockOffset = d
		return r
	}
	for _, tc := range []struct {
		name     string
		replicas []store.Replica
		limit    time.Duration
		want     []got
	}{
		{name: "within", replicas: []store.Replica{off("a", 2*time.Second), off("b", -2*time.Second)}, limit: 2 * time.Second},
		{name: "ahead and behind", replicas: []store.Replica{off("a", 3*time.Minute), off("b", -2*time.Second-1), off("c", 0)}, limit: 2 * time.Second,
			want: []got{{store.AlertClockOffset, "a", map[string]string{"offset": "3m0s"}}, {store.AlertClockOffset, "b", map[string]string{"offset": "-2.000000001s"}}}},
		{name: "a stale replica is not judged", replicas: []store.Replica{heartbeat(off("a", time.Hour), now.Add(-time.Hour))}, limit: 2 * time.Second},
		{name: "off", replicas: []store.Replica{off("a", time.Hour)}, limit: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			thr := th
			thr.ClockOffset = tc.limit
			check(t, snapshot(now, tc.replicas, nil), thr, tc.want...)
		})
	}
}

// A schedule this binary cannot parse leaves its slot-based alerts
// unjudged, so the monitor keeps them as they are instead of resolving
// them; the other checks of the job still run.
func TestUnparsableScheduleIsUnjudged(t *testing.T) {
	t.Parallel()
	now := at("12:00:00")
	bad := job("sync", "@fortnightly", deadline(time.Minute))
	s := snapshot(now, []store.Replica{replica("a", at("10:00:00"), bad), replica("b", at("09:00:00"), job("sync", "* * * * *"))}, nil)
	res := check(t, s, th, got{store.AlertConfigDrift, "sync", nil})
	for _, k := range []store.AlertKind{store.AlertDeadlineMissed, store.AlertSlowRun} {
		if res.Judged(k, "sync") {
			t.Errorf("%s judged for a job whose schedule does not parse", k)
		}
	}
	for _, k := range []store.AlertKind{store.AlertLeaseStuck, store.AlertSkipStreak, store.AlertConfigDrift, store.AlertOrphanJob} {
		if !res.Judged(k, "sync") {
			t.Errorf("%s not judged", k)
		}
	}
	if res.Judged("lease_lost", "sync") {
		t.Error("an alert kind the checks do not know was judged")
	}
}

// Evaluating is cheap: a few hundred jobs are judged in well under a
// millisecond (the cost of a pass is its round trips; see docs/alerts.md).
func BenchmarkEvaluate(b *testing.B) {
	now := at("12:00:00")
	var jobs []store.ReplicaJob
	data := map[string]absence.JobData{}
	for i := range 300 {
		j := job("job-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "*/5 * * * *", deadline(time.Minute))
		jobs = append(jobs, j)
		data[j.Name] = absence.JobData{Runs: runs("ok", "s", "ok", "ok", "ok")}
	}
	replicas := []store.Replica{heartbeat(replica("a", at("09:00:00"), jobs...), now), heartbeat(replica("b", at("09:00:00"), jobs...), now), heartbeat(replica("c", at("09:00:00"), jobs...), now)}
	var scheds absence.Schedules
	b.ReportAllocs()
	for b.Loop() {
		reg := absence.NewRegistry(replicas, now, th.ReplicaStale, &scheds)
		absence.Evaluate(absence.Snapshot{Registry: reg, Jobs: data}, th)
	}
}
