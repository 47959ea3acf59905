package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// The Schedule group: the stored schedules (store.Schedules) and the
// handler kinds replicas record beside their jobs (Replica.Kinds).
var scheduleTests = []namedTest{
	{name: "CreateGetList", fn: scheduleCreateGetList},
	{name: "ListPages", fn: scheduleListPages},
	{name: "UpdateComparesVersions", fn: scheduleUpdateVersions},
	{name: "DeleteComparesVersions", fn: scheduleDeleteVersions},
	{name: "CreateOfATakenName", fn: scheduleCreateTaken},
	{name: "RecreatedIsANewSchedule", fn: scheduleRecreated},
	{name: "ChangeLog", fn: scheduleChangeLog},
	{name: "ChangeLogPages", fn: scheduleChangeLogPages},
	{name: "Audit", fn: scheduleAudit},
	{name: "BadInputRejectedWithoutWriting", fn: scheduleBadInput},
	{name: "Closed", fn: scheduleClosed},
	{name: "KindsKeptWithJobs", fn: replicaKinds},
	{name: "UpdateOneWinnerPerVersion", serial: true, fn: raceScheduleUpdate},
	{name: "CreateOneWinnerPerName", serial: true, fn: raceScheduleCreate},
	{name: "ChangeLogInOrderUnderConcurrentWriters", serial: true, fn: raceScheduleChangeLog},
}

// sampleSettings sets every setting, so a round trip that drops one shows;
// its arguments are spelled as no encoder would (keys unsorted, spaces, a
// newline), so a store that re-encodes them shows too.
func sampleSettings() store.ScheduleSettings {
	return store.ScheduleSettings{
		Spec: "0 2 * * *", TimeZone: "America/Sao_Paulo", Kind: "send-report",
		Args: json.RawMessage(`{"tenant": "loja-42",  "formats":["pdf", "csv"],
			"copies": 3.0, "note": "fechamento <diário> & \"mensal\" \u00e9"}`),
		Overlap: "buffer-one", CatchUpWindow: 6 * time.Hour, LeaseTTL: time.Minute, Timeout: 90 * time.Minute,
		Deadline: 2 * time.Hour, MaxAttempts: 3, RetryBackoff: 30 * time.Second, Disabled: true,
		CatchUp: "all", MaxCatchUp: 24, Jitter: 90 * time.Second,
		Exclude: []string{"2026-12-24/2026-12-27", "* * 1 1 *", `"quoted" é`},
	}
}

// otherSettings differ from sampleSettings in every setting, and have no
// arguments and the zero values of the rest.
func otherSettings() store.ScheduleSettings {
	return store.ScheduleSettings{Spec: "@every 10s", Kind: "ping"}
}

// sameSettings compares settings, the arguments byte for byte (a store
// gives them back as given: spacing, key order and all), empty as none.
func sameSettings(a, b store.ScheduleSettings) bool {
	argsA, argsB := a.Args, b.Args
	a.Args, b.Args = nil, nil
	return reflect.DeepEqual(a, b) && bytes.Equal(argsA, argsB)
}

// sameSchedule compares schedules, the arguments as sameSettings does.
func sameSchedule(a, b store.Schedule) bool {
	setA, setB := a.ScheduleSettings, b.ScheduleSettings
	a.ScheduleSettings, b.ScheduleSettings = store.ScheduleSettings{}, store.ScheduleSettings{}
	return reflect.DeepEqual(a, b) && sameSettings(setA, setB)
}

func mustCreateSchedule(t *testing.T, s store.Store, name string, set store.ScheduleSettings) store.Schedule {
	t.Helper()
	sch, err := s.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: name, Settings: set, By: "ops"})
	if err != nil {
		t.Fatalf("ScheduleCreate(%q): %v", name, err)
	}
	return sch
}

func mustGetSchedule(t *testing.T, s store.Store, name string) store.Schedule {
	t.Helper()
	sch, err := s.ScheduleGet(ctx(t), name)
	if err != nil {
		t.Fatalf("ScheduleGet(%q): %v", name, err)
	}
	return sch
}

func mustChanges(t *testing.T, s store.Store, p store.ScheduleChangesParams) store.ScheduleChanges {
	t.Helper()
	res, err := s.ScheduleChanges(ctx(t), p)
	if err != nil {
		t.Fatalf("ScheduleChanges(%+v): %v", p, err)
	}
	return res
}

func wantConflict(t *testing.T, what string, err error, want store.ConflictError) {
	t.Helper()
	var ce *store.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrConflict) || *ce != want {
		t.Fatalf("%s: error = %v, want a *ConflictError %+v", what, err, want)
	}
}

