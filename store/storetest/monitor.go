package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// The Monitor group runs against stores that implement store.Monitor, which
// is optional; a store without it skips the group.
var monitorTests = []namedTest{
	{name: "HeartbeatKeepsStartedAt", fn: heartbeatKeepsStartedAt},
	{name: "HeartbeatKeepsUnchangedJobs", fn: heartbeatKeepsUnchangedJobs},
	{name: "ReplicaListOrderAndRemove", fn: replicaListOrderAndRemove},
	{name: "AlertRaiseRefreshesOpenAlert", fn: alertRaiseRefreshes},
	{name: "AlertResolveThenRaiseOpensNewAlert", fn: alertResolveThenRaise},
	{name: "AlertListFilters", fn: alertListFilters},
	{name: "AlertAcknowledgeHoldsUntilTheAlertChanges", fn: alertAckHoldsUntilChange},
	{name: "AlertAcknowledgeNeedsTheOpenAlert", fn: alertAckNeedsOpenAlert},
	{name: "LeaseListHeldByPrefix", fn: leaseListHeld},
	{name: "MonitorSnapshotIsEachList", fn: monitorSnapshotIsEachList},
	{name: "MonitorSnapshotLeavesOutKnownJobs", fn: monitorSnapshotLeavesOutKnownJobs},
	{name: "PruneKeepsOpenAlerts", fn: monitorPrune},
	{name: "BadInputRejectedWithoutWriting", fn: monitorBadInput},
	{name: "Closed", fn: monitorClosed},
	{name: "AlertRaisedAndResolvedOnceAcrossReplicas", serial: true, fn: alertRace},
	{name: "AlertAcknowledgementEndedOnceAcrossReplicas", serial: true, fn: alertAckEndRace},
}

func monitorOf(t *testing.T, s store.Store) store.Monitor {
	t.Helper()
	return s
}

// after waits until the store's clock has passed t, so the next write gets
// a later time than one made at t. Clocks move by microseconds here; this
// returns within a millisecond.
func after(t *testing.T, s store.Store, at time.Time) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !dbNow(t, s).After(at) {
		if time.Now().After(deadline) {
			t.Fatalf("the store's clock did not pass %s", at)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func sampleJobs() []store.ReplicaJob {
	return []store.ReplicaJob{
		{Name: "fechamento", Schedule: "0 2 * * *", TimeZone: "America/Sao_Paulo", Timeout: 90 * time.Minute, LeaseTTL: time.Minute,
			CatchUpWindow: 6 * time.Hour, Overlap: "skip", Deadline: 2 * time.Hour, MaxAttempts: 3, Hash: "0123456789abcdef"},
		{Name: "heartbeat", Schedule: "@every 10s", LeaseTTL: 30 * time.Second, Overlap: "buffer-one", MaxAttempts: 1,
			Disabled: true, Hash: "fedcba9876543210"},
	}
}

func heartbeatKeepsStartedAt(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	before := dbNow(t, b.Store)
	in := store.Replica{
		Owner: "host-a:4242:x1", Host: "host-a", PID: 4242, Version: "v1.2.3", ClockOffset: -1500 * time.Millisecond,
		Timers: true, Jobs: sampleJobs(),
		// Ignored: the store sets both from its clock.
		StartedAt: before.Add(-time.Hour), HeartbeatAt: before.Add(-time.Hour),
	}
	first, err := m.ReplicaHeartbeat(ctx(t), in)
	if err != nil {
		t.Fatalf("first heartbeat: %v", err)
	}
	if first.StartedAt.Before(before) || !first.HeartbeatAt.Equal(first.StartedAt) || first.StartedAt.Location() != time.UTC {
		t.Fatalf("first heartbeat: StartedAt %s, HeartbeatAt %s; want both the store's clock (at or after %s), in UTC", first.StartedAt, first.HeartbeatAt, before)
	}
	want := in
	want.StartedAt, want.HeartbeatAt = first.StartedAt, first.HeartbeatAt
	if !reflect.DeepEqual(first, want) {
		t.Fatalf("first heartbeat returned\n%+v\nwant\n%+v", first, want)
	}

	after(t, b.Store, first.HeartbeatAt)
	in.Host, in.PID, in.Version, in.ClockOffset, in.Timers = "host-b", 7, "v1.2.4", 3*time.Second, false
	in.Jobs = sampleJobs()[:1]
	in.Jobs[0].Schedule, in.Jobs[0].Hash = "0 3 * * *", "1111111111111111"
	second, err := m.ReplicaHeartbeat(ctx(t), in)
	if err != nil {
		t.Fatalf("second heartbeat: %v", err)
	}
	if !second.StartedAt.Equal(first.StartedAt) {
		t.Fatalf("second heartbeat moved StartedAt from %s to %s", first.StartedAt, second.StartedAt)
	}
	if !second.HeartbeatAt.After(first.HeartbeatAt) {
		t.Fatalf("second heartbeat: HeartbeatAt %s, want after the first's %s", second.HeartbeatAt, first.HeartbeatAt)
	}
	want = in
	want.StartedAt, want.HeartbeatAt = first.StartedAt, second.HeartbeatAt
	if !reflect.DeepEqual(second, want) {
		t.Fatalf("second heartbeat returned\n%+v\nwant every field but StartedAt replaced:\n%+v", second, want)
	}
	// Another replica reads the same row, jobs and durations intact.
	list, err := monitorOf(t, b.Open(t)).ReplicaList(ctx(t))
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], second) {
		t.Fatalf("ReplicaList = %+v, %v; want [%+v]", list, err, second)
	}
}

