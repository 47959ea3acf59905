package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

// The Backfill group: the backfills of jobs (store.Backfills) and the
// slot listing they read (SlotList).
var backfillTests = []namedTest{
	{name: "CreateGetList", fn: backfillCreateGetList},
	{name: "ListFiltersAndPages", fn: backfillListPages},
	{name: "ListDefaultLimit", fn: backfillListDefaultLimit},
	{name: "Progress", fn: backfillProgress},
	{name: "ProgressAfterTheEnd", fn: backfillProgressAfterEnd},
	{name: "Cancel", fn: backfillCancel},
	{name: "OneRunningPerJob", fn: backfillOneRunning},
	{name: "SlotList", fn: backfillSlotList},
	{name: "BadInputRejectedWithoutWriting", fn: backfillBadInput},
	{name: "OneRunningPerJobUnderConcurrentCreates", serial: true, fn: raceBackfillCreate},
}

// backfillContenders is how many replicas create a backfill of one job at
// once in raceBackfillCreate.
const backfillContenders = 16

// backfillParams is a backfill of job over the hour before base.
func backfillParams(job string, base time.Time) store.BackfillCreateParams {
	return store.BackfillCreateParams{Job: job, From: base.Add(-time.Hour), To: base, Rate: 2, Total: 60, By: "ana"}
}

func mustCreateBackfill(t *testing.T, s store.Store, p store.BackfillCreateParams) store.Backfill {
	t.Helper()
	b, err := s.BackfillCreate(ctx(t), p)
	if err != nil {
		t.Fatalf("BackfillCreate(%+v): %v", p, err)
	}
	return b
}

func mustGetBackfill(t *testing.T, s store.Store, id int64) store.Backfill {
	t.Helper()
	b, err := s.BackfillGet(ctx(t), id)
	if err != nil {
		t.Fatalf("BackfillGet(%d): %v", id, err)
	}
	return b
}

func mustListBackfills(t *testing.T, s store.Store, p store.BackfillListParams) []store.Backfill {
	t.Helper()
	list, err := s.BackfillList(ctx(t), p)
	if err != nil {
		t.Fatalf("BackfillList(%+v): %v", p, err)
	}
	return list
}

func mustProgress(t *testing.T, s store.Store, p store.BackfillProgressParams) (store.Backfill, bool) {
	t.Helper()
	b, written, err := s.BackfillProgress(ctx(t), p)
	if err != nil {
		t.Fatalf("BackfillProgress(%+v): %v", p, err)
	}
	return b, written
}

func mustCancelBackfill(t *testing.T, s store.Store, id int64, by string) (store.Backfill, bool) {
	t.Helper()
	b, cancelled, err := s.BackfillCancel(ctx(t), id, by)
	if err != nil {
		t.Fatalf("BackfillCancel(%d, %q): %v", id, by, err)
	}
	return b, cancelled
}

func backfillIDs(list []store.Backfill) []int64 {
	ids := make([]int64, len(list))
	for i, b := range list {
		ids[i] = b.ID
	}
	return ids
}

// sampleCounts sets every count, each to another value.
func sampleCounts() store.BackfillCounts {
	return store.BackfillCounts{Ran: 1, Failed: 2, Completed: 3, FailedBefore: 4, Skipped: 5, Running: 6, Paused: 7, Excluded: 8, Taken: 9}
}

