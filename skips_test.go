package cronfence

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

// A slot that a deposed writer kept from being taken over until the next
// slot was due is recorded, not only logged: skipped, with a run row that
// names the writer. While the writer sits on the expired lease an alert
// says so, naming it; the alert is resolved once the job's lease can be
// taken again.
func TestSlotGivenUpToADeposedWriterIsRecordedAndAlerted(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needRowLocks(t, c)
		ctx := context.Background()
		st := c.open(t)
		mon := store.Monitor(st)
		start := c.db.Now()
		_, tx := frozenWriter(t, st, start.Add(-time.Minute), 1)
		rec := &recorder{}
		logs := &syncBuffer{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec, Logger: slog.New(slog.NewTextHandler(logs, nil))},
			Job{Name: "frozen", Schedule: "* * * * *", MaxAttempts: 1, Handler: func(context.Context, *Run) error { return nil }})
		first, second := start.Add(time.Minute), start.Add(2*time.Minute)

		c.advance(time.Minute, time.Minute) // the first slot meets the writer
		open := openAlerts(t, mon, store.AlertDeposedWriter)
		if len(open) != 1 || open[0].Subject != "frozen" || open[0].Details["writer"] != "dead" || open[0].Details["lease"] != "job:frozen" ||
			!strings.Contains(open[0].Message, "dead") {
			t.Fatalf("open deposed-writer alerts = %+v; want one for job frozen naming writer dead", open)
		}

		c.advance(time.Minute, 15*time.Second) // retried until the second slot is due: given up
		sl, err := st.SlotGet(ctx, "frozen", first)
		if err != nil || sl.Status != store.SlotSkipped {
			t.Fatalf("the given-up slot = %+v, %v; want recorded skipped", sl, err)
		}
		skips := skipRuns(t, st, "frozen")
		if len(skips) != 1 || !skips[0].Slot.Equal(first) || skips[0].Reason != string(store.SkipLeaseBusy) ||
			len(skips[0].Logs) != 1 || !strings.Contains(skips[0].Logs[0], "dead at generation 1") {
			t.Fatalf("skip rows = %+v; want one for slot %s, reason %s, naming the writer", skips, first, store.SkipLeaseBusy)
		}
		if !sawSkip(rec.take(), "frozen", first, string(store.SkipLeaseBusy)) {
			t.Errorf("no SkipEvent for the given-up slot")
		}
		if n := len(openAlerts(t, mon, store.AlertDeposedWriter)); n != 1 {
			t.Fatalf("%d deposed-writer alerts open while the writer still sits on the lease, want 1", n)
		}

		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, 500*time.Millisecond) // the second slot's next retry takes the lease
		if sl, err := st.SlotGet(ctx, "frozen", second); err != nil || sl.Generation != 2 {
			t.Fatalf("the second slot after the writer left = %+v, %v; want claimed at generation 2", sl, err)
		}
		if open := openAlerts(t, mon, store.AlertDeposedWriter); len(open) != 0 {
			t.Fatalf("deposed-writer alerts still open after the lease was taken: %+v", open)
		}
		resolved := false
		for _, e := range rec.take() {
			if a, ok := e.(AlertEvent); ok && a.Alert.Kind == store.AlertDeposedWriter && !a.Raised {
				resolved = true
			}
		}
		if !resolved {
			t.Errorf("no AlertEvent resolving the deposed-writer alert")
		}
		c.wantNeverDown()
	})
}