// A heartbeat that says its jobs are unchanged updates every other field
// and keeps the stored jobs, without returning them; for an owner with no
// row it writes nothing and says so (ErrNotFound), so the caller sends the
// jobs rather than leave a row without them.
func heartbeatKeepsUnchangedJobs(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	in := store.Replica{Owner: "host-a:1:x", Host: "host-a", PID: 1, Version: "v1", Timers: true, Jobs: sampleJobs()}
	first, err := m.ReplicaHeartbeat(ctx(t), in)
	if err != nil {
		t.Fatalf("first heartbeat: %v", err)
	}
	after(t, b.Store, first.HeartbeatAt)
	beat := store.Replica{Owner: in.Owner, Host: "host-b", PID: 2, Version: "v2", ClockOffset: time.Second, JobsUnchanged: true}
	second, err := m.ReplicaHeartbeat(ctx(t), beat)
	if err != nil {
		t.Fatalf("heartbeat with JobsUnchanged: %v", err)
	}
	want := beat
	want.StartedAt, want.HeartbeatAt = first.StartedAt, second.HeartbeatAt
	if !second.HeartbeatAt.After(first.HeartbeatAt) || !reflect.DeepEqual(second, want) {
		t.Fatalf("heartbeat with JobsUnchanged returned\n%+v\nwant every field but StartedAt replaced, no jobs read back:\n%+v", second, want)
	}
	want.Jobs, want.JobsUnchanged = sampleJobs(), false
	list, err := m.ReplicaList(ctx(t))
	if err != nil || len(list) != 1 || !reflect.DeepEqual(list[0], want) {
		t.Fatalf("ReplicaList = %+v, %v; want [%+v]: the first heartbeat's jobs kept", list, err, want)
	}

	gone := store.Replica{Owner: "gone", Host: "h", JobsUnchanged: true}
	if _, err := m.ReplicaHeartbeat(ctx(t), gone); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("heartbeat with JobsUnchanged of an owner with no row: %v, want ErrNotFound", err)
	}
	if list, err := m.ReplicaList(ctx(t)); err != nil || len(list) != 1 {
		t.Fatalf("ReplicaList after a refused heartbeat = %+v, %v; want the first owner only", list, err)
	}
}

func replicaListOrderAndRemove(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	for _, owner := range []string{"c", "a", "B", "b"} {
		if _, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: owner, Host: "h", PID: 1}); err != nil {
			t.Fatalf("heartbeat of %q: %v", owner, err)
		}
	}
	owners := func() []string {
		t.Helper()
		list, err := m.ReplicaList(ctx(t))
		if err != nil {
			t.Fatalf("ReplicaList: %v", err)
		}
		var out []string
		for _, r := range list {
			if r.Jobs != nil {
				t.Errorf("replica %q with no jobs lists Jobs %#v, want nil", r.Owner, r.Jobs)
			}
			out = append(out, r.Owner)
		}
		return out
	}
	if got, want := owners(), []string{"B", "a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ReplicaList owners = %q, want %q (byte order)", got, want)
	}
	if err := m.ReplicaRemove(ctx(t), "a"); err != nil {
		t.Fatalf("ReplicaRemove: %v", err)
	}
	if err := m.ReplicaRemove(ctx(t), "never-seen"); err != nil {
		t.Fatalf("ReplicaRemove of an unknown owner: %v, want nil", err)
	}
	if got, want := owners(), []string{"B", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after removing a, owners = %q, want %q", got, want)
	}
}

func raise(t *testing.T, m store.Monitor, p store.AlertRaiseParams) (store.Alert, bool) {
	t.Helper()
	res, err := m.AlertRaise(ctx(t), p)
	if err != nil {
		t.Fatalf("AlertRaise(%s, %q): %v", p.Kind, p.Subject, err)
	}
	if a := res.Alert; a.ID <= 0 || a.Kind != p.Kind || a.Subject != p.Subject || !a.Open() || a.Fingerprint != p.Fingerprint {
		t.Fatalf("AlertRaise(%s, %q) returned %+v", p.Kind, p.Subject, a)
	}
	if !res.EndedAck.IsZero() {
		t.Fatalf("AlertRaise(%s, %q) ended acknowledgement %+v of an alert never acknowledged", p.Kind, p.Subject, res.EndedAck)
	}
	return res.Alert, res.Raised
}