// A created schedule is read back as it was written, by this replica and
// another, at version 1, with a new ID, and its times from the store's
// clock.
func scheduleCreateGetList(t *testing.T, b Bundle) {
	before := dbNow(t, b.Store)
	set := sampleSettings()
	created := mustCreateSchedule(t, b.Store, "fechamento/loja-42", set)
	if created.ID <= 0 || created.Name != "fechamento/loja-42" || created.Version != 1 || !sameSettings(created.ScheduleSettings, set) {
		t.Fatalf("ScheduleCreate returned %+v; want ID > 0, version 1 and the settings given", created)
	}
	if created.CreatedAt.Before(before) || created.CreatedAt.Location() != time.UTC || !created.UpdatedAt.Equal(created.CreatedAt) ||
		created.CreatedBy != "ops" || created.UpdatedBy != "ops" {
		t.Fatalf("ScheduleCreate returned times %s/%s by %q/%q; want the store's clock (at or after %s) in UTC, twice, by ops",
			created.CreatedAt, created.UpdatedAt, created.CreatedBy, created.UpdatedBy, before)
	}
	if got, err := b.Open(t).ScheduleGet(ctx(t), created.Name); err != nil || !sameSchedule(got, created) {
		t.Fatalf("ScheduleGet from another replica = %+v, %v; want %+v", got, err, created)
	}
	bare := mustCreateSchedule(t, b.Store, "ping", otherSettings())
	if bare.ID == created.ID || bare.Args != nil || bare.TimeZone != "" {
		t.Fatalf("second schedule %+v; want an ID of its own, no arguments (nil) and no zone", bare)
	}
	if got := mustGetSchedule(t, b.Store, "ping"); !sameSchedule(got, bare) || got.Args != nil {
		t.Fatalf("ScheduleGet(ping) = %+v; want %+v, arguments nil", got, bare)
	}
	list, err := b.Store.ScheduleList(ctx(t), store.ScheduleListParams{})
	if err != nil || len(list) != 2 || !sameSchedule(list[0], created) || !sameSchedule(list[1], bare) {
		t.Fatalf("ScheduleList = %+v, %v; want both, by name", list, err)
	}
	if _, err := b.Store.ScheduleGet(ctx(t), "absent"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ScheduleGet(absent): %v, want ErrNotFound", err)
	}
}

// ScheduleList pages through the schedules in byte order of their names:
// each page starts after the last name of the one before, and together
// they hold every schedule once.
func scheduleListPages(t *testing.T, b Bundle) {
	names := []string{"b", "a", "B", "é", "a b", "z", "_", "aa", "0", "Z"}
	for _, n := range names {
		mustCreateSchedule(t, b.Store, n, otherSettings())
	}
	want := []string{"0", "B", "Z", "_", "a", "a b", "aa", "b", "z", "é"} // byte order
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, err := b.Store.ScheduleList(ctx(t), store.ScheduleListParams{After: after, Limit: 3})
		if err != nil {
			t.Fatalf("ScheduleList after %q: %v", after, err)
		}
		if len(page) > 3 || pages > len(names) {
			t.Fatalf("page after %q has %d schedules (limit 3), or too many pages", after, len(page))
		}
		for _, s := range page {
			got = append(got, s.Name)
		}
		if len(page) < 3 {
			break
		}
		after = page[len(page)-1].Name
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the pages hold %q, want %q", got, want)
	}
	all, err := b.Store.ScheduleList(ctx(t), store.ScheduleListParams{After: "a", Limit: store.MaxScheduleListLimit})
	if err != nil || len(all) != 5 || all[0].Name != "a b" {
		t.Fatalf("ScheduleList after %q = %d schedules, %v; want the 5 after it", "a", len(all), err)
	}
}

// An update at the version read replaces every setting and gives the next
// version; one at another version is refused with the current version, and
// one of a schedule that does not exist with ErrNotFound, both writing
// nothing.
func scheduleUpdateVersions(t *testing.T, b Bundle) {
	created := mustCreateSchedule(t, b.Store, "report", sampleSettings())
	after(t, b.Store, created.UpdatedAt)
	updated, err := b.Open(t).ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: otherSettings(), By: "alice"})
	if err != nil {
		t.Fatalf("ScheduleUpdate at version 1: %v", err)
	}
	want := created
	want.ScheduleSettings, want.Version, want.UpdatedAt, want.UpdatedBy = otherSettings(), 2, updated.UpdatedAt, "alice"
	if !sameSchedule(updated, want) || !updated.UpdatedAt.After(created.UpdatedAt) {
		t.Fatalf("ScheduleUpdate returned\n%+v\nwant every setting replaced, version 2, updated later by alice, the rest kept:\n%+v", updated, want)
	}
	if got := mustGetSchedule(t, b.Store, "report"); !sameSchedule(got, updated) || got.Args != nil {
		t.Fatalf("ScheduleGet after the update = %+v, want %+v (no arguments: nil)", got, updated)
	}

	dump := b.Dump(t)
	_, err = b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: sampleSettings(), By: "bob"})
	wantConflict(t, "ScheduleUpdate at the stale version 1", err, store.ConflictError{Name: "report", Version: 1, Current: 2})
	_, err = b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 3, Settings: sampleSettings(), By: "bob"})
	wantConflict(t, "ScheduleUpdate at a version to come", err, store.ConflictError{Name: "report", Version: 3, Current: 2})
	_, err = b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "absent", Version: 1, Settings: sampleSettings(), By: "bob"})
	wantErrIs(t, "ScheduleUpdate of no schedule", err, store.ErrNotFound)
	if after := b.Dump(t); after != dump {
		t.Fatalf("refused updates changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}

	again, err := b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 2, Settings: sampleSettings(), By: "bob"})
	if err != nil || again.Version != 3 || !sameSettings(again.ScheduleSettings, sampleSettings()) || again.ID != created.ID {
		t.Fatalf("ScheduleUpdate at version 2 = %+v, %v; want version 3, the sample settings, the same ID", again, err)
	}
}

