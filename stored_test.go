package cronfence

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// kindLedger records the runs of stored schedules' kinds: by job and slot,
// the replicas that ran it and the arguments each run got.
type kindLedger struct {
	*ledger
	mu   sync.Mutex
	args map[string][]string // job → the arguments of each run, in order
}

func newKindLedger() *kindLedger {
	return &kindLedger{ledger: newLedger(), args: map[string][]string{}}
}

func (k *kindLedger) handler(c *cluster) Handler {
	record := k.ledger.handler(c.db)
	return func(ctx context.Context, run *Run) error {
		k.mu.Lock()
		k.args[run.Job] = append(k.args[run.Job], string(run.Args))
		k.mu.Unlock()
		return record(ctx, run)
	}
}

// startKinds starts a replica that registers the kinds given, each run by h.
func (c *cluster) startKinds(name string, h Handler, kinds ...string) *Scheduler {
	c.t.Helper()
	s, err := New(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: -1, Store: c.open(c.t), Logger: quiet})
	if err != nil {
		c.t.Fatal(err)
	}
	for _, k := range kinds {
		if err := s.RegisterKind(k, h); err != nil {
			c.t.Fatal(err)
		}
	}
	if err := s.Start(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	c.replicas = append(c.replicas, s)
	c.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Stop(ctx)
	})
	c.settle()
	return s
}

// everyMinute is a stored schedule of kind "report" with the arguments args.
func everyMinute(args string) ScheduleSettings {
	return ScheduleSettings{Spec: "* * * * *", Kind: "report", Args: json.RawMessage(args)}
}

// seen waits until every replica that registers the schedule's kind has
// its version: the change reached every replica's timers.
func (c *cluster) seen(name string, version int64, on ...*Scheduler) {
	c.t.Helper()
	for range 30 {
		missing := false
		for _, s := range on {
			r := s.jobs.get(name)
			missing = missing || r == nil || r.stored == nil || r.stored.version != version
		}
		if !missing {
			return
		}
		// The replicas read the change log at their poll, on the
		// cluster's clock: move it on when they have not.
		c.advance(time.Second, time.Second)
	}
	c.t.Fatalf("schedule %s version %d did not reach every replica within 30 s of the cluster's clock", name, version)
}

// TestAStoredScheduleRunsOnTheReplicasThatKnowItsKind: a schedule created
// on one replica while three run is run at each of its slots once, by
// the replicas that register its kind only, with its arguments; a replica
// that does not know the kind never claims it.
func TestAStoredScheduleRunsOnTheReplicasThatKnowItsKind(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		a := c.startKinds("a", runs.handler(c), "report")
		b := c.startKinds("b", runs.handler(c), "report")
		other := c.startKinds("c", runs.handler(c), "invoice")

		sc, err := a.Schedules().Create(context.Background(), "tenant-7-report", everyMinute(`{"tenant":7}`), "alice")
		if err != nil {
			t.Fatal(err)
		}
		if sc.Version != 1 || sc.ID == 0 || sc.CreatedBy != "alice" {
			t.Fatalf("created %+v, want version 1, an ID and created by alice", sc)
		}
		c.advance(2*time.Second, time.Second) // a poll
		c.seen("tenant-7-report", 1, a, b)
		if other.jobs.get("tenant-7-report") != nil {
			t.Fatal("replica c, which does not register the kind, took the schedule")
		}
		c.advance(5*time.Minute, time.Second)
		start := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
		runs.wantEachOnce(t, "tenant-7-report", start, start.Add(5*time.Minute), time.Minute)
		runs.mu.Lock()
		defer runs.mu.Unlock()
		for _, args := range runs.args["tenant-7-report"] {
			if args != `{"tenant":7}` {
				t.Fatalf("a run got args %s, want {\"tenant\":7}", args)
			}
		}
		c.wantNeverDown()
	})
}