func alertRaiseRefreshes(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	before := dbNow(t, b.Store)
	p := store.AlertRaiseParams{Kind: store.AlertDeadlineMissed, Subject: "fechamento", Message: "slot 02:00 not completed by 04:00",
		Details: map[string]string{"slot": "2026-09-25T05:00:00Z", "deadline": "2h"}, RaisedBy: "replica-a"}
	first, raised := raise(t, m, p)
	if !raised {
		t.Fatal("the first AlertRaise reported raised = false")
	}
	if first.RaisedAt.Before(before) || !first.LastSeenAt.Equal(first.RaisedAt) || first.RaisedBy != "replica-a" ||
		first.Message != p.Message || !reflect.DeepEqual(first.Details, p.Details) {
		t.Fatalf("first AlertRaise = %+v, want it as raised at or after %s", first, before)
	}

	after(t, b.Store, first.LastSeenAt)
	p2 := p
	p2.Message, p2.Details, p2.RaisedBy = "still not completed", nil, "replica-b"
	second, raised := raise(t, monitorOf(t, b.Open(t)), p2)
	if raised {
		t.Fatal("AlertRaise of an open alert reported raised = true")
	}
	if second.ID != first.ID || !second.RaisedAt.Equal(first.RaisedAt) || second.RaisedBy != "replica-a" {
		t.Fatalf("refreshed alert = %+v; want id %d, RaisedAt and RaisedBy of the first raise kept", second, first.ID)
	}
	if !second.LastSeenAt.After(first.LastSeenAt) || second.Message != p2.Message || second.Details != nil {
		t.Fatalf("refreshed alert = %+v; want LastSeenAt after %s, the new message and no details", second, first.LastSeenAt)
	}
	// Another subject, or another kind, is another alert.
	if other, raised := raise(t, m, store.AlertRaiseParams{Kind: store.AlertDeadlineMissed, Subject: "relatorio", RaisedBy: "replica-a"}); !raised || other.ID == first.ID {
		t.Fatalf("another subject: %+v, raised %v; want a new alert", other, raised)
	}
	if other, raised := raise(t, m, store.AlertRaiseParams{Kind: store.AlertSkipStreak, Subject: "fechamento", RaisedBy: "replica-a"}); !raised || other.ID == first.ID {
		t.Fatalf("another kind: %+v, raised %v; want a new alert", other, raised)
	}
	list, err := m.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(list) != 3 {
		t.Fatalf("AlertList = %+v, %v; want 3 alerts", list, err)
	}
}

func alertResolveThenRaise(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	p := store.AlertRaiseParams{Kind: store.AlertLeaseStuck, Subject: "fechamento", Message: "held 9 days", RaisedBy: "replica-a"}
	first, _ := raise(t, m, p)

	if a, resolved, err := m.AlertResolve(ctx(t), store.AlertLeaseStuck, "other-job"); err != nil || resolved || !reflect.DeepEqual(a, store.Alert{}) {
		t.Fatalf("resolving an alert never raised = %+v, %v, %v; want a zero alert, false, nil", a, resolved, err)
	}
	after(t, b.Store, first.LastSeenAt)
	closed, resolved, err := m.AlertResolve(ctx(t), store.AlertLeaseStuck, "fechamento")
	if err != nil || !resolved {
		t.Fatalf("AlertResolve = %v, %v; want true, nil", resolved, err)
	}
	if closed.ID != first.ID || closed.Open() || !closed.ResolvedAt.After(first.RaisedAt) || closed.Message != p.Message {
		t.Fatalf("resolved alert = %+v; want alert %d closed after it was raised", closed, first.ID)
	}
	if a, resolved, err := m.AlertResolve(ctx(t), store.AlertLeaseStuck, "fechamento"); err != nil || resolved || !reflect.DeepEqual(a, store.Alert{}) {
		t.Fatalf("resolving again = %+v, %v, %v; want a zero alert, false, nil", a, resolved, err)
	}

	// The cause comes back: a new alert, not the old one reopened.
	again, raised := raise(t, m, p)
	if !raised || again.ID <= first.ID || !again.RaisedAt.After(closed.RaisedAt) {
		t.Fatalf("raise after resolve = %+v, raised %v; want a new alert with an id above %d", again, raised, first.ID)
	}
	all, err := m.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(all) != 2 || all[0].ID != again.ID || !all[0].Open() || all[1].ID != first.ID || all[1].Open() {
		t.Fatalf("AlertList = %+v, %v; want the new open alert, then the resolved one", all, err)
	}
	if !all[1].ResolvedAt.Equal(closed.ResolvedAt) {
		t.Fatalf("listed ResolvedAt %s, resolve returned %s", all[1].ResolvedAt, closed.ResolvedAt)
	}
	open, err := m.AlertList(ctx(t), store.AlertListParams{OpenOnly: true})
	if err != nil || len(open) != 1 || open[0].ID != again.ID {
		t.Fatalf("AlertList(OpenOnly) = %+v, %v; want only alert %d", open, err, again.ID)
	}
}