// A delete at the version read (or at any, with version 0) removes the
// schedule and returns it as it was; one at another version is refused,
// and one of a schedule that does not exist, or no longer, is ErrNotFound.
func scheduleDeleteVersions(t *testing.T, b Bundle) {
	mustCreateSchedule(t, b.Store, "a", sampleSettings())
	updated, err := b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "a", Version: 1, Settings: otherSettings(), By: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	mustCreateSchedule(t, b.Store, "b", sampleSettings())

	dump := b.Dump(t)
	_, err = b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "a", Version: 1, By: "ops"})
	wantConflict(t, "ScheduleDelete at the stale version 1", err, store.ConflictError{Name: "a", Version: 1, Current: 2})
	_, err = b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "absent", By: "ops"})
	wantErrIs(t, "ScheduleDelete of no schedule", err, store.ErrNotFound)
	if after := b.Dump(t); after != dump {
		t.Fatalf("refused deletes changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}

	deleted, err := b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "a", Version: 2, By: "ops"})
	if err != nil || !sameSchedule(deleted, updated) {
		t.Fatalf("ScheduleDelete at version 2 = %+v, %v; want the schedule as it was, %+v", deleted, err, updated)
	}
	if _, err := b.Store.ScheduleGet(ctx(t), "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ScheduleGet after the delete: %v, want ErrNotFound", err)
	}
	_, err = b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "a", Version: 2, By: "ops"})
	wantErrIs(t, "ScheduleDelete again", err, store.ErrNotFound)
	_, err = b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "a", Version: 2, Settings: sampleSettings(), By: "ops"})
	wantErrIs(t, "ScheduleUpdate of a deleted schedule", err, store.ErrNotFound)

	if d, err := b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "b", By: "ops"}); err != nil || d.Name != "b" || d.Version != 1 {
		t.Fatalf("ScheduleDelete at any version = %+v, %v; want b at version 1", d, err)
	}
	if list, err := b.Store.ScheduleList(ctx(t), store.ScheduleListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("ScheduleList after both deletes = %+v, %v; want none", list, err)
	}
}

