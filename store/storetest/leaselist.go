package storetest

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cronfence/cronfence/store"
)

// leaseListHeld: LeaseList returns exactly the leases unexpired at the
// clock it reports, whose names begin with the prefix byte for byte (no
// pattern characters, no collation), in byte order; released and expired
// rows are left out; another connection (another replica) sees the same.
func leaseListHeld(t *testing.T, b Bundle) {
	monitorOf(t, b.Store)
	// Leases taken up to 8 s ago (with a TTL of 10 s) are held now; one
	// released a moment ago and one expired a while ago are not.
	base := dbNow(t, b.Store).Add(-5 * time.Second)
	acquire := func(name, owner string, at time.Time) store.Lease {
		return mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: name, Owner: owner, TTL: ttl, Now: at})
	}
	// Byte order puts "B" before "a" and "é" after "b", where a
	// language's collation would not.
	held := []store.Lease{
		acquire("job:B", "replica-1", base),
		acquire("job:a", "replica-2", base.Add(-3*time.Second)),
		acquire("job:a@2026-03-01T12:00:00Z", "replica-1", base.Add(-time.Second)),
		acquire("job:b", "replica-3", base.Add(-2*time.Second)),
		acquire("job:é", "replica-1", base),
	}
	// Renewed: its row shows a renewal later than its acquisition.
	renewed, err := b.Store.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: held[3].Ref(), TTL: ttl, Now: base.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	held[3] = renewed
	released := acquire("job:released", "replica-1", base)
	if ok, err := b.Store.LeaseRelease(ctx(t), released.Ref()); err != nil || !ok {
		t.Fatalf("release: %v, %v", ok, err)
	}
	acquire("job:expired", "replica-1", base.Add(-ttl))
	monitorLease := acquire("cronfence:monitor", "replica-2", base)
	jobx := acquire("jobx", "replica-2", base)
	pct := acquire("job%1", "replica-2", base)
	jobz := acquire("jobz", "replica-2", base)
	now := dbNow(t, b.Store) // after the release

	list := func(s store.Store, p store.LeaseListParams) store.LeaseListResult {
		t.Helper()
		res, err := monitorOf(t, s).LeaseList(ctx(t), p)
		if err != nil {
			t.Fatalf("LeaseList(%+v): %v", p, err)
		}
		return res
	}
	want := func(what string, got store.LeaseListResult, at time.Time, leases []store.Lease) {
		t.Helper()
		if !got.Now.Equal(at) || got.Now.Location() != time.UTC {
			t.Errorf("%s: Now = %v, want %v (UTC)", what, got.Now, at)
		}
		if diff := cmp.Diff(leases, got.Leases); diff != "" {
			t.Errorf("%s: leases (-want +got):\n%s", what, diff)
		}
	}
	want("prefix job:", list(b.Store, store.LeaseListParams{Prefix: "job:", Now: now}), now, held)
	want("prefix job: from another replica", list(b.Open(t), store.LeaseListParams{Prefix: "job:", Now: now}), now, held)
	want("limit 2", list(b.Store, store.LeaseListParams{Prefix: "job:", Now: now, Limit: 2}), now, held[:2])
	want("prefix job% is no pattern", list(b.Store, store.LeaseListParams{Prefix: "job%", Now: now}), now, []store.Lease{pct})
	want("no prefix", list(b.Store, store.LeaseListParams{Now: now}), now,
		[]store.Lease{monitorLease, pct, held[0], held[1], held[2], held[3], held[4], jobx, jobz})
	var none []store.Lease
	want("nothing held under the prefix", list(b.Store, store.LeaseListParams{Prefix: "lock:", Now: now}), now, none)

	// Expiry is exclusive, as for a takeover: at expires_at the lease is
	// no longer held.
	a := held[1] // the first to expire, 2 s from now
	want("a microsecond before job:a expires", list(b.Store, store.LeaseListParams{Prefix: "job:a", Now: a.ExpiresAt.Add(-time.Microsecond)}),
		a.ExpiresAt.Add(-time.Microsecond), held[1:3])
	want("when job:a expires", list(b.Store, store.LeaseListParams{Prefix: "job:a", Now: a.ExpiresAt}), a.ExpiresAt, held[2:3])

	// Unpinned, the database clock judges and is returned.
	before := dbNow(t, b.Store)
	got := list(b.Store, store.LeaseListParams{Prefix: "job:"})
	after := dbNow(t, b.Store)
	if got.Now.Before(before) || got.Now.After(after.Add(time.Microsecond)) || got.Now.Location() != time.UTC {
		t.Errorf("unpinned Now = %v, want the database clock, between %v and %v, in UTC", got.Now, before, after)
	}
	if diff := cmp.Diff(held, got.Leases); diff != "" && got.Now.Before(a.ExpiresAt) {
		t.Errorf("unpinned leases (-want +got):\n%s", diff)
	}
}