func alertListFilters(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	var ids []int64
	for _, p := range []store.AlertRaiseParams{
		{Kind: store.AlertSlowRun, Subject: "a", RaisedBy: "r"},
		{Kind: store.AlertSlowRun, Subject: "b", RaisedBy: "r"},
		{Kind: store.AlertOrphanJob, Subject: "a", RaisedBy: "r"},
		{Kind: store.AlertClockOffset, Subject: "host-a:1:x", RaisedBy: "r"},
		{Kind: "custom_check", Subject: "a", RaisedBy: "r"}, // kinds are open-ended
	} {
		a, _ := raise(t, m, p)
		ids = append(ids, a.ID)
	}
	if _, resolved, err := m.AlertResolve(ctx(t), store.AlertSlowRun, "b"); err != nil || !resolved {
		t.Fatalf("AlertResolve = %v, %v", resolved, err)
	}
	listIDs := func(p store.AlertListParams) []int64 {
		t.Helper()
		list, err := m.AlertList(ctx(t), p)
		if err != nil {
			t.Fatalf("AlertList(%+v): %v", p, err)
		}
		var out []int64
		for _, a := range list {
			out = append(out, a.ID)
		}
		return out
	}
	for _, tc := range []struct {
		p    store.AlertListParams
		want []int64
	}{
		{store.AlertListParams{}, []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{store.AlertListParams{OpenOnly: true}, []int64{ids[4], ids[3], ids[2], ids[0]}},
		{store.AlertListParams{Limit: 2}, []int64{ids[4], ids[3]}},
		{store.AlertListParams{Kind: store.AlertSlowRun}, []int64{ids[1], ids[0]}},
		{store.AlertListParams{Kind: store.AlertSlowRun, OpenOnly: true}, []int64{ids[0]}},
		{store.AlertListParams{Subject: "a"}, []int64{ids[4], ids[2], ids[0]}},
		{store.AlertListParams{Subject: "a", Kind: store.AlertOrphanJob}, []int64{ids[2]}},
		{store.AlertListParams{Subject: "nobody"}, nil},
	} {
		if got := listIDs(tc.p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("AlertList(%+v) ids = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func monitorPrune(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	resolved, _ := raise(t, m, store.AlertRaiseParams{Kind: store.AlertSkipStreak, Subject: "old", RaisedBy: "r"})
	if _, ok, err := m.AlertResolve(ctx(t), store.AlertSkipStreak, "old"); err != nil || !ok {
		t.Fatalf("AlertResolve = %v, %v", ok, err)
	}
	open, _ := raise(t, m, store.AlertRaiseParams{Kind: store.AlertSkipStreak, Subject: "still", RaisedBy: "r"})
	if _, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "gone", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	count := func() (alerts, replicas int) {
		t.Helper()
		list, err := m.AlertList(ctx(t), store.AlertListParams{})
		if err != nil {
			t.Fatal(err)
		}
		reps, err := m.ReplicaList(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		return len(list), len(reps)
	}
	now := dbNow(t, b.Store)
	if _, err := b.Store.Prune(ctx(t), store.PruneParams{Before: now.Add(-time.Hour)}); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if a, r := count(); a != 2 || r != 1 {
		t.Fatalf("a prune before everything left %d alerts and %d replicas, want 2 and 1", a, r)
	}
	if _, err := b.Store.Prune(ctx(t), store.PruneParams{Before: now.Add(time.Hour)}); err != nil {
		t.Fatalf("Prune: %v", err)
	}
	list, err := m.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(list) != 1 || list[0].ID != open.ID {
		t.Fatalf("after a prune past everything, alerts = %+v, %v; want only the open alert %d (resolved %d pruned)", list, err, open.ID, resolved.ID)
	}
	if _, r := count(); r != 0 {
		t.Fatalf("after a prune past its heartbeat, %d replicas listed, want 0", r)
	}
}

func monitorBadInput(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	long := strings.Repeat("n", store.MaxNameLength+1)
	good := store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "j", Message: "m", RaisedBy: "r"}
	raiseErr := func(mut func(*store.AlertRaiseParams)) error {
		p := good
		p.Details = map[string]string{"k": "v"}
		mut(&p)
		_, err := m.AlertRaise(ctx(t), p)
		return err
	}
	ackErr := func(mut func(*store.AlertAcknowledgeParams)) error {
		p := store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: "j", By: "ops"}
		mut(&p)
		_, err := m.AlertAcknowledge(ctx(t), p)
		return err
	}
	manyDetails := map[string]string{}
	for i := range store.MaxAlertDetails + 1 {
		manyDetails[fmt.Sprintf("k%d", i)] = "v"
	}
	bigDetails := map[string]string{}
	for i := range 3 {
		bigDetails[fmt.Sprintf("k%d", i)] = strings.Repeat("x", store.MaxAlertDetailsBytes/3)
	}
	heartbeat := func(mut func(*store.Replica)) error {
		r := store.Replica{Owner: "o", Host: "h", PID: 1, Jobs: []store.ReplicaJob{{Name: "j", Schedule: "@hourly", Hash: "h"}}}
		mut(&r)
		_, err := m.ReplicaHeartbeat(ctx(t), r)
		return err
	}
	leaseListErr := func(p store.LeaseListParams) error {
		_, err := m.LeaseList(ctx(t), p)
		return err
	}
	snapshotErr := func(p store.MonitorSnapshotParams) error {
		_, err := m.MonitorSnapshot(ctx(t), p)
		return err
	}
	for _, tc := range []struct {
		name    string
		err     error
		mention string
	}{
		{"empty kind", raiseErr(func(p *store.AlertRaiseParams) { p.Kind = "" }), "kind"},
		{"upper-case kind", raiseErr(func(p *store.AlertRaiseParams) { p.Kind = "Slow" }), "kind"},
		{"over-long kind", raiseErr(func(p *store.AlertRaiseParams) {
			p.Kind = store.AlertKind(strings.Repeat("k", store.MaxAlertKindLength+1))
		}), "kind"},
		{"empty subject", raiseErr(func(p *store.AlertRaiseParams) { p.Subject = "" }), "subject"},
		{"over-long subject", raiseErr(func(p *store.AlertRaiseParams) { p.Subject = long }), "subject"},
		{"empty raised by", raiseErr(func(p *store.AlertRaiseParams) { p.RaisedBy = "" }), "RaisedBy"},
		{"oversized message", raiseErr(func(p *store.AlertRaiseParams) { p.Message = strings.Repeat("m", store.MaxAlertMessageBytes+1) }), "message"},
		{"NUL in message", raiseErr(func(p *store.AlertRaiseParams) { p.Message = "a\x00b" }), "NUL"},
		{"invalid UTF-8 message", raiseErr(func(p *store.AlertRaiseParams) { p.Message = "a\xffb" }), "UTF-8"},
		{"too many details", raiseErr(func(p *store.AlertRaiseParams) { p.Details = manyDetails }), "details"},
		{"oversized details", raiseErr(func(p *store.AlertRaiseParams) { p.Details = bigDetails }), "details"},
		{"empty details key", raiseErr(func(p *store.AlertRaiseParams) { p.Details = map[string]string{"": "v"} }), "details"},
		{"NUL in details value", raiseErr(func(p *store.AlertRaiseParams) { p.Details = map[string]string{"k": "\x00"} }), "NUL"},
		{"over-long fingerprint", raiseErr(func(p *store.AlertRaiseParams) { p.Fingerprint = long }), "fingerprint"},
		{"invalid UTF-8 fingerprint", raiseErr(func(p *store.AlertRaiseParams) { p.Fingerprint = "\xff" }), "UTF-8"},
		{"acknowledge empty kind", ackErr(func(p *store.AlertAcknowledgeParams) { p.Kind = "" }), "kind"},
		{"acknowledge empty subject", ackErr(func(p *store.AlertAcknowledgeParams) { p.Subject = "" }), "subject"},
		{"acknowledge by nobody", ackErr(func(p *store.AlertAcknowledgeParams) { p.By = "" }), "By"},
		{"acknowledge negative id", ackErr(func(p *store.AlertAcknowledgeParams) { p.ID = -1 }), "ID"},
		{"acknowledge over-long note", ackErr(func(p *store.AlertAcknowledgeParams) { p.Note = strings.Repeat("n", store.MaxNoteLength+1) }), "note"},
		{"acknowledge NUL in note", ackErr(func(p *store.AlertAcknowledgeParams) { p.Note = "\x00" }), "NUL"},
		{"resolve empty kind", func() error { _, _, err := m.AlertResolve(ctx(t), "", "j"); return err }(), "kind"},
		{"resolve empty subject", func() error { _, _, err := m.AlertResolve(ctx(t), store.AlertSlowRun, ""); return err }(), "subject"},
		{"list negative limit", func() error { _, err := m.AlertList(ctx(t), store.AlertListParams{Limit: -1}); return err }(), "limit"},
		{"list huge limit", func() error {
			_, err := m.AlertList(ctx(t), store.AlertListParams{Limit: store.MaxRunListLimit + 1})
			return err
		}(), "limit"},
		{"list bad kind", func() error { _, err := m.AlertList(ctx(t), store.AlertListParams{Kind: "no spaces"}); return err }(), "kind"},
		{"heartbeat empty owner", heartbeat(func(r *store.Replica) { r.Owner = "" }), "owner"},
		{"heartbeat negative pid", heartbeat(func(r *store.Replica) { r.PID = -1 }), "PID"},
		{"heartbeat long host", heartbeat(func(r *store.Replica) { r.Host = strings.Repeat("h", store.MaxReplicaTextBytes+1) }), "host"},
		{"heartbeat NUL version", heartbeat(func(r *store.Replica) { r.Version = "v\x00" }), "NUL"},
		{"heartbeat unnamed job", heartbeat(func(r *store.Replica) { r.Jobs[0].Name = "" }), "name"},
		{"heartbeat duplicate job", heartbeat(func(r *store.Replica) { r.Jobs = append(r.Jobs, r.Jobs[0]) }), "twice"},
		{"heartbeat long schedule", heartbeat(func(r *store.Replica) { r.Jobs[0].Schedule = strings.Repeat("*", store.MaxReplicaJobBytes+1) }), "schedule"},
		{"heartbeat jobs said unchanged", heartbeat(func(r *store.Replica) { r.JobsUnchanged = true }), "JobsUnchanged"},
		{"remove empty owner", m.ReplicaRemove(ctx(t), ""), "owner"},
		{"lease list NUL prefix", leaseListErr(store.LeaseListParams{Prefix: "job:\x00"}), "NUL"},
		{"lease list invalid UTF-8 prefix", leaseListErr(store.LeaseListParams{Prefix: "job:\xff"}), "UTF-8"},
		{"lease list over-long prefix", leaseListErr(store.LeaseListParams{Prefix: long}), "prefix"},
		{"lease list negative limit", leaseListErr(store.LeaseListParams{Limit: -1}), "limit"},
		{"lease list huge limit", leaseListErr(store.LeaseListParams{Limit: store.MaxRunListLimit + 1}), "limit"},
		{"snapshot negative recent runs", snapshotErr(store.MonitorSnapshotParams{RecentRuns: -1}), "recent runs"},
		{"snapshot huge open alerts", snapshotErr(store.MonitorSnapshotParams{OpenAlerts: store.MaxRunListLimit + 1}), "open alerts"},
		{"snapshot known jobs digest with NUL", snapshotErr(store.MonitorSnapshotParams{KnownJobs: map[string]string{"a": "x\x00"}}), "digest"},
		{"snapshot NUL lease prefix", snapshotErr(store.MonitorSnapshotParams{Leases: store.LeaseListParams{Prefix: "job:\x00"}}), "NUL"},
	} {
		if !errors.Is(tc.err, store.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want one wrapping ErrInvalidArgument", tc.name, tc.err)
			continue
		}
		if !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error %q does not mention %q", tc.name, tc.err, tc.mention)
		}
	}
	if list, err := m.AlertList(ctx(t), store.AlertListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("bad input left alerts %+v (%v)", list, err)
	}
	if list, err := m.ReplicaList(ctx(t)); err != nil || len(list) != 0 {
		t.Fatalf("bad input left replicas %+v (%v)", list, err)
	}
}

func monitorClosed(t *testing.T, b Bundle) {
	s := b.Open(t)
	m := monitorOf(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	p := store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "j", RaisedBy: "r"}
	for name, err := range map[string]error{
		"ReplicaHeartbeat": func() error { _, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "o"}); return err }(),
		"ReplicaList":      func() error { _, err := m.ReplicaList(ctx(t)); return err }(),
		"ReplicaRemove":    m.ReplicaRemove(ctx(t), "o"),
		"AlertRaise":       func() error { _, err := m.AlertRaise(ctx(t), p); return err }(),
		"AlertAcknowledge": func() error {
			_, err := m.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: p.Kind, Subject: p.Subject, By: "ops"})
			return err
		}(),
		"AlertResolve":    func() error { _, _, err := m.AlertResolve(ctx(t), p.Kind, p.Subject); return err }(),
		"AlertList":       func() error { _, err := m.AlertList(ctx(t), store.AlertListParams{}); return err }(),
		"LeaseList":       func() error { _, err := m.LeaseList(ctx(t), store.LeaseListParams{}); return err }(),
		"MonitorSnapshot": func() error { _, err := m.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{}); return err }(),
	} {
		wantErrIs(t, name+" after Close", err, store.ErrClosed)
	}
	if list, err := monitorOf(t, b.Store).AlertList(ctx(t), store.AlertListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("calls after Close wrote alerts %+v (%v)", list, err)
	}
}