// TestAnEditTakesEffectAtTheNextSlotOfTheNewSpec: an update with the version
// read changes every replica's timers without a restart; one with a stale
// version is a conflict and changes nothing.
func TestAnEditTakesEffectAtTheNextSlotOfTheNewSpec(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		a := c.startKinds("a", runs.handler(c), "report")
		b := c.startKinds("b", runs.handler(c), "report")
		ctx := context.Background()
		if _, err := a.Schedules().Create(ctx, "nightly", everyMinute(`{}`), "alice"); err != nil {
			t.Fatal(err)
		}
		c.advance(3*time.Minute+30*time.Second, time.Second) // runs 12:01, 12:02, 12:03

		every2 := everyMinute(`{"v":2}`)
		every2.Spec = "*/2 * * * *"
		up, err := b.Schedules().Update(ctx, "nightly", 1, every2, "bob")
		if err != nil {
			t.Fatal(err)
		}
		if up.Version != 2 || up.UpdatedBy != "bob" || up.CreatedBy != "alice" {
			t.Fatalf("updated %+v, want version 2 by bob, created by alice", up)
		}
		stale := everyMinute(`{"v":"lost"}`)
		_, err = a.Schedules().Update(ctx, "nightly", 1, stale, "carol")
		var conflict *store.ConflictError
		if !errors.Is(err, ErrScheduleConflict) || !errors.As(err, &conflict) || conflict.Current != 2 {
			t.Fatalf("update at a stale version: %v, want a conflict naming version 2", err)
		}
		c.seen("nightly", 2, a, b)
		c.advance(4*time.Minute+30*time.Second, time.Second) // to 12:08:00
		for slot, want := range map[string]int{"12:01": 1, "12:02": 1, "12:03": 1, "12:04": 1, "12:05": 0, "12:06": 1, "12:07": 0, "12:08": 1} {
			at, _ := time.Parse("15:04", slot)
			at = time.Date(2026, 3, 1, at.Hour(), at.Minute(), 0, 0, time.UTC)
			if got := runs.ran("nightly", at); got != want {
				t.Errorf("slot %s ran %d times, want %d", slot, got, want)
			}
		}
		runs.wantNoneTwiceOrEarly(t)
		got, err := a.Schedules().Get(ctx, "nightly")
		if err != nil || got.Version != 2 || string(got.Args) != `{"v":2}` {
			t.Fatalf("get: %+v, %v; want version 2 with the edited args (the stale update lost)", got, err)
		}
	})
}

// TestADeletedScheduleStopsEverywhereAndARecreatedOneIsNew: a delete stops
// the schedule on every replica and keeps its history; created again under
// its name it is a new schedule (a new ID, version 1) that runs from its
// next slot.
func TestADeletedScheduleStopsEverywhereAndARecreatedOneIsNew(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		a := c.startKinds("a", runs.handler(c), "report")
		b := c.startKinds("b", runs.handler(c), "report")
		ctx := context.Background()
		first, err := a.Schedules().Create(ctx, "weekly", everyMinute(`{}`), "alice")
		if err != nil {
			t.Fatal(err)
		}
		c.advance(2*time.Minute+30*time.Second, time.Second) // runs 12:01, 12:02
		if _, err := b.Schedules().Delete(ctx, "weekly", 1, "bob"); err != nil {
			t.Fatal(err)
		}
		c.advance(2*time.Second, time.Second)
		wait.For(t, 30*time.Second, func() bool {
			c.db.Advance(0)
			return a.jobs.get("weekly") == nil && b.jobs.get("weekly") == nil
		}, func() string { return "the deleted schedule is still a job of a replica" })
		c.advance(2*time.Minute, time.Second) // 12:03 and 12:04 do not run
		for _, m := range []int{3, 4} {
			if n := runs.ran("weekly", time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC)); n != 0 {
				t.Fatalf("slot 12:%02d of the deleted schedule ran %d times", m, n)
			}
		}
		history, err := a.Store().RunList(ctx, store.RunListParams{Job: "weekly", Limit: 10})
		if err != nil || len(history) != 2 {
			t.Fatalf("history of the deleted schedule: %d runs, %v; want its 2 runs kept", len(history), err)
		}
		if _, err := a.Schedules().Get(ctx, "weekly"); !errors.Is(err, ErrUnknownSchedule) {
			t.Fatalf("get after delete: %v, want ErrUnknownSchedule", err)
		}

		again, err := a.Schedules().Create(ctx, "weekly", everyMinute(`{"again":true}`), "alice")
		if err != nil {
			t.Fatal(err)
		}
		if again.ID == first.ID || again.Version != 1 {
			t.Fatalf("recreated: ID %d version %d; want a new ID (was %d) at version 1", again.ID, again.Version, first.ID)
		}
		c.seen("weekly", 1, a, b)
		c.advance(2*time.Minute, time.Second) // 12:05, 12:06
		runs.wantNoneTwiceOrEarly(t)
		if n := runs.ran("weekly", time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)); n != 1 {
			t.Fatalf("the recreated schedule's slot 12:05 ran %d times, want once", n)
		}
		audit, err := a.Schedules().Audit(ctx, "weekly", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, ch := range audit {
			actions = append(actions, string(ch.Action)+" by "+ch.By)
		}
		if got, want := strings.Join(actions, ", "), "create by alice, delete by bob, create by alice"; got != want {
			t.Fatalf("audit newest first: %s; want %s", got, want)
		}
	})
}