// A create of a name a schedule has is a conflict naming its version, and
// writes nothing.
func scheduleCreateTaken(t *testing.T, b Bundle) {
	mustCreateSchedule(t, b.Store, "report", sampleSettings())
	if _, err := b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: sampleSettings(), By: "ops"}); err != nil {
		t.Fatal(err)
	}
	dump := b.Dump(t)
	_, err := b.Open(t).ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: "report", Settings: otherSettings(), By: "bob"})
	wantConflict(t, "ScheduleCreate of a taken name", err, store.ConflictError{Name: "report", Current: 2})
	if after := b.Dump(t); after != dump {
		t.Fatalf("a refused create changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
}

// A schedule deleted and created again under its name is a new schedule:
// an ID never used before, version 1, a history of its own in the log.
func scheduleRecreated(t *testing.T, b Bundle) {
	seen := map[int64]bool{}
	var last int64
	for round := range 3 {
		sch := mustCreateSchedule(t, b.Store, "tenant-7", sampleSettings())
		other := mustCreateSchedule(t, b.Store, fmt.Sprintf("other-%d", round), otherSettings())
		for _, s := range []store.Schedule{sch, other} {
			if seen[s.ID] || s.ID <= last || s.Version != 1 {
				t.Fatalf("round %d: %q got ID %d at version %d; want a new ID (after %d), version 1", round, s.Name, s.ID, s.Version, last)
			}
			seen[s.ID], last = true, s.ID
		}
		for _, s := range []store.Schedule{sch, other} {
			if _, err := b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: s.Name, Version: 1, By: "ops"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	changes, err := b.Store.ScheduleAudit(ctx(t), store.ScheduleAuditParams{Name: "tenant-7"})
	if err != nil || len(changes) != 6 {
		t.Fatalf("audit of tenant-7 = %d changes, %v; want 6 (three creates, three deletes)", len(changes), err)
	}
	ids := map[int64]int{}
	for _, ch := range changes {
		ids[ch.ScheduleID]++
	}
	if len(ids) != 3 {
		t.Fatalf("audit of tenant-7 names schedule IDs %v; want three, a create and a delete each", ids)
	}
}

// Every change writes one entry of the log, with consecutive sequence
// numbers from 1, what it did, to which schedule, who and when, and the
// settings before and after.
func scheduleChangeLog(t *testing.T, b Bundle) {
	if empty := mustChanges(t, b.Store, store.ScheduleChangesParams{}); len(empty.Changes) != 0 || empty.Latest != 0 || empty.Oldest != 0 {
		t.Fatalf("ScheduleChanges of an empty log = %+v; want nothing, Latest and Oldest 0", empty)
	}
	created := mustCreateSchedule(t, b.Store, "report", sampleSettings())
	ping := mustCreateSchedule(t, b.Store, "ping", otherSettings())
	updated, err := b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: 1, Settings: otherSettings(), By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	deleteAt := dbNow(t, b.Store)
	deleted, err := b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "ping", By: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	sample, other := sampleSettings(), otherSettings()
	want := []store.ScheduleChange{
		{Seq: 1, Action: store.ScheduleCreated, Name: "report", ScheduleID: created.ID, Version: 1, By: "ops", At: created.CreatedAt, After: &sample},
		{Seq: 2, Action: store.ScheduleCreated, Name: "ping", ScheduleID: ping.ID, Version: 1, By: "ops", At: ping.CreatedAt, After: &other},
		{Seq: 3, Action: store.ScheduleUpdated, Name: "report", ScheduleID: created.ID, Version: 2, By: "alice", At: updated.UpdatedAt, Before: &sample, After: &other},
		{Seq: 4, Action: store.ScheduleDeleted, Name: "ping", ScheduleID: deleted.ID, Version: 1, By: "bob", Before: &other},
	}
	log := mustChanges(t, b.Open(t), store.ScheduleChangesParams{})
	if log.Latest != 4 || log.Oldest != 1 || len(log.Changes) != len(want) {
		t.Fatalf("ScheduleChanges = %d changes, Latest %d, Oldest %d; want 4, 4, 1: %+v", len(log.Changes), log.Latest, log.Oldest, log.Changes)
	}
	for i, got := range log.Changes {
		w := want[i]
		if w.Action == store.ScheduleDeleted {
			// The delete's time is the store's clock, after the read
			// before it.
			if got.At.Before(deleteAt) || got.At.Location() != time.UTC {
				t.Fatalf("change %d at %s; want the store's clock, at or after %s, in UTC", got.Seq, got.At, deleteAt)
			}
			w.At = got.At
		}
		if !sameChange(got, w) {
			t.Fatalf("change %d =\n%+v (before %+v, after %+v)\nwant\n%+v (before %+v, after %+v)", i, got, got.Before, got.After, w, w.Before, w.After)
		}
	}
}

// sameChange compares change log entries, the settings as sameSettings
// does.
func sameChange(a, b store.ScheduleChange) bool {
	same := func(x, y *store.ScheduleSettings) bool {
		return (x == nil) == (y == nil) && (x == nil || sameSettings(*x, *y))
	}
	if !same(a.Before, b.Before) || !same(a.After, b.After) {
		return false
	}
	a.Before, a.After, b.Before, b.After = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}

// ScheduleChanges pages through the log oldest first after a sequence
// number, and says the newest and oldest it holds on every page.
func scheduleChangeLogPages(t *testing.T, b Bundle) {
	for i := range 5 {
		mustCreateSchedule(t, b.Store, fmt.Sprintf("s%d", i), otherSettings())
	}
	head := mustChanges(t, b.Store, store.ScheduleChangesParams{Limit: 1})
	if head.Latest != 5 || head.Oldest != 1 || len(head.Changes) != 1 || head.Changes[0].Seq != 1 {
		t.Fatalf("ScheduleChanges with limit 1 = %+v; want change 1, Latest 5, Oldest 1", head)
	}
	var seqs []int64
	for after := int64(0); ; {
		page := mustChanges(t, b.Store, store.ScheduleChangesParams{After: after, Limit: 2})
		if page.Latest != 5 || page.Oldest != 1 || len(page.Changes) > 2 {
			t.Fatalf("page after %d = %+v; want at most 2 changes, Latest 5, Oldest 1", after, page)
		}
		for _, ch := range page.Changes {
			seqs = append(seqs, ch.Seq)
		}
		if len(page.Changes) < 2 {
			break
		}
		after = page.Changes[len(page.Changes)-1].Seq
	}
	if !reflect.DeepEqual(seqs, []int64{1, 2, 3, 4, 5}) {
		t.Fatalf("the pages hold changes %v, want 1 to 5 once each", seqs)
	}
	if tail := mustChanges(t, b.Store, store.ScheduleChangesParams{After: 5}); len(tail.Changes) != 0 || tail.Latest != 5 {
		t.Fatalf("ScheduleChanges after the newest = %+v; want none, Latest 5", tail)
	}
}

// ScheduleAudit lists the log newest first, of every schedule or of one
// name, a page before a sequence number.
func scheduleAudit(t *testing.T, b Bundle) {
	for _, n := range []string{"a", "b", "a2"} {
		mustCreateSchedule(t, b.Store, n, otherSettings())
	}
	for v := int64(1); v <= 3; v++ {
		if _, err := b.Store.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "a", Version: v, Settings: sampleSettings(), By: "ops"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Store.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "b", By: "ops"}); err != nil {
		t.Fatal(err)
	}
	// The log: 1 a, 2 b, 3 a2, 4 5 6 a updated, 7 b deleted.
	seqsOf := func(p store.ScheduleAuditParams) []int64 {
		t.Helper()
		changes, err := b.Store.ScheduleAudit(ctx(t), p)
		if err != nil {
			t.Fatalf("ScheduleAudit(%+v): %v", p, err)
		}
		var seqs []int64
		for _, ch := range changes {
			if p.Name != "" && ch.Name != p.Name {
				t.Fatalf("ScheduleAudit(%+v) returned a change of %q", p, ch.Name)
			}
			seqs = append(seqs, ch.Seq)
		}
		return seqs
	}
	for _, tc := range []struct {
		p    store.ScheduleAuditParams
		want []int64
	}{
		{store.ScheduleAuditParams{}, []int64{7, 6, 5, 4, 3, 2, 1}},
		{store.ScheduleAuditParams{Limit: 3}, []int64{7, 6, 5}},
		{store.ScheduleAuditParams{Before: 5, Limit: 3}, []int64{4, 3, 2}},
		{store.ScheduleAuditParams{Before: 2}, []int64{1}},
		{store.ScheduleAuditParams{Before: 1}, nil},
		{store.ScheduleAuditParams{Name: "a"}, []int64{6, 5, 4, 1}},
		{store.ScheduleAuditParams{Name: "a", Limit: 2}, []int64{6, 5}},
		{store.ScheduleAuditParams{Name: "a", Before: 5}, []int64{4, 1}},
		{store.ScheduleAuditParams{Name: "b"}, []int64{7, 2}},
		{store.ScheduleAuditParams{Name: "absent"}, nil},
	} {
		if got := seqsOf(tc.p); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ScheduleAudit(%+v) = changes %v, want %v", tc.p, got, tc.want)
		}
	}
	top, err := b.Store.ScheduleAudit(ctx(t), store.ScheduleAuditParams{Name: "a", Limit: 1})
	if err != nil || len(top) != 1 || top[0].Version != 4 || top[0].Before == nil || top[0].After == nil ||
		!sameSettings(*top[0].Before, sampleSettings()) || !sameSettings(*top[0].After, sampleSettings()) {
		t.Fatalf("newest change of a = %+v, %v; want its update to version 4, sample settings before and after", top, err)
	}
}

// Bad input is refused before anything is written, naming what is wrong.
func scheduleBadInput(t *testing.T, b Bundle) {
	s := b.Store
	mustCreateSchedule(t, s, "kept", sampleSettings())
	dump := b.Dump(t)
	create := func(name string, mut func(*store.ScheduleSettings), by string) error {
		set := sampleSettings()
		mut(&set)
		_, err := s.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: name, Settings: set, By: by})
		return err
	}
	set := func(mut func(*store.ScheduleSettings)) error { return create("new", mut, "ops") }
	none := func(*store.ScheduleSettings) {}
	update := func(p store.ScheduleUpdateParams) error {
		_, err := s.ScheduleUpdate(ctx(t), p)
		return err
	}
	for _, tc := range []struct {
		name, mention string
		err           error
	}{
		{"empty name", "name", create("", none, "ops")},
		{"name over the schedule limit", "name", create(strings.Repeat("n", store.MaxScheduleNameLength+1), none, "ops")},
		{"NUL in name", "name", create("a\x00b", none, "ops")},
		{"invalid UTF-8 name", "name", create("a\xffb", none, "ops")},
		{"empty by", "by", create("new", none, "")},
		{"empty spec", "spec", set(func(s *store.ScheduleSettings) { s.Spec = "" })},
		{"long spec", "spec", set(func(s *store.ScheduleSettings) { s.Spec = strings.Repeat("*", store.MaxScheduleSpecLength+1) })},
		{"NUL in spec", "spec", set(func(s *store.ScheduleSettings) { s.Spec = "0 2 * * *\x00" })},
		{"long time zone", "time zone", set(func(s *store.ScheduleSettings) { s.TimeZone = strings.Repeat("z", store.MaxNameLength+1) })},
		{"invalid UTF-8 time zone", "time zone", set(func(s *store.ScheduleSettings) { s.TimeZone = "\xff" })},
		{"empty kind", "kind", set(func(s *store.ScheduleSettings) { s.Kind = "" })},
		{"NUL in kind", "kind", set(func(s *store.ScheduleSettings) { s.Kind = "k\x00" })},
		{"args not JSON", "args", set(func(s *store.ScheduleSettings) { s.Args = json.RawMessage(`{"a":`) })},
		{"args over the limit", "args", set(func(s *store.ScheduleSettings) {
			s.Args = json.RawMessage(`"` + strings.Repeat("x", store.MaxScheduleArgsBytes) + `"`)
		})},
		{"args with invalid UTF-8", "args", set(func(s *store.ScheduleSettings) { s.Args = json.RawMessage("\"\xff\"") })},
		{"args with an escaped NUL", "args", set(func(s *store.ScheduleSettings) { s.Args = json.RawMessage(`{"a":"\u0000"}`) })},
		{"overlap", "overlap", set(func(s *store.ScheduleSettings) { s.Overlap = "queue" })},
		{"negative timeout", "durations", set(func(s *store.ScheduleSettings) { s.Timeout = -time.Second })},
		{"negative max attempts", "max attempts", set(func(s *store.ScheduleSettings) { s.MaxAttempts = -1 })},
		{"catch-up policy", "catch-up", set(func(s *store.ScheduleSettings) { s.CatchUp = "every" })},
		{"max catch-up over the limit", "max catch-up", set(func(s *store.ScheduleSettings) { s.MaxCatchUp = 10001 })},
		{"negative jitter", "durations", set(func(s *store.ScheduleSettings) { s.Jitter = -time.Second })},
		{"too many exclusions", "exclude", set(func(s *store.ScheduleSettings) { s.Exclude = make([]string, store.MaxExclusions+1) })},
		{"long exclusion", "exclude entry", set(func(s *store.ScheduleSettings) { s.Exclude = []string{strings.Repeat("*", store.MaxExclusionLength+1)} })},
		{"NUL in an exclusion", "exclude entry", set(func(s *store.ScheduleSettings) { s.Exclude = []string{"* * 25 12 *\x00"} })},
		{"lease TTL too short", "TTL", set(func(s *store.ScheduleSettings) { s.LeaseTTL = time.Nanosecond })},
		{"update version 0", "version", update(store.ScheduleUpdateParams{Name: "kept", Settings: sampleSettings(), By: "ops"})},
		{"update bad settings", "spec", update(store.ScheduleUpdateParams{Name: "kept", Version: 1, By: "ops"})},
		{"update empty by", "by", update(store.ScheduleUpdateParams{Name: "kept", Version: 1, Settings: sampleSettings()})},
		{"delete negative version", "version", func() error {
			_, err := s.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "kept", Version: -1, By: "ops"})
			return err
		}()},
		{"delete empty name", "name", func() error {
			_, err := s.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{By: "ops"})
			return err
		}()},
		{"delete empty by", "by", func() error {
			_, err := s.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "kept"})
			return err
		}()},
		{"get empty name", "name", func() error { _, err := s.ScheduleGet(ctx(t), ""); return err }()},
		{"list negative limit", "limit", func() error {
			_, err := s.ScheduleList(ctx(t), store.ScheduleListParams{Limit: -1})
			return err
		}()},
		{"list huge limit", "limit", func() error {
			_, err := s.ScheduleList(ctx(t), store.ScheduleListParams{Limit: store.MaxScheduleListLimit + 1})
			return err
		}()},
		{"list after with NUL", "after", func() error {
			_, err := s.ScheduleList(ctx(t), store.ScheduleListParams{After: "a\x00"})
			return err
		}()},
		{"changes negative after", "after", func() error {
			_, err := s.ScheduleChanges(ctx(t), store.ScheduleChangesParams{After: -1})
			return err
		}()},
		{"changes huge limit", "limit", func() error {
			_, err := s.ScheduleChanges(ctx(t), store.ScheduleChangesParams{Limit: store.MaxScheduleListLimit + 1})
			return err
		}()},
		{"audit negative before", "before", func() error {
			_, err := s.ScheduleAudit(ctx(t), store.ScheduleAuditParams{Before: -1})
			return err
		}()},
		{"audit name with NUL", "name", func() error {
			_, err := s.ScheduleAudit(ctx(t), store.ScheduleAuditParams{Name: "a\x00"})
			return err
		}()},
		{"audit negative limit", "limit", func() error {
			_, err := s.ScheduleAudit(ctx(t), store.ScheduleAuditParams{Limit: -1})
			return err
		}()},
	} {
		if !errors.Is(tc.err, store.ErrInvalidArgument) || !strings.Contains(tc.err.Error(), tc.mention) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument naming %q", tc.name, tc.err, tc.mention)
		}
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("refused calls changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
}