// alertRace raises one alert from every contender at once, then resolves it
// from every contender at once, several rounds: each round exactly one
// raise reports raised, every contender sees the same alert, and exactly
// one resolve reports resolved. Each round's alert is new.
func alertRace(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	m := monitorOf(t, b.Store)
	const rounds = 5
	var lastID int64
	for round := range rounds {
		type result struct {
			alert store.Alert
			ok    bool
			err   error
		}
		raises := race(stores, func(i int, s store.Store) result {
			res, err := monitorOf(t, s).AlertRaise(ctx(t), store.AlertRaiseParams{
				Kind: store.AlertConfigDrift, Subject: "fechamento", Message: fmt.Sprintf("seen by %d", i), RaisedBy: fmt.Sprintf("replica-%02d", i)})
			return result{res.Alert, res.Raised, err}
		})
		raised, id := 0, int64(0)
		for i, r := range raises {
			if r.err != nil {
				t.Fatalf("round %d, contender %d: AlertRaise: %v", round, i, r.err)
			}
			if r.ok {
				raised++
			}
			if id == 0 {
				id = r.alert.ID
			}
			if r.alert.ID != id {
				t.Fatalf("round %d: contenders saw alerts %d and %d, want one", round, id, r.alert.ID)
			}
		}
		if raised != 1 {
			t.Fatalf("round %d: %d contenders raised the alert, want exactly 1", round, raised)
		}
		if id <= lastID {
			t.Fatalf("round %d: alert id %d, want a new one above %d", round, id, lastID)
		}
		lastID = id

		resolves := race(stores, func(i int, s store.Store) result {
			a, ok, err := monitorOf(t, s).AlertResolve(ctx(t), store.AlertConfigDrift, "fechamento")
			return result{a, ok, err}
		})
		resolved := 0
		for i, r := range resolves {
			if r.err != nil {
				t.Fatalf("round %d, contender %d: AlertResolve: %v", round, i, r.err)
			}
			if r.ok {
				resolved++
				if r.alert.ID != id || r.alert.Open() {
					t.Fatalf("round %d: resolve returned %+v, want alert %d closed", round, r.alert, id)
				}
			}
		}
		if resolved != 1 {
			t.Fatalf("round %d: %d contenders resolved the alert, want exactly 1", round, resolved)
		}
	}
	all, err := m.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(all) != rounds {
		t.Fatalf("after %d rounds, %d alerts (%v), want %d", rounds, len(all), err, rounds)
	}
	for _, a := range all {
		if a.Open() {
			t.Fatalf("alert %+v still open after its round", a)
		}
	}
}