// A created backfill is read back as it was written, by this replica and
// another, running, with a new ID, no progress, and its times from the
// store's clock; its range normalized as the stores keep instants (UTC,
// microseconds). Progress and a cancel are read back the same way.
func backfillCreateGetList(t *testing.T, b Bundle) {
	before := dbNow(t, b.Store)
	zone := time.FixedZone("BRT", -3*60*60)
	from := time.Date(2026, 3, 1, 0, 0, 0, 123456789, zone)
	p := store.BackfillCreateParams{Job: "fechamento/loja-42", From: from, To: from.Add(48 * time.Hour), IncludeFailed: true, Rate: 7, Total: 48, By: "ana"}
	created := mustCreateBackfill(t, b.Store, p)
	want := store.Backfill{
		ID: created.ID, Job: p.Job, From: from.UTC().Truncate(time.Microsecond), To: from.Add(48 * time.Hour).UTC().Truncate(time.Microsecond),
		IncludeFailed: true, Rate: 7, Total: 48, State: store.BackfillRunning, CreatedBy: "ana",
		CreatedAt: created.CreatedAt, UpdatedAt: created.CreatedAt,
	}
	if diff := cmp.Diff(want, created); diff != "" || created.ID <= 0 {
		t.Fatalf("BackfillCreate returned (-want +got):\n%s(ID %d, want > 0)", diff, created.ID)
	}
	if created.CreatedAt.Before(before) || created.CreatedAt.Location() != time.UTC || created.From.Location() != time.UTC {
		t.Fatalf("BackfillCreate's CreatedAt %s (from %v); want the store's clock, at or after %s, and UTC", created.CreatedAt, created.From.Location(), before)
	}
	other := b.Open(t)
	for _, s := range []store.Store{b.Store, other} {
		if diff := cmp.Diff(created, mustGetBackfill(t, s, created.ID)); diff != "" {
			t.Fatalf("BackfillGet (-created +got):\n%s", diff)
		}
		if diff := cmp.Diff([]store.Backfill{created}, mustListBackfills(t, s, store.BackfillListParams{})); diff != "" {
			t.Fatalf("BackfillList (-created +got):\n%s", diff)
		}
	}
	if _, err := b.Store.BackfillGet(ctx(t), created.ID+1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BackfillGet of no backfill: error = %v, want ErrNotFound", err)
	}

	cursor := want.From.Add(5 * time.Hour)
	progressed, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: created.ID, Cursor: cursor, Counts: sampleCounts(), Driver: "replica-1"})
	if !written {
		t.Fatal("BackfillProgress of a running backfill wrote nothing")
	}
	want.Cursor, want.Counts, want.Driver, want.UpdatedAt = cursor, sampleCounts(), "replica-1", progressed.UpdatedAt
	if diff := cmp.Diff(want, progressed); diff != "" || progressed.UpdatedAt.Before(created.UpdatedAt) {
		t.Fatalf("BackfillProgress returned (-want +got):\n%s(UpdatedAt %s, created %s)", diff, progressed.UpdatedAt, created.UpdatedAt)
	}
	if diff := cmp.Diff(progressed, mustGetBackfill(t, other, created.ID)); diff != "" {
		t.Fatalf("BackfillGet after progress (-progress's +got):\n%s", diff)
	}
	cancelled, ok := mustCancelBackfill(t, b.Store, created.ID, "bruno")
	if !ok {
		t.Fatal("BackfillCancel of a running backfill did not cancel it")
	}
	want.State, want.CancelledBy, want.UpdatedAt, want.FinishedAt = store.BackfillCancelled, "bruno", cancelled.UpdatedAt, cancelled.UpdatedAt
	if diff := cmp.Diff(want, cancelled); diff != "" || cancelled.FinishedAt.Before(progressed.UpdatedAt) {
		t.Fatalf("BackfillCancel returned (-want +got):\n%s(FinishedAt %s, last progress %s)", diff, cancelled.FinishedAt, progressed.UpdatedAt)
	}
	for _, s := range []store.Store{b.Store, other} {
		if diff := cmp.Diff([]store.Backfill{cancelled}, mustListBackfills(t, s, store.BackfillListParams{})); diff != "" {
			t.Fatalf("BackfillList after cancel (-cancelled +got):\n%s", diff)
		}
	}
}