// Every schedule call on a closed store returns ErrClosed.
func scheduleClosed(t *testing.T, b Bundle) {
	s := b.Open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{
		"ScheduleCreate": func() error {
			_, err := s.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: "n", Settings: otherSettings(), By: "ops"})
			return err
		}(),
		"ScheduleUpdate": func() error {
			_, err := s.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "n", Version: 1, Settings: otherSettings(), By: "ops"})
			return err
		}(),
		"ScheduleDelete": func() error {
			_, err := s.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: "n", By: "ops"})
			return err
		}(),
		"ScheduleGet":  func() error { _, err := s.ScheduleGet(ctx(t), "n"); return err }(),
		"ScheduleList": func() error { _, err := s.ScheduleList(ctx(t), store.ScheduleListParams{}); return err }(),
		"ScheduleChanges": func() error {
			_, err := s.ScheduleChanges(ctx(t), store.ScheduleChangesParams{})
			return err
		}(),
		"ScheduleAudit": func() error { _, err := s.ScheduleAudit(ctx(t), store.ScheduleAuditParams{}); return err }(),
	}
	for name, err := range calls {
		wantErrIs(t, name+" after Close", err, store.ErrClosed)
	}
	if list, err := b.Store.ScheduleList(ctx(t), store.ScheduleListParams{}); err != nil || len(list) != 0 {
		t.Fatalf("ScheduleList = %+v, %v; want nothing written", list, err)
	}
}