// An acknowledgement holds while the alert is refreshed with its
// fingerprint, whatever its message and details; a refresh with another
// fingerprint ends it (once, told to that caller). The resolved alert
// keeps the acknowledgement it had; the cause back is a new alert, not
// acknowledged.
func alertAckHoldsUntilChange(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	p := store.AlertRaiseParams{Kind: store.AlertLeaseStuck, Subject: "fechamento", Message: "held 10m", RaisedBy: "replica-a",
		Details: map[string]string{"held": "10m", "owner": "a"}, Fingerprint: "owner=a generation=7"}
	first, _ := raise(t, m, p)
	after(t, b.Store, first.LastSeenAt)
	acked, err := monitorOf(t, b.Open(t)).AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{
		Kind: p.Kind, Subject: p.Subject, ID: first.ID, By: "ana", Note: "a long backfill, on purpose"})
	if err != nil {
		t.Fatalf("AlertAcknowledge: %v", err)
	}
	if acked.ID != first.ID || acked.Ack.By != "ana" || acked.Ack.Note != "a long backfill, on purpose" ||
		!acked.Ack.At.After(first.LastSeenAt) || acked.Ack.At.Location() != time.UTC || !acked.Acknowledged() {
		t.Fatalf("acknowledged alert = %+v; want alert %d acknowledged by ana, with the note, at the store's clock after %s", acked, first.ID, first.LastSeenAt)
	}
	listed := func() store.Alert {
		t.Helper()
		list, err := m.AlertList(ctx(t), store.AlertListParams{Kind: p.Kind, Subject: p.Subject})
		if err != nil || len(list) == 0 {
			t.Fatalf("AlertList = %+v, %v", list, err)
		}
		return list[0]
	}
	if got := listed(); !reflect.DeepEqual(got.Ack, acked.Ack) || got.Fingerprint != p.Fingerprint {
		t.Fatalf("listed %+v; want the acknowledgement %+v and fingerprint %q", got, acked.Ack, p.Fingerprint)
	}

	// The same problem, measured again: the acknowledgement holds.
	p.Message, p.Details = "held 20m", map[string]string{"held": "20m", "owner": "a"}
	res, err := m.AlertRaise(ctx(t), p)
	if err != nil || res.Raised || !res.EndedAck.IsZero() || !reflect.DeepEqual(res.Alert.Ack, acked.Ack) || res.Alert.Message != p.Message {
		t.Fatalf("refresh with the same fingerprint = %+v, %v; want the acknowledgement kept, none ended", res, err)
	}
	if got := listed(); !reflect.DeepEqual(got.Ack, acked.Ack) {
		t.Fatalf("after a refresh with the same fingerprint, listed ack %+v, want %+v", got.Ack, acked.Ack)
	}

	// Another problem under the same alert: it ends, and says whose.
	p.Fingerprint = "owner=b generation=8"
	res, err = monitorOf(t, b.Open(t)).AlertRaise(ctx(t), p)
	if err != nil || res.Raised || !reflect.DeepEqual(res.EndedAck, acked.Ack) || !res.Alert.Ack.IsZero() ||
		res.Alert.Acknowledged() || res.Alert.ID != first.ID || res.Alert.Fingerprint != p.Fingerprint {
		t.Fatalf("refresh with another fingerprint = %+v, %v; want acknowledgement %+v ended, alert %d no longer acknowledged", res, err, acked.Ack, first.ID)
	}
	if got := listed(); !got.Ack.IsZero() || got.Fingerprint != p.Fingerprint {
		t.Fatalf("after the alert changed, listed %+v; want no acknowledgement", got)
	}
	res, err = m.AlertRaise(ctx(t), p)
	if err != nil || !res.EndedAck.IsZero() {
		t.Fatalf("the next refresh = %+v, %v; want no acknowledgement ended (it ended already)", res, err)
	}

	// Acknowledged again, then resolved: the closed row keeps it.
	again, err := m.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: p.Kind, Subject: p.Subject, By: "bruno"})
	if err != nil || again.Ack.By != "bruno" || again.Ack.Note != "" {
		t.Fatalf("second acknowledgement = %+v, %v", again, err)
	}
	closed, ok, err := m.AlertResolve(ctx(t), p.Kind, p.Subject)
	if err != nil || !ok || !reflect.DeepEqual(closed.Ack, again.Ack) || closed.Acknowledged() {
		t.Fatalf("resolved = %+v, %v, %v; want the acknowledgement kept on the closed alert, not counted as acknowledged", closed, ok, err)
	}
	// The cause comes back: a new alert, which nobody acknowledged.
	back, raised := raise(t, m, p)
	if !raised || back.ID == first.ID || !back.Ack.IsZero() {
		t.Fatalf("raised again = %+v, %v; want a new alert, not acknowledged", back, raised)
	}
	if list, err := m.AlertList(ctx(t), store.AlertListParams{Kind: p.Kind}); err != nil || len(list) != 2 ||
		!list[0].Ack.IsZero() || list[1].Ack.By != "bruno" {
		t.Fatalf("AlertList = %+v, %v; want the new alert unacknowledged, the resolved one acknowledged by bruno", list, err)
	}
}