// TestAnEditWhileARunHoldsTheLeaseNeverRunsTheSlotAgain: the run in
// progress finishes under the settings it started with; its slot, once
// completed, is not run again by the edited schedule; the new spec runs
// from its next slot.
func TestAnEditWhileARunHoldsTheLeaseNeverRunsTheSlotAgain(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		release := make(chan struct{})
		var once sync.Once
		held := func(ctx context.Context, run *Run) error {
			if err := runs.handler(c)(ctx, run); err != nil {
				return err
			}
			if run.Slot.Minute() == 1 {
				once.Do(func() { <-release })
			}
			return nil
		}
		a := c.startKinds("a", held, "report")
		ctx := context.Background()
		if _, err := a.Schedules().Create(ctx, "held", everyMinute(`{}`), "alice"); err != nil {
			t.Fatal(err)
		}
		c.advance(59*time.Second, time.Second)
		c.db.Advance(time.Second) // 12:01: the run starts and holds
		wait.For(t, 30*time.Second, func() bool { return runs.ran("held", time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)) == 1 },
			func() string { return "the 12:01 run did not start" })
		set := everyMinute(`{"edited":true}`)
		set.Spec = "*/2 * * * *"
		if _, err := a.Schedules().Update(ctx, "held", 1, set, "bob"); err != nil {
			t.Fatal(err)
		}
		c.db.Advance(2 * time.Second) // a poll while the run holds its lease
		close(release)
		c.settle()
		c.seen("held", 2, a)
		c.advance(3*time.Minute, time.Second) // to 12:04:02
		runs.wantNoneTwiceOrEarly(t)
		for m, want := range map[int]int{1: 1, 2: 1, 3: 0, 4: 1} {
			if n := runs.ran("held", time.Date(2026, 3, 1, 12, m, 0, 0, time.UTC)); n != want {
				t.Errorf("slot 12:%02d ran %d times, want %d", m, n, want)
			}
		}
	})
}