// BackfillList filters by job, by state and by ID, newest first, and its
// pages walked by Before give every backfill once.
func backfillListPages(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	var all []store.Backfill // oldest first
	create := func(job string) store.Backfill {
		bf := mustCreateBackfill(t, b.Store, backfillParams(job, base))
		all = append(all, bf)
		return bf
	}
	for _, job := range []string{"a", "b", "c"} {
		first := create(job)
		if job != "c" {
			mustCancelBackfill(t, b.Store, first.ID, "ops")
			create(job)
		}
	}
	// a: cancelled, running; b: cancelled, running; c: running.
	var wantAll []int64
	for i := len(all) - 1; i >= 0; i-- {
		wantAll = append(wantAll, all[i].ID)
	}
	for _, tc := range []struct {
		p    store.BackfillListParams
		want []int64
	}{
		{store.BackfillListParams{}, wantAll},
		{store.BackfillListParams{Job: "a"}, []int64{all[1].ID, all[0].ID}},
		{store.BackfillListParams{Job: "zzz"}, nil},
		{store.BackfillListParams{Running: true}, []int64{all[4].ID, all[3].ID, all[1].ID}},
		{store.BackfillListParams{Job: "b", Running: true}, []int64{all[3].ID}},
		{store.BackfillListParams{Before: all[3].ID}, []int64{all[2].ID, all[1].ID, all[0].ID}},
		{store.BackfillListParams{Before: all[3].ID, Running: true}, []int64{all[1].ID}},
		{store.BackfillListParams{Job: "a", Before: all[1].ID}, []int64{all[0].ID}},
		{store.BackfillListParams{Limit: 2}, wantAll[:2]},
	} {
		if got := backfillIDs(mustListBackfills(t, b.Store, tc.p)); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("BackfillList(%+v) IDs = %v, want %v", tc.p, got, tc.want)
		}
	}
	var walked []int64
	for p := (store.BackfillListParams{Limit: 2}); len(walked) <= len(wantAll); {
		page := mustListBackfills(t, b.Store, p)
		if len(page) > 2 {
			t.Fatalf("a page of limit 2 has %d backfills", len(page))
		}
		if len(page) == 0 {
			break
		}
		walked = append(walked, backfillIDs(page)...)
		p.Before = page[len(page)-1].ID
	}
	if fmt.Sprint(walked) != fmt.Sprint(wantAll) {
		t.Fatalf("the pages of 2 walked %v, want %v", walked, wantAll)
	}
}

// BackfillList's page is DefaultBackfillListLimit without a limit.
func backfillListDefaultLimit(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	for i := range store.DefaultBackfillListLimit + 1 {
		mustCreateBackfill(t, b.Store, backfillParams(fmt.Sprintf("job-%03d", i), base))
	}
	if got := mustListBackfills(t, b.Store, store.BackfillListParams{}); len(got) != store.DefaultBackfillListLimit || got[0].Job != "job-100" {
		t.Fatalf("BackfillList without a limit gave %d backfills, first of %q; want %d, the newest first (job-100)",
			len(got), got[0].Job, store.DefaultBackfillListLimit)
	}
	if got := mustListBackfills(t, b.Store, store.BackfillListParams{Limit: store.MaxBackfillListLimit}); len(got) != store.DefaultBackfillListLimit+1 {
		t.Fatalf("BackfillList of limit %d gave %d backfills, want all %d", store.MaxBackfillListLimit, len(got), store.DefaultBackfillListLimit+1)
	}
}