// An acknowledgement needs an open alert of (kind, subject), and the one
// named by ID when it is given; otherwise ErrNotFound, nothing written.
func alertAckNeedsOpenAlert(t *testing.T, b Bundle) {
	m := monitorOf(t, b.Store)
	ack := func(kind store.AlertKind, subject string, id int64) error {
		_, err := m.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: kind, Subject: subject, ID: id, By: "ops"})
		return err
	}
	wantErrIs(t, "acknowledging an alert never raised", ack(store.AlertFailing, "report", 0), store.ErrNotFound)
	gone, _ := raise(t, m, store.AlertRaiseParams{Kind: store.AlertFailing, Subject: "report", RaisedBy: "r"})
	if _, ok, err := m.AlertResolve(ctx(t), store.AlertFailing, "report"); err != nil || !ok {
		t.Fatalf("AlertResolve = %v, %v", ok, err)
	}
	wantErrIs(t, "acknowledging a resolved alert", ack(store.AlertFailing, "report", 0), store.ErrNotFound)
	open, _ := raise(t, m, store.AlertRaiseParams{Kind: store.AlertFailing, Subject: "report", RaisedBy: "r"})
	wantErrIs(t, "acknowledging the open alert under the resolved one's ID", ack(store.AlertFailing, "report", gone.ID), store.ErrNotFound)
	wantErrIs(t, "acknowledging another kind", ack(store.AlertSlowRun, "report", 0), store.ErrNotFound)
	wantErrIs(t, "acknowledging another subject", ack(store.AlertFailing, "other", 0), store.ErrNotFound)
	list, err := m.AlertList(ctx(t), store.AlertListParams{})
	if err != nil || len(list) != 2 {
		t.Fatalf("AlertList = %+v, %v", list, err)
	}
	for _, a := range list {
		if !a.Ack.IsZero() {
			t.Fatalf("a refused acknowledgement wrote %+v", a)
		}
	}
	if err := ack(store.AlertFailing, "report", open.ID); err != nil {
		t.Fatalf("acknowledging the open alert by its ID: %v", err)
	}
}