// monitorSnapshotIsEachList: MonitorSnapshot returns, in one call, what
// ReplicaList, JobStateList, RunList, AlertList (open) and LeaseList
// return, with the same limits, order and values (text that JSON or SQL
// would have to escape included).
func monitorSnapshotIsEachList(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	now := dbNow(t, b.Store)
	odd := `quote " backslash \ tab	 newline
 ünïcödé`
	for _, r := range []store.Replica{
		{Owner: "replica-b", Host: odd, PID: 2, Version: "v1", ClockOffset: -3 * time.Millisecond, Timers: true,
			Jobs: []store.ReplicaJob{{Name: "report", Schedule: "*/5 * * * *", LeaseTTL: time.Minute, Overlap: "skip", MaxAttempts: 3, Hash: "abc"}}},
		{Owner: "replica-a", Host: "h", PID: 1, Version: "v1"},
	} {
		if _, err := m.ReplicaHeartbeat(ctx(t), r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "paused", Enabled: ptr(false), By: "ana", Note: odd}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "cleanup", By: "ana"}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		r := mustClaim(t, b.Store, store.SlotClaimParams{Job: "report", Slot: now.Add(time.Duration(i-10) * time.Minute), LeaseName: "job:report",
			Owner: "replica-a", TTL: ttl, MaxAttempts: 3, Now: now})
		p := finishParams(r, store.SlotCompleted, now)
		p.Run.Logs = []string{odd, "second"}
		mustFinish(t, b.Store, p)
	}
	for _, subject := range []string{"report", "cleanup", odd} {
		if _, err := m.AlertRaise(ctx(t), store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: subject, Message: odd,
			Details: map[string]string{"k": odd}, RaisedBy: "replica-a", Fingerprint: odd}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.AlertResolve(ctx(t), store.AlertSlowRun, "cleanup"); err != nil {
		t.Fatal(err)
	}
	// The open alert the snapshot reads is acknowledged, with a note.
	if _, err := m.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: odd, By: "ana", Note: odd}); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:held", Owner: "replica-b", TTL: ttl, Now: now})
	mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "lock:other", Owner: "replica-b", TTL: ttl, Now: now})
	mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:old", Owner: "replica-b", TTL: ttl, Now: now.Add(-time.Hour)})

	p := store.MonitorSnapshotParams{RecentRuns: 3, OpenAlerts: 1, Leases: store.LeaseListParams{Prefix: "job:", Now: now}}
	got, err := m.MonitorSnapshot(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	var want store.MonitorSnapshot
	if want.Replicas, err = m.ReplicaList(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if want.JobStates, err = b.Store.JobStateList(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if want.RecentRuns, err = b.Store.RunList(ctx(t), store.RunListParams{Limit: p.RecentRuns}); err != nil {
		t.Fatal(err)
	}
	if want.OpenAlerts, err = m.AlertList(ctx(t), store.AlertListParams{OpenOnly: true, Limit: p.OpenAlerts}); err != nil {
		t.Fatal(err)
	}
	if want.Leases, err = m.LeaseList(ctx(t), p.Leases); err != nil {
		t.Fatal(err)
	}
	if len(want.Replicas) != 2 || len(want.JobStates) != 2 || len(want.RecentRuns) != 3 || len(want.OpenAlerts) != 1 || len(want.Leases.Leases) != 1 {
		t.Fatalf("the lists themselves: %d replicas, %d job states, %d runs, %d open alerts, %d leases; want 2, 2, 3, 1, 1",
			len(want.Replicas), len(want.JobStates), len(want.RecentRuns), len(want.OpenAlerts), len(want.Leases.Leases))
	}
	// The digest of a replica's jobs is the snapshot's alone.
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(store.Replica{}, "JobsHash")); diff != "" {
		t.Fatalf("MonitorSnapshot differs from the lists (-lists +snapshot):\n%s", diff)
	}
}

// monitorSnapshotLeavesOutKnownJobs: a replica's jobs the caller already
// holds (KnownJobs, by the digest an earlier snapshot gave) may be left
// out, and then they are said to be (JobsUnchanged); jobs that changed
// since, or whose digest the caller does not hold, always come.
func monitorSnapshotLeavesOutKnownJobs(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	job := func(name string) store.ReplicaJob {
		return store.ReplicaJob{Name: name, Schedule: "*/5 * * * *", LeaseTTL: time.Minute, Overlap: "skip", MaxAttempts: 3, Hash: name}
	}
	beat := func(owner string, jobs ...store.ReplicaJob) {
		t.Helper()
		if _, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: owner, Host: "h", PID: 1, Version: "v1", Timers: true, Jobs: jobs}); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := func(known map[string]string) map[string]store.Replica {
		t.Helper()
		snap, err := m.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{KnownJobs: known})
		if err != nil {
			t.Fatal(err)
		}
		byOwner := map[string]store.Replica{}
		for _, r := range snap.Replicas {
			byOwner[r.Owner] = r
		}
		return byOwner
	}
	beat("replica-a", job("report"), job("mail"))
	beat("replica-b", job("report"))
	first := snapshot(nil)
	for _, owner := range []string{"replica-a", "replica-b"} {
		if r := first[owner]; r.JobsUnchanged || len(r.Jobs) == 0 {
			t.Fatalf("a snapshot knowing nothing left out the jobs of %s: %+v", owner, r)
		}
	}
	known := map[string]string{}
	for owner, r := range first {
		if r.JobsHash != "" {
			known[owner] = r.JobsHash
		}
	}
	if len(known) == 0 {
		return // this store does not digest jobs: it sends them every time, which is correct
	}
	if first["replica-a"].JobsHash == first["replica-b"].JobsHash {
		t.Fatalf("two different lists of jobs have one digest, %q", first["replica-a"].JobsHash)
	}
	// replica-b changes its jobs; replica-a does not.
	beat("replica-b", job("report"), job("cleanup"))
	second := snapshot(known)
	if a := second["replica-a"]; !a.JobsUnchanged || a.Jobs != nil || a.JobsHash != known["replica-a"] {
		t.Errorf("replica-a's jobs, unchanged and known, came as %+v; want them left out, said unchanged, same digest", a)
	}
	if b := second["replica-b"]; b.JobsUnchanged || len(b.Jobs) != 2 || b.JobsHash == known["replica-b"] {
		t.Errorf("replica-b's jobs, changed since, came as %+v; want the two new jobs with a new digest", b)
	}
	// A digest the caller made up, or another replica's, sends the jobs.
	third := snapshot(map[string]string{"replica-a": "not a digest", "replica-b": known["replica-a"]})
	for _, owner := range []string{"replica-a", "replica-b"} {
		if r := third[owner]; r.JobsUnchanged || len(r.Jobs) == 0 {
			t.Errorf("jobs of %s left out for a digest that is not theirs: %+v", owner, r)
		}
	}
}