// Progress moves the cursor on, never back: a cursor before the one
// recorded (a deposed driver, late) writes nothing; the same cursor
// again is written. Done ends the backfill.
func backfillProgress(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	bf := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	other := mustCreateBackfill(t, b.Store, backfillParams("other", base))
	c1, c2 := bf.From.Add(10*time.Minute), bf.From.Add(20*time.Minute)

	got, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: bf.ID, Cursor: c2, Counts: store.BackfillCounts{Ran: 20}, Driver: "r1"})
	if !written || !got.Cursor.Equal(c2) || got.Counts != (store.BackfillCounts{Ran: 20}) || got.Driver != "r1" || got.State != store.BackfillRunning {
		t.Fatalf("BackfillProgress = %+v, written %v; want cursor %s, 20 ran, driver r1, running, written", got, written, c2)
	}
	dump := b.Dump(t)
	late, written := mustProgress(t, b.Open(t), store.BackfillProgressParams{ID: bf.ID, Cursor: c1, Counts: store.BackfillCounts{Ran: 10}, Driver: "r0"})
	if written {
		t.Fatalf("BackfillProgress with a cursor (%s) before the recorded one (%s) wrote: %+v", c1, c2, late)
	}
	if diff := cmp.Diff(got, late); diff != "" {
		t.Fatalf("BackfillProgress refused returned another backfill than the one recorded (-recorded +returned):\n%s", diff)
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("a refused BackfillProgress changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
	if _, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: bf.ID, Counts: store.BackfillCounts{Ran: 1}, Driver: "r0"}); written {
		t.Fatal("BackfillProgress with no cursor, after one was recorded, wrote")
	}
	same, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: bf.ID, Cursor: c2, Counts: store.BackfillCounts{Ran: 19, Taken: 1}, Driver: "r2"})
	if !written || same.Counts != (store.BackfillCounts{Ran: 19, Taken: 1}) || same.Driver != "r2" {
		t.Fatalf("BackfillProgress at the recorded cursor = %+v, written %v; want it written", same, written)
	}

	done, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: bf.ID, Cursor: bf.To.Add(-time.Minute), Counts: store.BackfillCounts{Ran: 60}, Driver: "r2", Done: true})
	if !written || done.State != store.BackfillDone || done.FinishedAt.IsZero() || !done.FinishedAt.Equal(done.UpdatedAt) ||
		done.FinishedAt.Before(same.UpdatedAt) || done.CancelledBy != "" || !done.Cursor.Equal(bf.To.Add(-time.Minute)) {
		t.Fatalf("BackfillProgress with Done = %+v, written %v; want it done, FinishedAt its UpdatedAt, after the last progress (%s)", done, written, same.UpdatedAt)
	}
	if diff := cmp.Diff(done, mustGetBackfill(t, b.Store, bf.ID)); diff != "" {
		t.Fatalf("BackfillGet after done (-done +got):\n%s", diff)
	}
	if running := mustGetBackfill(t, b.Store, other.ID); running.State != store.BackfillRunning || !running.Cursor.IsZero() {
		t.Fatalf("another job's backfill changed: %+v", running)
	}
	if _, _, err := b.Store.BackfillProgress(ctx(t), store.BackfillProgressParams{ID: other.ID + 100, Cursor: c1, Driver: "r1"}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BackfillProgress of no backfill: error = %v, want ErrNotFound", err)
	}
}

