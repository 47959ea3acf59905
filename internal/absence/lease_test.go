package absence_test

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/store"
)

func TestLeaseStuck(t *testing.T) {
	t.Parallel()
	now := at("12:10:00")
	// lease held since acquired ago, last renewed renewed ago, with ttl.
	lease := func(acquired, renewed, ttl time.Duration) store.Lease {
		return store.Lease{Name: "job:sync", Owner: "b", Generation: 7,
			AcquiredAt: now.Add(-acquired), RenewedAt: now.Add(-renewed), ExpiresAt: now.Add(-renewed + ttl)}
	}
	run := func(took time.Duration) store.Run {
		return store.Run{ID: 1, Job: "sync", Slot: at("11:00:00"), StartedAt: at("11:00:00"), FinishedAt: at("11:00:00").Add(took), Success: true}
	}
	skip := store.Run{ID: 2, Job: "sync", Slot: at("11:01:00"), Skipped: true, StartedAt: at("10:00:00"), FinishedAt: at("11:30:00")}
	stuck := func(reason string) got {
		return got{store.AlertLeaseStuck, "sync", map[string]string{"reason": reason, "owner": "b", "generation": "7"}}
	}
	plain := job("sync", "* * * * *")
	for _, tc := range []struct {
		name string
		job  store.ReplicaJob
		data absence.JobData
		want []got
	}{
		{name: "no lease", job: plain},
		{name: "expired, not taken over yet", job: plain, data: absence.JobData{Lease: lease(10*time.Minute, 90*time.Second, 90*time.Second)}},
		{name: "renewed on time", job: plain, data: absence.JobData{Lease: lease(time.Minute, 30*time.Second, 90*time.Second)}},
		{name: "two renewals missed", job: plain, data: absence.JobData{Lease: lease(2*time.Minute, 61*time.Second, 90*time.Second)},
			want: []got{stuck("not_renewed")}},
		{name: "unrenewed exactly 2/3 of the TTL", job: plain, data: absence.JobData{Lease: lease(2*time.Minute, 60*time.Second, 90*time.Second)}},
		{name: "the TTL is the lease's own, not the settings'", job: plain, data: absence.JobData{Lease: lease(time.Minute, 21*time.Second, 30*time.Second)},
			want: []got{stuck("not_renewed")}},
		{name: "held up to its timeout plus a renewal period", job: job("sync", "* * * * *", timeout(5*time.Minute)),
			data: absence.JobData{Lease: lease(5*time.Minute+30*time.Second, 10*time.Second, 90*time.Second)}},
		{name: "held past its timeout", job: job("sync", "* * * * *", timeout(5*time.Minute)),
			data: absence.JobData{Lease: lease(5*time.Minute+31*time.Second, 10*time.Second, 90*time.Second)},
			want: []got{stuck("held_too_long")}},
		{name: "no timeout, nothing known: unbounded", job: plain,
			data: absence.JobData{Lease: lease(9*time.Hour, 10*time.Second, 90*time.Second), Runs: []store.Run{skip}}},
		{name: "within twice the longest run", job: plain,
			data: absence.JobData{Lease: lease(3*time.Minute+59*time.Second, 10*time.Second, 90*time.Second), Runs: []store.Run{skip, run(30 * time.Second), run(2 * time.Minute)}}},
		{name: "past twice the longest run (skips do not count)", job: plain,
			data: absence.JobData{Lease: lease(4*time.Minute+time.Second, 10*time.Second, 90*time.Second), Runs: []store.Run{skip, run(30 * time.Second), run(2 * time.Minute)}},
			want: []got{stuck("held_too_long")}},
		{name: "past twice the longest run (an interrupted attempt's span does not count)", job: plain,
			data: absence.JobData{Lease: lease(4*time.Minute+time.Second, 10*time.Second, 90*time.Second),
				Runs: []store.Run{{ID: 3, Job: "sync", Slot: at("11:02:00"), StartedAt: at("11:02:00"), FinishedAt: at("11:30:00"), Reason: store.ReasonInterrupted},
					run(30 * time.Second), run(2 * time.Minute)}},
			want: []got{stuck("held_too_long")}},
		{name: "short runs: bounded by one TTL at least", job: plain,
			data: absence.JobData{Lease: lease(89*time.Second, 10*time.Second, 90*time.Second), Runs: []store.Run{run(10 * time.Second)}}},
		{name: "short runs, past one TTL", job: plain,
			data: absence.JobData{Lease: lease(91*time.Second, 10*time.Second, 90*time.Second), Runs: []store.Run{run(10 * time.Second)}},
			want: []got{stuck("held_too_long")}},
		{name: "overlap allow: no job lease to judge", job: job("sync", "* * * * *", func(j *store.ReplicaJob) { j.Overlap = "allow" }),
			data: absence.JobData{Lease: lease(2*time.Minute, 61*time.Second, 90*time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := snapshot(now, []store.Replica{replica("a", at("09:00:00"), tc.job)}, map[string]absence.JobData{"sync": tc.data})
			check(t, s, th, tc.want...)
		})
	}
}

// The registry is read before the leases. A run that ends in between
// releases its lease with an expiry after Registry.Now, 30 ms after it was
// taken: judged by Registry.Now that lease looks held and unrenewed for
// most of its 30 ms TTL (the webhook e2e test once got lease_stuck for a
// run that had just ended). Judged by the clock read after the leases, it
// has expired.
func TestLeaseReleasedAfterTheRegistryWasRead(t *testing.T) {
	t.Parallel()
	now := at("12:10:00")
	released := store.Lease{Name: "job:sync", Owner: "b", Generation: 7,
		AcquiredAt: now.Add(-25 * time.Millisecond), RenewedAt: now.Add(-25 * time.Millisecond), ExpiresAt: now.Add(5 * time.Millisecond)}
	s := snapshot(now, []store.Replica{replica("a", at("09:00:00"), job("sync", "* * * * * *"))},
		map[string]absence.JobData{"sync": {Lease: released}})

	// Without the later reading, the check falls back to Registry.Now: the
	// false alarm this test is about, which shows the case is the one.
	check(t, s, th, got{store.AlertLeaseStuck, "sync", map[string]string{"reason": "not_renewed"}})

	s.LeasesReadBy = now.Add(10 * time.Millisecond)
	check(t, s, th)

	// A lease still held at the later reading is judged by it too.
	held := released
	held.ExpiresAt = now.Add(2 * time.Second)
	held.RenewedAt = now.Add(-7 * time.Second) // 7 s of a 9 s TTL
	s.Jobs = map[string]absence.JobData{"sync": {Lease: held}}
	check(t, s, th, got{store.AlertLeaseStuck, "sync", map[string]string{"reason": "not_renewed"}})
}