// Slots a stalled loop could not fire (the host slept, the process was
// stopped) are recorded as passed over where no replica ran them, at most
// maxPassedOverRecorded per job and stall; a slot another replica ran is
// left as it is; the latest slot runs.
func TestSlotsPassedOverInAStallAreRecorded(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		ctx := context.Background()
		st := c.open(t)
		start := c.db.Now()
		l := newLedger()
		rec := &recorder{}
		logs := &syncBuffer{}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: rec, Logger: slog.New(slog.NewTextHandler(logs, nil))},
			Job{Name: "minutely", Schedule: "* * * * *", Handler: l.handler(c.db)},
			Job{Name: "secondly", Schedule: "* * * * * *", Handler: l.handler(c.db)},
			Job{Name: "paused", Schedule: "* * * * *", Disabled: true, Handler: l.handler(c.db)})
		// Another replica ran minutely's 12:02 slot meanwhile.
		ranElsewhere := start.Add(2 * time.Minute)
		other := c.open(t)
		r, err := other.SlotClaim(ctx, store.SlotClaimParams{Job: "minutely", Slot: ranElsewhere, LeaseName: "job:minutely", Owner: "b",
			TTL: time.Minute, MaxAttempts: 3, Now: ranElsewhere})
		if err != nil || !r.Claimed {
			t.Fatalf("the other replica's claim = %+v, %v", r, err)
		}
		if _, err := other.SlotFinish(ctx, store.SlotFinishParams{Job: "minutely", Slot: ranElsewhere, LeaseName: r.Lease.Name, Owner: "b",
			Generation: r.Lease.Generation, Status: store.SlotCompleted, Now: ranElsewhere.Add(time.Second), Run: store.Run{Attempt: 1, Success: true}}); err != nil {
			t.Fatal(err)
		}

		c.advance(5*time.Minute, 5*time.Minute) // one wake-up, five minutes late
		latest := start.Add(5 * time.Minute)
		if n := l.ran("minutely", latest); n != 1 {
			t.Fatalf("minutely's latest slot ran %d times, want 1", n)
		}
		var passed []time.Time
		for _, r := range skipRuns(t, st, "minutely") {
			if r.Reason != string(store.SkipPassedOver) || !r.Skipped {
				t.Errorf("minutely skip row %+v; want reason %s", r, store.SkipPassedOver)
			}
			passed = append(passed, r.Slot)
		}
		want := []time.Time{start.Add(4 * time.Minute), start.Add(3 * time.Minute), start.Add(time.Minute)} // newest first
		if len(passed) != len(want) {
			t.Fatalf("minutely's passed-over rows are for %v; want %v (12:02 ran elsewhere)", passed, want)
		}
		for i := range want {
			if !passed[i].Equal(want[i]) {
				t.Fatalf("minutely's passed-over rows are for %v; want %v (12:02 ran elsewhere)", passed, want)
			}
		}
		if sl, err := st.SlotGet(ctx, "minutely", ranElsewhere); err != nil || sl.Status != store.SlotCompleted || sl.Owner != "b" {
			t.Fatalf("the slot another replica ran = %+v, %v; want left completed", sl, err)
		}
		events := rec.take()
		if !sawSkip(events, "minutely", start.Add(time.Minute), string(store.SkipPassedOver)) {
			t.Errorf("no SkipEvent for a passed-over slot")
		}

		// An every-second job passed over 299 slots: the first ten are
		// recorded, the tenth saying that more followed.
		secondly := skipRuns(t, st, "secondly")
		if len(secondly) != maxPassedOverRecorded {
			t.Fatalf("secondly has %d passed-over rows, want %d", len(secondly), maxPassedOverRecorded)
		}
		if last := secondly[0]; !last.Slot.Equal(start.Add(maxPassedOverRecorded*time.Second)) || !strings.Contains(last.Logs[0], "later slots until") {
			t.Errorf("secondly's last recorded row = %+v; want slot %s saying later slots followed", last, start.Add(maxPassedOverRecorded*time.Second))
		}
		if n := l.ran("secondly", latest); n != 1 {
			t.Fatalf("secondly's latest slot ran %d times, want 1", n)
		}
		// A paused job owes no slot: nothing passed over is recorded for
		// it; the slot its stalled entry claimed is settled paused.
		for _, r := range skipRuns(t, st, "paused") {
			if r.Reason != string(store.ClaimPaused) || !r.Slot.Equal(latest) {
				t.Fatalf("the paused job has a skip row %+v; want only its latest slot's, reason paused", r)
			}
		}
		// The stall is told once, whatever the number of jobs it held up,
		// and the 13 rows recorded in at most maxSkipLines lines and a
		// count: a replica behind with thousands of jobs wrote a line for
		// each job and each row.
		out := logs.String()
		if n := strings.Count(out, "slots passed while the scheduler could not fire"); n != 1 || !strings.Contains(out, "jobs=3") {
			t.Errorf("the stall was logged in %d lines, want 1 naming 3 jobs:\n%s", n, out)
		}
		if n := strings.Count(out, "slot recorded as skipped"); n != maxSkipLines || !strings.Contains(out, "more slots recorded as skipped") {
			t.Errorf("%d lines for single skips, want %d and a count of the rest:\n%s", n, maxSkipLines, out)
		}
		c.wantNeverDown()
	})
}