// A replica's handler kinds are stored with its jobs, kept by a heartbeat
// that keeps the jobs, replaced by one that sends them, and read back on
// every row: the heartbeat's, ReplicaList's and MonitorSnapshot's, with
// its jobs left out or not.
func replicaKinds(t *testing.T, b Bundle) {
	m := b.Store
	kinds := []string{"cleanup", "send-report"}
	first, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "r1", Host: "h", Timers: true, Jobs: sampleJobs(), Kinds: kinds})
	if err != nil || !reflect.DeepEqual(first.Kinds, kinds) {
		t.Fatalf("heartbeat with kinds returned %+v, %v; want kinds %q", first.Kinds, err, kinds)
	}
	if _, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "r2", Host: "h", Jobs: sampleJobs()}); err != nil {
		t.Fatal(err)
	}
	beat, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "r1", Host: "h", Timers: true, JobsUnchanged: true})
	if err != nil || !reflect.DeepEqual(beat.Kinds, kinds) || beat.Jobs != nil {
		t.Fatalf("heartbeat with JobsUnchanged returned kinds %q, jobs %+v, %v; want the kinds kept and read back, no jobs", beat.Kinds, beat.Jobs, err)
	}
	list, err := b.Open(t).ReplicaList(ctx(t))
	if err != nil || len(list) != 2 || !reflect.DeepEqual(list[0].Kinds, kinds) || list[1].Kinds != nil || !reflect.DeepEqual(list[0].Jobs, sampleJobs()) {
		t.Fatalf("ReplicaList = %+v, %v; want r1 with its jobs and kinds, r2 with no kinds (nil)", list, err)
	}
	snap, err := m.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{})
	if err != nil || len(snap.Replicas) != 2 || !reflect.DeepEqual(snap.Replicas[0].Kinds, kinds) {
		t.Fatalf("MonitorSnapshot replicas = %+v, %v; want r1 with its kinds", snap.Replicas, err)
	}
	known := map[string]string{}
	for _, r := range snap.Replicas {
		if r.JobsHash != "" {
			known[r.Owner] = r.JobsHash
		}
	}
	again, err := m.MonitorSnapshot(ctx(t), store.MonitorSnapshotParams{KnownJobs: known})
	if err != nil || len(again.Replicas) != 2 || !reflect.DeepEqual(again.Replicas[0].Kinds, kinds) {
		t.Fatalf("MonitorSnapshot with the jobs known = %+v, %v; want r1's kinds, jobs left out or not", again.Replicas, err)
	}
	replaced, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "r1", Host: "h", Jobs: sampleJobs()[:1], Kinds: []string{"ping"}})
	if err != nil || !reflect.DeepEqual(replaced.Kinds, []string{"ping"}) {
		t.Fatalf("heartbeat with other kinds returned %q, %v; want [ping]", replaced.Kinds, err)
	}
	cleared, err := m.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "r1", Host: "h"})
	if err != nil || cleared.Kinds != nil {
		t.Fatalf("heartbeat with no kinds returned %q, %v; want none (nil)", cleared.Kinds, err)
	}

	dump := b.Dump(t)
	for _, tc := range []struct {
		name    string
		r       store.Replica
		mention string
	}{
		{"empty kind", store.Replica{Owner: "r1", Kinds: []string{"a", ""}}, "kind 1"},
		{"NUL in kind", store.Replica{Owner: "r1", Kinds: []string{"a\x00"}}, "kind 0"},
		{"kind twice", store.Replica{Owner: "r1", Kinds: []string{"a", "a"}}, "twice"},
		{"kinds with JobsUnchanged", store.Replica{Owner: "r1", JobsUnchanged: true, Kinds: []string{"a"}}, "JobsUnchanged"},
	} {
		if _, err := m.ReplicaHeartbeat(ctx(t), tc.r); !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument naming %q", tc.name, err, tc.mention)
		}
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("refused heartbeats changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
}

