package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// hostileNames are names an attacker or a careless operator might send.
// ok says whether the store must accept them (and give them back byte for
// byte) or refuse them with ErrInvalidArgument.
var hostileNames = []struct {
	label, name string
	ok          bool
}{
	{"quotes", `it's a "quoted" \name\`, true},
	{"sql", `'; DROP TABLE runs; --`, true},
	{"sql2", `x'); DELETE FROM leases; --`, true},
	{"sql-prefixed", `'; DROP TABLE cronfence_runs; --`, true},
	{"sql2-prefixed", `x'); DELETE FROM cronfence_leases; --`, true},
	{"dollar-quote", `$$; DROP SCHEMA public; $$`, true},
	{"newlines", "line1\nline2\r\nline3", true},
	{"rtl", "\u202Eevil\u202C\u200F", true},
	{"emoji", "⏰ backup 🚀👩‍👩‍👧", true},
	{"combining", "e\u0301\u0301\u0301 ç", true},
	{"dotdot", "../../etc/passwd", true},
	{"escaped-slash", "a%2Fb%00", true},
	{"slash", "reports/daily", true},
	{"like-wildcards", `%_\`, true},
	{"max-length", strings.Repeat("é", store.MaxNameLength/2), true},
	{"nul", "a\x00b", false},
	{"empty", "", false},
	{"invalid-utf8", "\xff\xfe", false},
	{"over-max", strings.Repeat("é", store.MaxNameLength/2) + "x", false},
	{"10KB", strings.Repeat("x", 10<<10), false},
}

// hostileTests gives each hostile name a test, and so a store, of its own:
// the accepted ones are listed back and must be the only rows there.
var hostileTests = func() []namedTest {
	var tests []namedTest
	for _, tc := range hostileNames {
		tests = append(tests, namedTest{name: tc.label, fn: func(t *testing.T, b Bundle) {
			hostileName(t, b, tc.name, tc.ok)
		}})
	}
	return tests
}()

// hostileName checks that every store call taking a name either keeps name
// exactly or, when !ok, refuses it naming the field, with nothing written.
func hostileName(t *testing.T, b Bundle, name string, ok bool) {
	c := ctx(t)
	s := b.Store
	slot := time.Date(2026, 9, 25, 3, 0, 0, 0, time.UTC)
	refused := func(before, call, field string, err error) {
		t.Helper()
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: got %v, want ErrInvalidArgument naming %q", call, err, field)
		}
		if after := b.Dump(t); after != before {
			t.Errorf("%s was refused but changed the tables:\nbefore:\n%s\nafter:\n%s", call, before, after)
		}
	}

	before := b.Dump(t)
	lease, acquired, err := s.LeaseAcquire(c, store.LeaseAcquireParams{Name: name, Owner: name, TTL: time.Minute})
	if !ok {
		refused(before, "LeaseAcquire", "lease name", err)
	} else if err != nil || !acquired || lease.Name != name || lease.Owner != name {
		t.Errorf("LeaseAcquire: %+v %v %v", lease, acquired, err)
	} else if got, err := s.LeaseGet(c, name); err != nil || got.Name != name || got.Owner != name {
		t.Errorf("LeaseGet: %q %q %v", got.Name, got.Owner, err)
	} else if released, err := s.LeaseRelease(c, lease.Ref()); !released || err != nil {
		t.Errorf("LeaseRelease: %v %v", released, err)
	}

	before = b.Dump(t)
	claim, err := s.SlotClaim(c, store.SlotClaimParams{
		Job: name, Slot: slot, LeaseName: name, Owner: "owner-1", TTL: time.Minute, MaxAttempts: 1,
	})
	if !ok {
		refused(before, "SlotClaim", "job", err)
	} else if err != nil || !claim.Claimed || claim.Slot.Job != name || claim.Lease.Name != name {
		t.Errorf("SlotClaim: %+v %v", claim, err)
	} else if got, err := s.SlotGet(c, name, slot); err != nil || got.Job != name || got.LeaseName != name {
		t.Errorf("SlotGet: %q %q %v", got.Job, got.LeaseName, err)
	}

	before = b.Dump(t)
	off := false
	st, err := s.JobStateSet(c, store.JobStateSetParams{Job: name, Enabled: &off, By: "ops", Note: name})
	switch {
	case !ok:
		refused(before, "JobStateSet", "job", err)
	case err != nil || st.Job != name || st.Note != name:
		t.Errorf("JobStateSet: %+v %v", st, err)
	default:
		states, err := s.JobStateList(c)
		if err != nil || len(states) != 1 || states[0].Job != name || states[0].Note != name {
			t.Errorf("JobStateList: %+v %v", states, err)
		}
	}

	before = b.Dump(t)
	run, err := s.RunInsert(c, store.Run{Job: name, Slot: slot, Owner: "owner-1", Skipped: true, Success: true, Reason: "x"})
	switch {
	case !ok:
		refused(before, "RunInsert", "job", err)
	case err != nil || run.Job != name:
		t.Errorf("RunInsert: %+v %v", run, err)
	default:
		runs, err := s.RunList(c, store.RunListParams{Job: name})
		if err != nil || len(runs) != 1 || runs[0].Job != name || runs[0].ID != run.ID {
			t.Errorf("RunList: %+v %v", runs, err)
		}
	}

	// A stored schedule's name, kind and author: its name is a job's, held
	// to MaxScheduleNameLength.
	before = b.Dump(t)
	sch, err := s.ScheduleCreate(c, store.ScheduleCreateParams{Name: name, Settings: store.ScheduleSettings{Spec: "@every 1m", Kind: name}, By: name})
	switch {
	case !ok || len(name) > store.MaxScheduleNameLength:
		refused(before, "ScheduleCreate", "name", err)
	case err != nil || sch.Name != name || sch.Kind != name || sch.CreatedBy != name:
		t.Errorf("ScheduleCreate: %+v %v", sch, err)
	default:
		got, err := s.ScheduleGet(c, name)
		list, listErr := s.ScheduleList(c, store.ScheduleListParams{})
		audit, auditErr := s.ScheduleAudit(c, store.ScheduleAuditParams{Name: name})
		if err != nil || got.Name != name || got.Kind != name || got.ID != sch.ID {
			t.Errorf("ScheduleGet: %+v %v", got, err)
		}
		if listErr != nil || len(list) != 1 || list[0].Name != name {
			t.Errorf("ScheduleList: %+v %v", list, listErr)
		}
		if auditErr != nil || len(audit) != 1 || audit[0].Name != name || audit[0].By != name || audit[0].After == nil || audit[0].After.Kind != name {
			t.Errorf("ScheduleAudit: %+v %v", audit, auditErr)
		}
	}
}
