package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

var runTests = []namedTest{
	{name: "SkipRow", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		skip := store.Run{
			Job: "report", Slot: now, Owner: "b", StartedAt: now, FinishedAt: now,
			Success: true, Skipped: true, Reason: "already_executing",
			Logs: []string{"Skipped: the previous run has not finished (held by a, generation 4)"},
		}
		got, err := b.Store.RunInsert(ctx(t), skip)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID == 0 {
			t.Fatal("inserted run has no id")
		}
		skip.ID = got.ID
		if diff := cmp.Diff(skip, got); diff != "" {
			t.Fatalf("skip row (-want +got):\n%s", diff)
		}
	}},
	{name: "ManualRunDefaults", fn: func(t *testing.T, b Bundle) {
		before := dbNow(t, b.Store)
		got, err := b.Store.RunInsert(ctx(t), store.Run{Job: "report", Manual: true, Success: true})
		if err != nil {
			t.Fatal(err)
		}
		after := dbNow(t, b.Store)
		if !got.Slot.IsZero() || !got.Manual || got.Logs != nil {
			t.Fatalf("manual run = %+v, want no slot and no logs", got)
		}
		if got.StartedAt.Before(before) || got.StartedAt.After(after) || !got.FinishedAt.Equal(got.StartedAt) {
			t.Fatalf("defaulted times = %s .. %s, want both the database clock between %s and %s", got.StartedAt, got.FinishedAt, before, after)
		}
	}},
	{name: "ListNewestFirstPagedAndFiltered", fn: func(t *testing.T, b Bundle) {
		var ids []int64
		for i := 0; i < 5; i++ {
			for _, job := range []string{"a", "b"} {
				r, err := b.Store.RunInsert(ctx(t), store.Run{Job: job, Success: true, Attempt: i + 1})
				if err != nil {
					t.Fatal(err)
				}
				if job == "a" {
					ids = append(ids, r.ID)
				}
			}
		}
		page1, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "a", Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		page2, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "a", Limit: 3, Before: page1[len(page1)-1].Cursor()})
		if err != nil {
			t.Fatal(err)
		}
		var got []int64
		for _, r := range append(page1, page2...) {
			if r.Job != "a" {
				t.Fatalf("filtered list returned a run of job %q", r.Job)
			}
			got = append(got, r.ID)
		}
		want := []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("ids newest first over two pages (-want +got):\n%s", diff)
		}
		all, err := b.Store.RunList(ctx(t), store.RunListParams{})
		if err != nil || len(all) != 10 {
			t.Fatalf("unfiltered list = %d rows, %v; want 10", len(all), err)
		}
	}},
	{name: "ListNewestStartedFirst", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		// Written in an order their starts do not follow, as a run's row
		// is written when it ends, after the skips recorded while it ran;
		// two of them start at one instant.
		starts := []int{5, 1, 3, 3, 0, 4, 2}
		ids := map[int64]int{}
		for i, s := range starts {
			for _, job := range []string{"a", "b"} {
				r, err := b.Store.RunInsert(ctx(t), store.Run{Job: job, Success: true, Attempt: i + 1, StartedAt: now.Add(time.Duration(s) * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				if job == "a" {
					ids[r.ID] = s
				}
			}
		}
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: "a"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, r := range runs {
			got = append(got, fmt.Sprintf("%d@%d", ids[r.ID], r.ID))
			if i > 0 && !(r.StartedAt.Before(runs[i-1].StartedAt) || r.StartedAt.Equal(runs[i-1].StartedAt) && r.ID < runs[i-1].ID) {
				t.Fatalf("runs (start second@id) %v: want newest start first, of one start the higher id first", got)
			}
		}
		if len(runs) != len(starts) {
			t.Fatalf("runs %v: want %d", got, len(starts))
		}
		// Paged two at a time from each page's last row, across the two
		// rows of one start too: the same rows in the same order.
		var paged []store.Run
		p := store.RunListParams{Job: "a", Limit: 2}
		for range len(starts) {
			page, err := b.Store.RunList(ctx(t), p)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			p.Before = page[len(page)-1].Cursor()
		}
		if diff := cmp.Diff(runs, paged); diff != "" {
			t.Fatalf("paged two at a time (-one page +pages):\n%s", diff)
		}
		// Every job's: the rows after a's third, of both jobs.
		all, err := b.Store.RunList(ctx(t), store.RunListParams{})
		if err != nil || len(all) != 2*len(starts) {
			t.Fatalf("every job's runs: %d, %v; want %d", len(all), err, 2*len(starts))
		}
		for i := 1; i < len(all); i++ {
			if r, prev := all[i], all[i-1]; !(r.StartedAt.Before(prev.StartedAt) || r.StartedAt.Equal(prev.StartedAt) && r.ID < prev.ID) {
				t.Fatalf("every job's runs: row %d %+v after %+v, out of order", i, r, prev)
			}
		}
		third := slices.IndexFunc(all, func(r store.Run) bool { return r.ID == runs[2].ID })
		after, err := b.Store.RunList(ctx(t), store.RunListParams{Before: runs[2].Cursor()})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(all[third+1:], after); diff != "" {
			t.Fatalf("every job's runs after a's third (-want +got):\n%s", diff)
		}
		for _, bad := range []store.RunCursor{{ID: 3}, {StartedAt: now}, {StartedAt: now, ID: -1}} {
			if _, err := b.Store.RunList(ctx(t), store.RunListParams{Before: bad}); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("RunList before %+v: %v, want ErrInvalidArgument", bad, err)
			}
		}
	}},
	{name: "GetByHolding", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		l := mustAcquire(t, b.Store, store.LeaseAcquireParams{Name: "job:report", Owner: "a", TTL: ttl, Now: now})
		if _, err := b.Store.RunGet(ctx(t), l.Name, l.Generation); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RunGet of a holding whose end is not recorded: %v, want ErrNotFound", err)
		}
		res := mustFinish(t, b.Store, store.SlotFinishParams{Job: "report", LeaseName: l.Name, Owner: l.Owner, Generation: l.Generation,
			Status: store.SlotCompleted, Now: now.Add(time.Second), Run: store.Run{Manual: true, Attempt: 1, Success: true, Logs: []string{"done"}}})
		// Rows after it, of its job and others, skips without a holding
		// among them: it is found by its holding all the same.
		for i := range 5 {
			for _, job := range []string{"report", "other"} {
				if _, err := b.Store.RunInsert(ctx(t), store.Run{Job: job, Success: true, Skipped: true, StartedAt: now.Add(time.Duration(i+2) * time.Second)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		got, err := b.Store.RunGet(ctx(t), l.Name, l.Generation)
		if err != nil {
			t.Fatalf("RunGet: %v", err)
		}
		if diff := cmp.Diff(res.Run, got); diff != "" {
			t.Fatalf("RunGet (-the row the finish wrote +got):\n%s", diff)
		}
		if _, err := b.Store.RunGet(ctx(t), l.Name, l.Generation+1); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RunGet of another generation: %v, want ErrNotFound", err)
		}
		if _, err := b.Store.RunGet(ctx(t), "job:other", l.Generation); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RunGet of another lease: %v, want ErrNotFound", err)
		}
		for _, bad := range []struct {
			name string
			gen  int64
		}{{"", 1}, {"job:report", 0}, {"job:report", -1}, {"bad\x00name", 1}} {
			if _, err := b.Store.RunGet(ctx(t), bad.name, bad.gen); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("RunGet(%q, %d): %v, want ErrInvalidArgument", bad.name, bad.gen, err)
			}
		}
	}},
	{name: "LogsBounded", fn: func(t *testing.T, b Bundle) {
		logs := make([]string, store.MaxRunLogLines+100)
		for i := range logs {
			logs[i] = fmt.Sprintf("line %d", i)
		}
		got, err := b.Store.RunInsert(ctx(t), store.Run{Job: "report", Logs: logs, Error: strings.Repeat("e", store.MaxRunErrorBytes*2)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Logs) != store.MaxRunLogLines {
			t.Fatalf("kept %d log lines, want %d", len(got.Logs), store.MaxRunLogLines)
		}
		if !strings.Contains(got.Logs[0], "101 earlier log lines dropped") || got.Logs[len(got.Logs)-1] != logs[len(logs)-1] {
			t.Fatalf("bounded logs start %q and end %q; want a marker first and the newest line last", got.Logs[0], got.Logs[len(got.Logs)-1])
		}
		if len(got.Error) > store.MaxRunErrorBytes {
			t.Fatalf("error kept at %d bytes, bound is %d", len(got.Error), store.MaxRunErrorBytes)
		}
	}},
	{name: "HostileText", fn: func(t *testing.T, b Bundle) {
		job := `robert'); DROP TABLE runs;-- ☃`
		got, err := b.Store.RunInsert(ctx(t), store.Run{Job: job, Error: "nul\x00byte", Logs: []string{"bad utf8 \xff", "ok"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"bad utf8 \uFFFD", "ok"}
		if got.Job != job || got.Error != "nul\uFFFDbyte" || !cmp.Equal(got.Logs, want) {
			t.Fatalf("hostile text stored as job %q, error %q, logs %q", got.Job, got.Error, got.Logs)
		}
		runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job})
		if err != nil || len(runs) != 1 {
			t.Fatalf("listing the hostile job: %d rows, %v", len(runs), err)
		}
	}},
}