// Replicas updating one schedule at once, all at the version they read:
// one update wins, every other is refused with the winner's version, and
// the log has the winner's change alone.
func raceScheduleUpdate(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	mustCreateSchedule(t, b.Store, "report", sampleSettings())
	const rounds = 5
	for round := int64(1); round <= rounds; round++ {
		results := race(stores, func(i int, s store.Store) error {
			set := otherSettings()
			set.Args = json.RawMessage(fmt.Sprintf(`{"replica": %d}`, i))
			_, err := s.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: "report", Version: round, Settings: set, By: fmt.Sprintf("replica-%02d", i)})
			return err
		})
		winner := -1
		for i, err := range results {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("round %d: replicas %d and %d both updated version %d", round, winner, i, round)
			case err == nil:
				winner = i
			default:
				wantConflict(t, fmt.Sprintf("round %d, replica %d", round, i), err, store.ConflictError{Name: "report", Version: round, Current: round + 1})
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no update won", round)
		}
		got := mustGetSchedule(t, b.Store, "report")
		if got.Version != round+1 || got.UpdatedBy != fmt.Sprintf("replica-%02d", winner) || string(got.Args) != fmt.Sprintf(`{"replica": %d}`, winner) {
			t.Fatalf("round %d: schedule %+v; want version %d, the winner's (replica %d) settings", round, got, round+1, winner)
		}
	}
	log := mustChanges(t, b.Store, store.ScheduleChangesParams{})
	if len(log.Changes) != rounds+1 || log.Latest != rounds+1 {
		t.Fatalf("the log has %d changes (Latest %d), want the create and one update a round: %d", len(log.Changes), log.Latest, rounds+1)
	}
}