// Contenders refresh an acknowledged alert with a new fingerprint at once:
// exactly one ends the acknowledgement, and every one sees it ended.
func alertAckEndRace(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	m := monitorOf(t, b.Store)
	p := store.AlertRaiseParams{Kind: store.AlertConfigDrift, Subject: "fechamento", RaisedBy: "replica-a", Fingerprint: "v0"}
	first, _ := raise(t, m, p)
	const rounds = 5
	for round := range rounds {
		ack, err := m.AlertAcknowledge(ctx(t), store.AlertAcknowledgeParams{Kind: p.Kind, Subject: p.Subject, ID: first.ID, By: fmt.Sprintf("ops-%d", round)})
		if err != nil {
			t.Fatalf("round %d: AlertAcknowledge: %v", round, err)
		}
		type result struct {
			res store.AlertRaiseResult
			err error
		}
		results := race(stores, func(i int, s store.Store) result {
			res, err := monitorOf(t, s).AlertRaise(ctx(t), store.AlertRaiseParams{Kind: p.Kind, Subject: p.Subject,
				Message: fmt.Sprintf("seen by %d", i), RaisedBy: fmt.Sprintf("replica-%02d", i), Fingerprint: fmt.Sprintf("v%d", round+1)})
			return result{res, err}
		})
		ended := 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("round %d, contender %d: AlertRaise: %v", round, i, r.err)
			}
			if r.res.Raised || r.res.Alert.ID != first.ID || !r.res.Alert.Ack.IsZero() {
				t.Fatalf("round %d, contender %d: %+v; want alert %d refreshed, not acknowledged", round, i, r.res, first.ID)
			}
			if !r.res.EndedAck.IsZero() {
				ended++
				if !reflect.DeepEqual(r.res.EndedAck, ack.Ack) {
					t.Fatalf("round %d: ended %+v, want %+v", round, r.res.EndedAck, ack.Ack)
				}
			}
		}
		if ended != 1 {
			t.Fatalf("round %d: %d contenders ended the acknowledgement, want exactly 1", round, ended)
		}
	}
}