var pruneTests = []namedTest{
	{name: "KeepsLatestClaimPerJob", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		day := 24 * time.Hour
		// "daily": slots 10, 9 and 8 days old, and one 1 day old.
		// "monthly": one slot 20 days old, its only claim.
		for _, c := range []struct {
			job string
			age time.Duration
		}{{"daily", 10 * day}, {"daily", 9 * day}, {"daily", 8 * day}, {"daily", day}, {"monthly", 20 * day}} {
			p := store.SlotClaimParams{Job: c.job, Slot: now.Add(-c.age), LeaseName: "job:" + c.job, Owner: "a", TTL: ttl, MaxAttempts: 1, Now: now.Add(-c.age)}
			r := mustClaim(t, b.Store, p)
			res := mustFinish(t, b.Store, finishParams(r, store.SlotCompleted, now.Add(-c.age)))
			if !res.SlotUpdated {
				t.Fatalf("finish of %s: %+v", c.job, res)
			}
			if _, err := b.Store.RunInsert(ctx(t), store.Run{Job: c.job, Skipped: true, Success: true, StartedAt: now.Add(-c.age)}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := b.Store.Prune(ctx(t), store.PruneParams{Before: now.Add(-7 * day)})
		if err != nil {
			t.Fatal(err)
		}
		// Slots: daily 10, 9, 8 go; monthly's only claim stays.
		// Runs: daily has 8 rows (a finish and a skip per slot); the six
		// older than the cutoff go. monthly's newest (its skip) stays, its
		// finish row goes.
		if want := (store.PruneResult{Slots: 3, Runs: 7}); res != want {
			t.Fatalf("Prune = %+v, want %+v", res, want)
		}
		for _, c := range []struct {
			job  string
			age  time.Duration
			kept bool
		}{{"daily", 10 * day, false}, {"daily", 8 * day, false}, {"daily", day, true}, {"monthly", 20 * day, true}} {
			_, err := b.Store.SlotGet(ctx(t), c.job, now.Add(-c.age))
			if kept := err == nil; kept != c.kept {
				t.Fatalf("slot of %s %s old: kept = %v (%v), want %v", c.job, c.age, kept, err, c.kept)
			}
		}
		// The kept monthly claim still blocks a catch-up of its slot.
		p := store.SlotClaimParams{Job: "monthly", Slot: now.Add(-20 * day), LeaseName: "job:monthly", Owner: "b", TTL: ttl, MaxAttempts: 3}
		wantRefusal(t, b.Store, p, store.ClaimCompleted)
	}},
	{name: "DeletesInStepsOfTheBatch", fn: func(t *testing.T, b Bundle) {
		cutoff := pruneHistory(t, b.Store)
		var steps []store.PruneResult
		res, err := b.Store.Prune(ctx(t), store.PruneParams{Before: cutoff, Batch: 2, AfterStep: func(total store.PruneResult) error {
			steps = append(steps, total)
			return nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		// Each job's five old slots and runs go, in steps of at most two
		// of each; the job's newest of each stays.
		if want := (store.PruneResult{Slots: 10, Runs: 10}); res != want {
			t.Fatalf("Prune = %+v, want %+v", res, want)
		}
		if len(steps) < 5 || steps[len(steps)-1] != res {
			t.Fatalf("steps' totals %+v: want at least 5 (10 rows of each, 2 a step), the last the result %+v", steps, res)
		}
		var last store.PruneResult
		for i, total := range steps {
			if total.Slots-last.Slots > 2 || total.Runs-last.Runs > 2 {
				t.Fatalf("step %d deleted %d slots and %d runs, more than the batch of 2 (totals %+v)", i+1, total.Slots-last.Slots, total.Runs-last.Runs, steps)
			}
			last = total
		}
		for _, job := range []string{"a", "b"} {
			runs, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || runs[0].StartedAt.Before(cutoff) {
				t.Fatalf("%s's runs after the prune: %+v, want its newest alone", job, runs)
			}
			if _, err := b.Store.SlotGet(ctx(t), job, cutoff.Add(time.Hour)); err != nil {
				t.Fatalf("%s's newest slot: %v", job, err)
			}
		}
	}},
	{name: "StepsThatCommittedStay", fn: func(t *testing.T, b Bundle) {
		cutoff := pruneHistory(t, b.Store)
		stop := errors.New("the retention lease was lost")
		res, err := b.Store.Prune(ctx(t), store.PruneParams{Before: cutoff, Batch: 3, AfterStep: func(store.PruneResult) error { return stop }})
		if !errors.Is(err, stop) {
			t.Fatalf("Prune stopped by its AfterStep: error %v, want one wrapping %v", err, stop)
		}
		if want := (store.PruneResult{Slots: 3, Runs: 3}); res != want {
			t.Fatalf("Prune stopped after its first step = %+v, want that step's %+v", res, want)
		}
		// The first step's deletes were committed: a prune that goes on
		// finds only the rest.
		res, err = b.Store.Prune(ctx(t), store.PruneParams{Before: cutoff})
		if want := (store.PruneResult{Slots: 7, Runs: 7}); err != nil || res != want {
			t.Fatalf("the prune after = %+v, %v; want %+v", res, err, want)
		}
	}},
	{name: "NothingToPrune", fn: func(t *testing.T, b Bundle) {
		res, err := b.Store.Prune(ctx(t), store.PruneParams{Before: dbNow(t, b.Store)})
		if err != nil || res != (store.PruneResult{}) {
			t.Fatalf("Prune on an empty store = %+v, %v", res, err)
		}
	}},
}

// pruneHistory writes the history the step tests prune: jobs "a" and "b"
// each claimed and ran five slots, a minute apart, before the cutoff it
// returns, and one an hour after it.
func pruneHistory(t *testing.T, s store.Store) (cutoff time.Time) {
	t.Helper()
	now := dbNow(t, s)
	cutoff = now.Add(-24 * time.Hour)
	for _, job := range []string{"a", "b"} {
		for i := range 6 {
			slot := cutoff.Add(-time.Duration(5-i) * time.Minute)
			if i == 5 {
				slot = cutoff.Add(time.Hour)
			}
			r := mustClaim(t, s, store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: ttl, MaxAttempts: 1, Now: slot})
			if res := mustFinish(t, s, finishParams(r, store.SlotCompleted, slot)); !res.SlotUpdated {
				t.Fatalf("finish of %s at %s: %+v", job, slot, res)
			}
		}
	}
	return cutoff
}

// runListPerJobTests: RunListPerJob gives each job its own newest runs, as
// RunList with that job would, in one call.
var runListPerJobTests = []namedTest{
	{name: "EachJobItsNewestRuns", fn: func(t *testing.T, b Bundle) {
		now := dbNow(t, b.Store)
		for i := range 5 {
			for _, job := range []string{"a", "b"} {
				if _, err := b.Store.RunInsert(ctx(t), store.Run{Job: job, Slot: now.Add(time.Duration(i) * time.Second), Owner: "o", Success: true}); err != nil {
					t.Fatal(err)
				}
			}
		}
		jobs := []string{"b", "none", "a"}
		got, err := b.Store.RunListPerJob(ctx(t), store.RunListPerJobParams{Jobs: jobs, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(jobs) {
			t.Fatalf("%d lists for %d jobs", len(got), len(jobs))
		}
		for i, job := range jobs {
			want, err := b.Store.RunList(ctx(t), store.RunListParams{Job: job, Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(got[i]) != len(want) {
				t.Fatalf("job %q: %d runs, want %d (as RunList)", job, len(got[i]), len(want))
			}
			for k := range want {
				if got[i][k].ID != want[k].ID || got[i][k].Job != job {
					t.Errorf("job %q run %d: %+v, want %+v", job, k, got[i][k], want[k])
				}
			}
		}
		if len(got[1]) != 0 {
			t.Errorf("a job with no run: %+v, want none", got[1])
		}
	}},
	{name: "RefusesBadInput", fn: func(t *testing.T, b Bundle) {
		for _, p := range []store.RunListPerJobParams{
			{Jobs: []string{"a"}, Limit: 0},
			{Jobs: []string{"a"}, Limit: store.MaxRunListLimit + 1},
			{Jobs: []string{"a", ""}, Limit: 1},
			{Jobs: []string{"a", "a"}, Limit: 1},
			{Jobs: make([]string, store.MaxRunListJobs+1), Limit: 1},
		} {
			if _, err := b.Store.RunListPerJob(ctx(t), p); !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("RunListPerJob(%d jobs, limit %d) = %v, want ErrInvalidArgument", len(p.Jobs), p.Limit, err)
			}
		}
	}},
}