// TestBadSchedulesAreRefusedNamingTheFieldAndWriteNothing: a bad spec, zone,
// kind, argument, name or a declared job's name is refused with an error
// naming it, and nothing is written.
func TestBadSchedulesAreRefusedNamingTheFieldAndWriteNothing(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		s, err := New(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: time.Hour, Store: c.open(t), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.RegisterKind("report", func(context.Context, *Run) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := s.Register(Job{Name: "declared", Schedule: "@hourly", Handler: func(context.Context, *Run) error { return nil }}); err != nil {
			t.Fatal(err)
		}
		with := func(change func(*ScheduleSettings)) ScheduleSettings {
			set := everyMinute(`{"ok":true}`)
			change(&set)
			return set
		}
		for _, tc := range []struct {
			name, schedule string
			set            ScheduleSettings
			want           string
		}{
			{"spec", "s", with(func(s *ScheduleSettings) { s.Spec = "61 * * * *" }), "61"},
			{"never fires", "s", with(func(s *ScheduleSettings) { s.Spec = "0 0 31 2 *" }), "never"},
			{"empty spec", "s", with(func(s *ScheduleSettings) { s.Spec = "" }), "spec"},
			{"zone", "s", with(func(s *ScheduleSettings) { s.TimeZone = "Mars/Olympus" }), "time zone"},
			{"local zone", "s", with(func(s *ScheduleSettings) { s.TimeZone = "Local" }), "Local"},
			{"unknown kind", "s", with(func(s *ScheduleSettings) { s.Kind = "nobody-knows" }), "nobody-knows"},
			{"empty kind", "s", with(func(s *ScheduleSettings) { s.Kind = "" }), "kind"},
			{"args not JSON", "s", with(func(s *ScheduleSettings) { s.Args = json.RawMessage(`{tenant:7}`) }), "args"},
			{"args too long", "s", with(func(s *ScheduleSettings) {
				s.Args = json.RawMessage(`"` + strings.Repeat("x", store.MaxScheduleArgsBytes) + `"`)
			}), "args"},
			{"overlap", "s", with(func(s *ScheduleSettings) { s.Overlap = "twice" }), "overlap"},
			{"negative timeout", "s", with(func(s *ScheduleSettings) { s.Timeout = -time.Second }), "negative"},
			{"deadline (not watched)", "s", with(func(s *ScheduleSettings) { s.Deadline = time.Minute }), "deadline"},
			{"empty name", "", everyMinute(`{}`), "name"},
			{"long name", strings.Repeat("n", MaxJobNameLength+1), everyMinute(`{}`), "at most"},
			{"declared name", "declared", everyMinute(`{}`), "declared"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				_, err := s.Schedules().Create(context.Background(), tc.schedule, tc.set, "alice")
				if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("create: %v; want an invalid argument naming %q", err, tc.want)
				}
			})
		}
		ctx := context.Background()
		if page, err := s.Schedules().List(ctx, "", 0); err != nil || len(page) != 0 {
			t.Fatalf("after refusals: %d schedules, %v; want none", len(page), err)
		}
		if audit, err := s.Schedules().Audit(ctx, "", 0, 0); err != nil || len(audit) != 0 {
			t.Fatalf("after refusals: %d changes, %v; want none", len(audit), err)
		}
		if _, err := s.Schedules().Update(ctx, "missing", 1, everyMinute(`{}`), "alice"); !errors.Is(err, ErrUnknownSchedule) {
			t.Fatalf("update of a missing schedule: %v, want ErrUnknownSchedule", err)
		}
	})
}

// TestAChangeIsToldAtOnceOnPostgreSQL: with polling off, a change reaches
// another replica's timers by PostgreSQL's notice alone.
func TestAChangeIsToldAtOnceOnPostgreSQL(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		if c.kind != "postgres" {
			t.Skip("only PostgreSQL tells changes")
		}
		cfg := func(owner string) Config {
			return Config{Owner: owner, Clock: offsetClock{c.db, 0}, Retention: -1, SchedulePollEvery: -1, Logger: quiet}
		}
		h := func(context.Context, *Run) error { return nil }
		a := c.startWith(cfg("a"))
		b, err := New(func() Config { cf := cfg("b"); cf.Store = c.open(t); return cf }())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.RegisterKind("report", h); err != nil {
			t.Fatal(err)
		}
		if err := b.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.replicas = append(c.replicas, b)
		t.Cleanup(func() { _ = b.Stop(context.Background()) })
		c.settle()
		// a knows no kind: wait until b's heartbeat tells it.
		if _, err := a.Schedules().Create(context.Background(), "told", everyMinute(`{}`), "alice"); err != nil {
			t.Fatal(err)
		}
		wait.For(t, 30*time.Second, func() bool { r := b.jobs.get("told"); return r != nil },
			func() string { return "replica b never heard of the schedule created on a, with polling off" })
	})
}

// A replica applies a change of the stored schedules a moment after it
// was made: at its next poll of the change log (or notice). A slot that
// came due in between fires as soon as the change is applied, rather than
// being lost: here a schedule whose one slot of the day is a second after
// its creation, applied two seconds later.
func TestASlotDueBeforeTheChangeIsAppliedStillRuns(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		runs := newKindLedger()
		a := c.startKinds("a", runs.handler(c), "report")
		c.startKinds("b", runs.handler(c), "report")
		c.advance(30*time.Second, 30*time.Second) // 12:00:30
		slot := time.Date(2026, 3, 1, 12, 0, 31, 0, time.UTC)
		if _, err := a.Schedules().Create(context.Background(), "soon", ScheduleSettings{Spec: "31 0 12 * * *", Kind: "report"}, "alice"); err != nil {
			t.Fatal(err)
		}
		c.advance(3*time.Second, 3*time.Second) // one tick at 12:00:33: the poll applies it, after its slot
		c.advance(2*time.Second, time.Second)
		if got := runs.started("soon"); len(got) != 1 || !got[0].Equal(slot) {
			t.Fatalf("ran %v, want its slot %s once", got, slot.Format(time.TimeOnly))
		}
	})
}