// A backfill done or cancelled takes no progress, whatever its cursor.
func backfillProgressAfterEnd(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	done := mustCreateBackfill(t, b.Store, backfillParams("a", base))
	done, _ = mustProgress(t, b.Store, store.BackfillProgressParams{ID: done.ID, Cursor: done.From, Driver: "r1", Done: true})
	cancelled := mustCreateBackfill(t, b.Store, backfillParams("b", base))
	cancelled, _ = mustCancelBackfill(t, b.Store, cancelled.ID, "ops")
	dump := b.Dump(t)
	for _, ended := range []store.Backfill{done, cancelled} {
		for _, finish := range []bool{false, true} {
			got, written := mustProgress(t, b.Store, store.BackfillProgressParams{ID: ended.ID, Cursor: ended.To, Counts: store.BackfillCounts{Ran: 3}, Driver: "r9", Done: finish})
			if written {
				t.Fatalf("BackfillProgress (Done %v) of a backfill %s wrote: %+v", finish, ended.State, got)
			}
			if diff := cmp.Diff(ended, got); diff != "" {
				t.Fatalf("BackfillProgress of a backfill %s returned (-as it was +got):\n%s", ended.State, diff)
			}
		}
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("BackfillProgress of ended backfills changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
}

// Cancel ends a running backfill once, naming who; one that ended is
// returned as it is, with false.
func backfillCancel(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	bf := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	cancelled, ok := mustCancelBackfill(t, b.Store, bf.ID, "ops")
	if !ok || cancelled.State != store.BackfillCancelled || cancelled.CancelledBy != "ops" || cancelled.FinishedAt.IsZero() ||
		!cancelled.FinishedAt.Equal(cancelled.UpdatedAt) || cancelled.FinishedAt.Before(bf.CreatedAt) {
		t.Fatalf("BackfillCancel = %+v, %v; want it cancelled by ops, FinishedAt its UpdatedAt, with true", cancelled, ok)
	}
	dump := b.Dump(t)
	again, ok := mustCancelBackfill(t, b.Open(t), bf.ID, "someone-else")
	if ok {
		t.Fatal("BackfillCancel of a cancelled backfill returned true")
	}
	if diff := cmp.Diff(cancelled, again); diff != "" {
		t.Fatalf("BackfillCancel again returned (-cancelled +got):\n%s", diff)
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("a second BackfillCancel changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
	done := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	done, _ = mustProgress(t, b.Store, store.BackfillProgressParams{ID: done.ID, Cursor: done.From, Driver: "r1", Done: true})
	dump = b.Dump(t)
	got, ok := mustCancelBackfill(t, b.Store, done.ID, "ops")
	if ok {
		t.Fatal("BackfillCancel of a done backfill returned true")
	}
	if diff := cmp.Diff(done, got); diff != "" {
		t.Fatalf("BackfillCancel of a done backfill returned (-done +got):\n%s", diff)
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("BackfillCancel of ended backfills changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
	if _, _, err := b.Store.BackfillCancel(ctx(t), done.ID+100, "ops"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("BackfillCancel of no backfill: error = %v, want ErrNotFound", err)
	}
}

// While a job's backfill runs, another of that job is refused, naming the
// running one; once it is done or cancelled another may start. Other
// jobs' are not in the way.
func backfillOneRunning(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	first := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	dump := b.Dump(t)
	_, err := b.Open(t).BackfillCreate(ctx(t), backfillParams("report", base.Add(-time.Hour)))
	wantConflict(t, "BackfillCreate while one runs", err, store.ConflictError{Name: "report", Current: first.ID, Kind: store.ConflictBackfill})
	if after := b.Dump(t); after != dump {
		t.Fatalf("a refused BackfillCreate changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
	mustCreateBackfill(t, b.Store, backfillParams("other", base))
	mustProgress(t, b.Store, store.BackfillProgressParams{ID: first.ID, Cursor: first.From, Driver: "r1", Done: true})
	second := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	_, err = b.Store.BackfillCreate(ctx(t), backfillParams("report", base))
	wantConflict(t, "BackfillCreate while the second runs", err, store.ConflictError{Name: "report", Current: second.ID, Kind: store.ConflictBackfill})
	mustCancelBackfill(t, b.Store, second.ID, "ops")
	third := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	if !(first.ID < second.ID && second.ID < third.ID) {
		t.Fatalf("IDs %d, %d, %d; want them growing", first.ID, second.ID, third.ID)
	}
	if running := mustListBackfills(t, b.Store, store.BackfillListParams{Job: "report", Running: true}); len(running) != 1 || running[0].ID != third.ID {
		t.Fatalf("running backfills of report: %v, want the third (%d) alone", backfillIDs(running), third.ID)
	}
}

// Replicas creating a backfill of one job at once, each on connections
// of its own: one wins, every other is refused naming the winner; after
// it ends, again.
func raceBackfillCreate(t *testing.T, b Bundle) {
	stores := make([]store.Store, backfillContenders)
	for i := range stores {
		stores[i] = b.Open(t)
	}
	base := dbNow(t, b.Store).Truncate(time.Second)
	for round := range 3 {
		type result struct {
			b   store.Backfill
			err error
		}
		results := race(stores, func(i int, s store.Store) result {
			p := backfillParams("report", base)
			p.By = fmt.Sprintf("replica-%02d", i)
			bf, err := s.BackfillCreate(ctx(t), p)
			return result{bf, err}
		})
		var winner store.Backfill
		for _, r := range results {
			if r.err == nil {
				if winner.ID != 0 {
					t.Fatalf("round %d: two backfills of one job created at once: %d and %d", round, winner.ID, r.b.ID)
				}
				winner = r.b
			}
		}
		if winner.ID == 0 {
			t.Fatalf("round %d: no create won: %v", round, results[0].err)
		}
		for i, r := range results {
			if r.err != nil {
				wantConflict(t, fmt.Sprintf("round %d, replica %d", round, i), r.err, store.ConflictError{Name: "report", Current: winner.ID, Kind: store.ConflictBackfill})
			}
		}
		running := mustListBackfills(t, b.Store, store.BackfillListParams{Job: "report", Running: true})
		if len(running) != 1 || running[0].ID != winner.ID {
			t.Fatalf("round %d: running backfills %v, want the winner's (%d) alone", round, backfillIDs(running), winner.ID)
		}
		if all := mustListBackfills(t, b.Store, store.BackfillListParams{Job: "report"}); len(all) != round+1 {
			t.Fatalf("round %d: %d backfills of the job, want %d: one a round", round, len(all), round+1)
		}
		if round%2 == 0 {
			mustCancelBackfill(t, b.Store, winner.ID, "ops")
		} else {
			mustProgress(t, b.Store, store.BackfillProgressParams{ID: winner.ID, Cursor: winner.From, Driver: "r1", Done: true})
		}
	}
}

// SlotList gives the slot rows of one job in a half-open range, whatever
// their status, oldest first, as SlotGet gives them, a page at a time.
func backfillSlotList(t *testing.T, b Bundle) {
	now := dbNow(t, b.Store)
	base := now.Truncate(time.Second).Add(-time.Minute)
	slot := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
	run := func(i int, status store.SlotStatus) {
		r := mustClaim(t, b.Store, claimParams(slot(i), "a", now))
		mustFinish(t, b.Store, finishParams(r, status, now))
	}
	run(0, store.SlotCompleted) // before the range
	run(1, store.SlotCompleted)
	run(2, store.SlotFailed)
	run(6, store.SlotCompleted) // at its end: left out
	other := claimParams(slot(2), "a", now)
	other.Job, other.LeaseName = "other", "job:other"
	mustClaim(t, b.Store, other) // another job's
	mustClaim(t, b.Store, claimParams(slot(3), "a", now))
	if _, err := b.Store.SlotSkip(ctx(t), []store.SlotSkipParams{skipParams(slot(4), slot(4), "a", store.SkipPassedOver, now)}); err != nil {
		t.Fatal(err)
	}
	// slot 5 has no row.
	var want []store.Slot
	for i := 1; i <= 4; i++ {
		want = append(want, mustGetSlot(t, b.Store, slot(i)))
	}
	for i, status := range []store.SlotStatus{store.SlotCompleted, store.SlotFailed, store.SlotRunning, store.SlotSkipped} {
		if want[i].Status != status {
			t.Fatalf("slot %d is %s, want %s (the test's setup)", i+1, want[i].Status, status)
		}
	}
	p := store.SlotListParams{Job: "report", From: slot(1), To: slot(6)}
	got, err := b.Open(t).SlotList(ctx(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("SlotList(%s to %s) (-want +got):\n%s", p.From, p.To, diff)
	}
	var paged []store.Slot
	for p.Limit = 3; len(paged) <= len(want); {
		page, err := b.Store.SlotList(ctx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 3 {
			t.Fatalf("a page of limit 3 has %d rows", len(page))
		}
		if len(page) == 0 {
			break
		}
		paged = append(paged, page...)
		p.From = page[len(page)-1].Slot.Add(time.Second)
	}
	if diff := cmp.Diff(want, paged); diff != "" {
		t.Fatalf("SlotList by pages of 3 (-want +got):\n%s", diff)
	}
	got, err = b.Store.SlotList(ctx(t), store.SlotListParams{Job: "report", From: slot(2), To: slot(3).Add(time.Microsecond)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1:3], got); diff != "" {
		t.Fatalf("SlotList from slot 2 to just after slot 3 (-want +got):\n%s", diff)
	}
	got, err = b.Store.SlotList(ctx(t), store.SlotListParams{Job: "nobody", From: slot(0), To: slot(7)})
	if err != nil || len(got) != 0 {
		t.Fatalf("SlotList of a job with no slots = %v, %v; want none", got, err)
	}
}

// Bad input to each call is refused, ErrInvalidArgument naming the field,
// and writes nothing, even naming a backfill that runs.
func backfillBadInput(t *testing.T, b Bundle) {
	base := dbNow(t, b.Store).Truncate(time.Second)
	bf := mustCreateBackfill(t, b.Store, backfillParams("report", base))
	dump := b.Dump(t)
	create := func(change func(p *store.BackfillCreateParams)) func() error {
		return func() error {
			p := backfillParams("fresh", base)
			change(&p)
			_, err := b.Store.BackfillCreate(ctx(t), p)
			return err
		}
	}
	progress := func(change func(p *store.BackfillProgressParams)) func() error {
		return func() error {
			p := store.BackfillProgressParams{ID: bf.ID, Cursor: bf.From, Counts: store.BackfillCounts{Ran: 1}, Driver: "r1", Done: true}
			change(&p)
			_, _, err := b.Store.BackfillProgress(ctx(t), p)
			return err
		}
	}
	list := func(p store.BackfillListParams) func() error {
		return func() error { _, err := b.Store.BackfillList(ctx(t), p); return err }
	}
	slots := func(p store.SlotListParams) func() error {
		return func() error { _, err := b.Store.SlotList(ctx(t), p); return err }
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"create: no job", create(func(p *store.BackfillCreateParams) { p.Job = "" })},
		{"create: NUL in job", create(func(p *store.BackfillCreateParams) { p.Job = "a\x00b" })},
		{"create: to before from", create(func(p *store.BackfillCreateParams) { p.From, p.To = p.To, p.From })},
		{"create: empty range", create(func(p *store.BackfillCreateParams) { p.To = p.From })},
		{"create: no from", create(func(p *store.BackfillCreateParams) { p.From = time.Time{} })},
		{"create: negative total", create(func(p *store.BackfillCreateParams) { p.Total = -1 })},
		{"create: total too large", create(func(p *store.BackfillCreateParams) { p.Total = store.MaxBackfillSlots + 1 })},
		{"create: negative rate", create(func(p *store.BackfillCreateParams) { p.Rate = -1 })},
		{"create: rate too high", create(func(p *store.BackfillCreateParams) { p.Rate = store.MaxBackfillRate + 1 })},
		{"create: no by", create(func(p *store.BackfillCreateParams) { p.By = "" })},
		{"get: ID 0", func() error { _, err := b.Store.BackfillGet(ctx(t), 0); return err }},
		{"list: negative limit", list(store.BackfillListParams{Limit: -1})},
		{"list: limit too large", list(store.BackfillListParams{Limit: store.MaxBackfillListLimit + 1})},
		{"list: negative before", list(store.BackfillListParams{Before: -1})},
		{"list: bad job", list(store.BackfillListParams{Job: "a\x00"})},
		{"progress: ID 0", progress(func(p *store.BackfillProgressParams) { p.ID = 0 })},
		{"progress: negative count", progress(func(p *store.BackfillProgressParams) { p.Counts.Taken = -1 })},
		{"progress: no driver", progress(func(p *store.BackfillProgressParams) { p.Driver = "" })},
		{"cancel: ID 0", func() error { _, _, err := b.Store.BackfillCancel(ctx(t), 0, "ops"); return err }},
		{"cancel: no by", func() error { _, _, err := b.Store.BackfillCancel(ctx(t), bf.ID, ""); return err }},
		{"slots: no job", slots(store.SlotListParams{From: base, To: base.Add(time.Hour)})},
		{"slots: to before from", slots(store.SlotListParams{Job: "report", From: base, To: base.Add(-time.Hour)})},
		{"slots: no from", slots(store.SlotListParams{Job: "report", To: base})},
		{"slots: negative limit", slots(store.SlotListParams{Job: "report", From: base, To: base.Add(time.Hour), Limit: -1})},
		{"slots: limit too large", slots(store.SlotListParams{Job: "report", From: base, To: base.Add(time.Hour), Limit: store.MaxSlotListLimit + 1})},
	} {
		if err := tc.call(); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument", tc.name, err)
		}
	}
	if after := b.Dump(t); after != dump {
		t.Fatalf("refused calls changed the tables:\nbefore:\n%s\nafter:\n%s", dump, after)
	}
}