// A stall of thousands of jobs passes over tens of thousands of slots.
// They are recorded in statements of at most maxSkipBatch items, each
// bounded by StoreTimeout on its own, as claims are: one statement of all
// of them took seconds under load, and one that outlasted StoreTimeout
// lost every skip of the stall. Every one is still recorded.
func TestAStallOfManyJobsRecordsItsSkipsInBoundedStatements(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st, spy := spyOnSkips(c.open(t), false)
		const jobs = maxSkipBatch/maxPassedOverRecorded + 50
		noop := func(ctx context.Context, run *Run) error { return nil }
		var js []Job
		for i := range jobs {
			js = append(js, Job{Name: fmt.Sprintf("job-%d", i), Schedule: "* * * * * *", Handler: noop})
		}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Store: st}, js...)
		// One wake-up a minute late: each job passed over 59 slots, of
		// which maxPassedOverRecorded are recorded.
		c.advance(time.Minute, time.Minute)

		spy.mu.Lock()
		defer spy.mu.Unlock()
		recorded := 0
		for i, n := range spy.sizes {
			if n > maxSkipBatch {
				t.Errorf("statement %d of skips had %d items, want at most %d", i, n, maxSkipBatch)
			}
			recorded += spy.written[i]
		}
		if want := jobs * maxPassedOverRecorded; recorded != want {
			t.Fatalf("%d skips recorded in %d statement(s) %v, want %d", recorded, len(spy.sizes), spy.sizes, want)
		}
		if skips := skipRuns(t, st, fmt.Sprintf("job-%d", jobs-1)); len(skips) != maxPassedOverRecorded {
			t.Fatalf("the last job has %d skip rows, want %d", len(skips), maxPassedOverRecorded)
		}
		c.wantNeverDown()
	})
}

// When a statement of skips finds the store not answering within
// StoreTimeout, the statements after it would only wait as long again: the
// rest of the stall's skips are given up at once, with one warning that
// says how many, as a claim that timed out is not sent again.
func TestSkipsAfterAStatementTheStoreDidNotAnswerAreGivenUp(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	in, hung := spyOnSkips(st, true)
	logs := &syncBuffer{}
	s, err := New(Config{Store: in, Owner: "a", StoreTimeout: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]store.SlotSkipParams, 2*maxSkipBatch+500)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range items {
		slot := start.Add(time.Duration(i) * time.Second)
		items[i] = store.SlotSkipParams{Job: "secondly", Slot: slot, LeaseName: "job:secondly", Owner: "a", After: start.Add(time.Hour),
			Reason: store.SkipPassedOver, Log: "Skipped: passed over"}
	}
	s.claimer.skips.record(context.Background(), items)

	hung.mu.Lock()
	defer hung.mu.Unlock()
	if len(hung.sizes) != 1 {
		t.Fatalf("%d statements of skips sent (%v); want 1, the rest given up once the store did not answer it", len(hung.sizes), hung.sizes)
	}
	if out := logs.String(); !strings.Contains(out, "nor the ones after them") || !strings.Contains(out, "slots="+strconv.Itoa(len(items))) {
		t.Errorf("want one warning that the %d skips were not recorded:\n%s", len(items), out)
	}
}

