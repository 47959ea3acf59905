package storetest

import (
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// A broken pause table fails open (the design seed's rule): with the pause
// overrides unreadable (job_state renamed by hand), claims go on, on each
// job's declared value, and say so; the schema checks let a replica start
// on it; once the table reads again, its overrides decide again.
var pauseTableTests = []namedTest{
	{name: "RenamedFailsOpen", fn: func(t *testing.T, b Bundle) { renamedFailsOpen(t, b, false) }},
	// The same for claims a replica's timer sends ahead of their slots
	// (WaitDue, on the database clock), which PostgreSQL sends another
	// way (claim_committed).
	{name: "RenamedFailsOpenForClaimsSentAhead", fn: func(t *testing.T, b Bundle) { renamedFailsOpen(t, b, true) }},
}

// renamedFailsOpen is RenamedFailsOpen, its claims sent as a replica's
// timer sends them when ahead is set.
func renamedFailsOpen(t *testing.T, b Bundle, ahead bool) {
	now := dbNow(t, b.Store)
	if _, err := b.Store.JobStateSet(ctx(t), store.JobStateSetParams{Job: "overridden", Enabled: ptr(false), By: "ana"}); err != nil {
		t.Fatal(err)
	}
	item := func(job string, declaredOff bool, slot time.Time) store.SlotClaimParams {
		p := claimParams(slot, "a", now)
		p.Job, p.LeaseName, p.DeclaredDisabled = job, "job:"+job, declaredOff
		if ahead {
			p.Now, p.WaitDue = time.Time{}, true
		}
		return p
	}
	b.RenameTable(t, "job_state", false)
	slot := now.Add(-time.Minute)
	results, err := b.Open(t).SlotClaimBatch(ctx(t), []store.SlotClaimParams{
		item("declared-on", false, slot), item("declared-off", true, slot), item("overridden", false, slot),
	})
	if err != nil {
		t.Fatalf("claim with job_state renamed: %v; want the declared values to decide", err)
	}
	for i, want := range []struct {
		claimed bool
		refusal store.ClaimRefusal
	}{{true, ""}, {false, store.ClaimPaused}, {true, ""}} {
		r := results[i]
		if r.Claimed != want.claimed || r.Refusal != want.refusal || !r.PauseStateUnread {
			t.Errorf("item %d: %+v; want claimed %v, refusal %q, and the pause state reported unread", i, r, want.claimed, want.refusal)
		}
	}
	if db, bin, err := b.Open(t).SchemaVersion(ctx(t)); err != nil || db != bin {
		t.Fatalf("SchemaVersion with job_state renamed = %d, %d, %v; want a replica able to start", db, bin, err)
	}
	if err := b.Open(t).Migrate(ctx(t)); err != nil {
		t.Fatalf("Migrate with job_state renamed: %v", err)
	}

	// Back: the override decides again, and nothing says unread.
	b.RenameTable(t, "job_state", true)
	next := now.Add(-30 * time.Second)
	results, err = b.Open(t).SlotClaimBatch(ctx(t), []store.SlotClaimParams{
		item("declared-on", false, next), item("overridden", false, next),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := results[1]; r.Claimed || r.Refusal != store.ClaimPaused || r.PauseStateUnread || results[0].PauseStateUnread {
		t.Fatalf("claims with job_state back = %+v; want the override honoured again", results)
	}
}
