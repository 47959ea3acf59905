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

func TestOrphanJob(t *testing.T) {
	t.Parallel()
	now := at("12:00:00")
	yes := true
	live := []store.Replica{replica("a", at("09:00:00"), job("sync", "* * * * *"))}
	ran := func(job string, ago time.Duration) store.Run {
		return store.Run{ID: int64(1000 - ago/time.Second), Job: job, Owner: "gone", StartedAt: now.Add(-ago), FinishedAt: now.Add(-ago)}
	}
	for _, tc := range []struct {
		name     string
		replicas []store.Replica
		states   []store.JobState
		recent   []store.Run
		want     []got
	}{
		{name: "registered jobs are no orphans", replicas: live, recent: []store.Run{ran("sync", time.Minute)},
			states: []store.JobState{{Job: "sync", EnabledOverride: &yes}}},
		{name: "ran lately, nobody registers it", replicas: live, recent: []store.Run{ran("sync", time.Minute), ran("old", time.Hour), ran("old", 2*time.Hour)},
			want: []got{{store.AlertOrphanJob, "old", map[string]string{"last_run": now.Add(-time.Hour).Format(time.RFC3339), "last_run_owner": "gone"}}}},
		{name: "ran long ago", replicas: live, recent: []store.Run{ran("old", 25*time.Hour)}},
		{name: "an override without a run", replicas: live, states: []store.JobState{{Job: "paused", EnabledOverride: &yes, OverrideBy: "ops"}},
			want: []got{{store.AlertOrphanJob, "paused", nil}}},
		{name: "an unset override is nothing", replicas: live, states: []store.JobState{{Job: "paused", OverrideBy: "ops"}}},
		{name: "registered only by a stale replica", replicas: []store.Replica{heartbeat(replica("a", at("09:00:00"), job("sync", "* * * * *")), now.Add(-time.Minute))},
			recent: []store.Run{ran("sync", 2*time.Minute)},
			want:   []got{{store.AlertOrphanJob, "sync", nil}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(now, tc.replicas, nil)
			s.States, s.Recent = tc.states, tc.recent
			check(t, s, th, tc.want...)
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