// skipSpy records the size of each SlotSkip call and how many it wrote.
type skipSpy struct {
	mu      sync.Mutex
	sizes   []int
	written []int
}

// spyOnSkips is st recording its skips; with hang, SlotSkip answers
// nothing until its context ends.
func spyOnSkips(st store.Store, hang bool) (*intercepted, *skipSpy) {
	spy := &skipSpy{}
	in := intercept(st)
	in.before = func(c *call) {
		if hang && c.method == "SlotSkip" {
			<-c.ctx.Done()
			c.err = c.ctx.Err()
		}
	}
	in.after = func(c *call) {
		if c.method == "SlotSkip" {
			spy.mu.Lock()
			spy.sizes = append(spy.sizes, len(*c.arg.(*[]store.SlotSkipParams)))
			spy.written = append(spy.written, len(*c.result.(*[]store.Run)))
			spy.mu.Unlock()
		}
	}
	return in, spy
}

func openAlerts(t *testing.T, mon store.Monitor, kind store.AlertKind) []store.Alert {
	t.Helper()
	alerts, err := mon.AlertList(context.Background(), store.AlertListParams{OpenOnly: true, Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	return alerts
}

// skipRuns returns the job's skip run rows, newest first.
func skipRuns(t *testing.T, st store.Store, job string) []store.Run {
	t.Helper()
	runs, err := st.RunList(context.Background(), store.RunListParams{Job: job})
	if err != nil {
		t.Fatal(err)
	}
	var skips []store.Run
	for _, r := range runs {
		if r.Skipped {
			skips = append(skips, r)
		}
	}
	return skips
}

func sawSkip(events []Event, job string, slot time.Time, reason string) bool {
	for _, e := range events {
		if s, ok := e.(SkipEvent); ok && s.Job == job && s.Slot.Equal(slot) && s.Reason == reason {
			return true
		}
	}
	return false
}

// The slots a stall passed over are recorded off the scheduler's loop:
// while the recording waits on the store, the loop goes on firing. (It
// used to wait for it: at 10,000 jobs a replica behind wrote thousands of
// skips for half a second at a time, fired nothing meanwhile, and fell
// further behind.) What was passed over is still recorded.
func TestAStallsSkipsAreRecordedOffTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		// The store's SlotSkip waits at a gate: a recording of skips that
		// takes long (thousands of them under overload, behind the
		// others' claims).
		held := newGate()
		st := intercept(c.open(t))
		st.before = func(call *call) {
			if call.method == "SlotSkip" {
				held.pass()
			}
		}
		start := c.db.Now()
		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Store: st},
			Job{Name: "minutely", Schedule: "* * * * *", Handler: l.handler(c.db)},
			// Its one slot a day comes a second after the stall: it has no
			// earlier run whose end could still be on its way.
			Job{Name: "at", Schedule: "1 5 12 * * *", Handler: l.handler(c.db)})
		released := false
		defer func() {
			if !released {
				close(held.release)
			}
		}()

		c.db.Advance(5 * time.Minute) // one wake-up, five minutes late: slots passed over
		select {
		case <-held.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("the stall's skips were not recorded")
		}
		// The recording waits; the next second's slot is fired meanwhile.
		next := start.Add(5*time.Minute + time.Second)
		c.db.Advance(time.Second)
		for deadline := time.Now().Add(30 * time.Second); l.ran("at", next) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("slot %s did not run while the skips' recording waited on the store", next.Format(time.TimeOnly))
			}
		}
		close(held.release)
		released = true
		c.settle()
		if n := len(skipRuns(t, st, "minutely")); n != 4 {
			t.Fatalf("minutely has %d skip rows, want the 4 slots passed over", n)
		}
	})
}