// Replicas creating one name at once: one create wins, every other is
// refused naming version 1.
func raceScheduleCreate(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	results := race(stores, func(i int, s store.Store) error {
		_, err := s.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: "tenant-9", Settings: otherSettings(), By: fmt.Sprintf("replica-%02d", i)})
		return err
	})
	won := 0
	for i, err := range results {
		if err == nil {
			won++
			continue
		}
		wantConflict(t, fmt.Sprintf("replica %d", i), err, store.ConflictError{Name: "tenant-9", Current: 1})
	}
	if won != 1 {
		t.Fatalf("%d creates won, want 1", won)
	}
	if log := mustChanges(t, b.Store, store.ScheduleChangesParams{}); len(log.Changes) != 1 || log.Latest != 1 {
		t.Fatalf("the log = %+v; want the one create", log)
	}
}

// Replicas writing schedules of their own at once, while another polls
// the log after the last change it read: the reader reads every change,
// once, in order, each page going on from the number it stopped at, so
// no number commits behind one already read (as a sequence or
// AUTO_INCREMENT would let it), and the log ends with no gap.
func raceScheduleChangeLog(t *testing.T, b Bundle) {
	stores := openContenders(t, b)
	reader := b.Open(t)
	const each = 4 // writes a writer: create, two updates, delete
	done := make(chan struct{})
	type read struct {
		seqs []int64
		err  error
	}
	readDone := make(chan read, 1)
	c := ctx(t)
	go func() {
		var r read
		last, finished := int64(0), false
		for {
			select {
			case <-done:
				finished = true // one more read, after every write
			default:
			}
			page, err := reader.ScheduleChanges(c, store.ScheduleChangesParams{After: last, Limit: 7})
			if err != nil {
				r.err = err
				break
			}
			for _, ch := range page.Changes {
				if ch.Seq != last+1 {
					r.err = fmt.Errorf("after change %d the log gave %d: a number committed behind one read, or a gap", last, ch.Seq)
					break
				}
				r.seqs, last = append(r.seqs, ch.Seq), ch.Seq
			}
			if r.err != nil || page.Latest < last {
				if r.err == nil {
					r.err = fmt.Errorf("page up to %d says the newest is %d", last, page.Latest)
				}
				break
			}
			if finished && len(page.Changes) < 7 {
				break
			}
		}
		readDone <- r
	}()
	errs := race(stores, func(i int, s store.Store) error {
		name := fmt.Sprintf("tenant-%02d", i)
		if _, err := s.ScheduleCreate(ctx(t), store.ScheduleCreateParams{Name: name, Settings: otherSettings(), By: name}); err != nil {
			return err
		}
		for v := int64(1); v <= each-2; v++ {
			if _, err := s.ScheduleUpdate(ctx(t), store.ScheduleUpdateParams{Name: name, Version: v, Settings: sampleSettings(), By: name}); err != nil {
				return err
			}
		}
		_, err := s.ScheduleDelete(ctx(t), store.ScheduleDeleteParams{Name: name, Version: each - 1, By: name})
		return err
	})
	close(done)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", i, err)
		}
	}
	r := <-readDone
	if r.err != nil {
		t.Fatalf("the reader: %v", r.err)
	}
	total := int64(contenders * each)
	if int64(len(r.seqs)) != total {
		t.Fatalf("the reader read %d changes, want %d", len(r.seqs), total)
	}
	log := mustChanges(t, b.Store, store.ScheduleChangesParams{Limit: store.MaxScheduleListLimit})
	if log.Latest != total || log.Oldest != 1 || int64(len(log.Changes)) != total {
		t.Fatalf("the log holds %d changes, %d to %d; want %d, 1 to %[4]d", len(log.Changes), log.Oldest, log.Latest, total)
	}
	// Each writer's changes are in its own order within the log.
	next := map[string]int64{}
	for _, ch := range log.Changes {
		if ch.Version < next[ch.Name] {
			t.Fatalf("change %d of %s is version %d after version %d", ch.Seq, ch.Name, ch.Version, next[ch.Name])
		}
		next[ch.Name] = ch.Version
	}
}
