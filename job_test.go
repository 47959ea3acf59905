package cronfence

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

// TestRegisterRefusesTheLocalZone: "Local" is each machine's own zone, so two
// replicas in different zones would compute different slots for one job and
// run it twice. The YAML and CRON_TZ= refuse it; so must the library, with
// the same words, and whatever the spelling of the rest of the job.
func TestRegisterRefusesTheLocalZone(t *testing.T) {
	for _, zone := range []string{"Local"} {
		_, err := Job{Name: "report", Schedule: "0 6 * * *", TimeZone: zone, Handler: noop}.prepare()
		if err == nil {
			t.Fatalf("TimeZone %q: accepted; want it refused", zone)
		}
		for _, want := range []string{`job "report"`, `"Local" differs between machines`, "Europe/Lisbon"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("TimeZone %q: error %q does not say %q", zone, err, want)
			}
		}
	}
	// A CRON_TZ=Local prefix is refused by the schedule's parser already;
	// an IANA zone and the default (UTC) are accepted.
	for _, ok := range []Job{
		{Name: "report", Schedule: "0 6 * * *", TimeZone: "Europe/Lisbon", Handler: noop},
		{Name: "report", Schedule: "0 6 * * *", Handler: noop},
		{Name: "report", Schedule: "0 6 * * *", TimeZone: "UTC", Handler: noop},
	} {
		r, err := ok.prepare()
		if err != nil {
			t.Fatalf("TimeZone %q: %v", ok.TimeZone, err)
		}
		if got := r.sched.Next(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); got.IsZero() {
			t.Fatalf("TimeZone %q: no next slot", ok.TimeZone)
		}
	}
	if _, err := (Job{Name: "report", Schedule: "CRON_TZ=Local 0 6 * * *", Handler: noop}).prepare(); err == nil {
		t.Fatal("CRON_TZ=Local: accepted")
	}
}

func noop(context.Context, *Run) error { return nil }

// A schedule that can never fire would register a job that silently never
// runs: Register refuses it, saying why; a rare one (February 29) is
// accepted.
func TestRegisterRefusesAScheduleThatNeverFires(t *testing.T) {
	_, err := Job{Name: "report", Schedule: "0 0 31 2 *", Handler: noop}.prepare()
	if err == nil {
		t.Fatal(`"0 0 31 2 *": accepted; want it refused`)
	}
	for _, want := range []string{`job "report"`, "never fires", "day 31 never falls in February"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := (Job{Name: "report", Schedule: "0 0 29 2 *", TimeZone: "Europe/Lisbon", Handler: noop}).prepare(); err != nil {
		t.Errorf(`"0 0 29 2 *": %v; want it accepted (it fires every four years)`, err)
	}
}

// A deadline as long as the history's retention could never be judged: by
// the time it passes, the slot's row may have been pruned, and a slot with
// no row that old says nothing (absence: not judged). Register refuses it,
// as the YAML loader does, naming both.
func TestRegisterRefusesADeadlineThePruningOutlasts(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		retention, deadline time.Duration
		ok                  bool
	}{
		{time.Hour, 2 * time.Hour, false},
		{time.Hour, time.Hour, false},
		{2 * time.Hour, time.Hour, true},
		{-1, 30 * 24 * time.Hour, true}, // never pruned
		{0, 24 * time.Hour, true},       // the 7-day default
		{0, 7 * 24 * time.Hour, false},
	} {
		s, err := New(Config{Store: st, Retention: tc.retention, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		err = s.Register(Job{Name: "report", Schedule: "0 6 * * *", Deadline: tc.deadline, Handler: noop})
		switch {
		case tc.ok && err != nil:
			t.Errorf("retention %s, deadline %s: %v", tc.retention, tc.deadline, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "Deadline") || !strings.Contains(err.Error(), "Config.Retention")):
			t.Errorf("retention %s, deadline %s: %v; want it refused, naming Deadline and Config.Retention", tc.retention, tc.deadline, err)
		}
	}
}

// Jobs registered with the same spec and zone share one parsed schedule;
// another zone, or another spec, gets its own, with its own answers.
func TestPrepareSharesIdenticalSchedules(t *testing.T) {
	prep := func(spec, zone string) *registered {
		t.Helper()
		r, err := Job{Name: "report", Schedule: spec, TimeZone: zone, Handler: noop}.prepare()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := prep("0 6 * * *", "Europe/Lisbon"), prep("0 6 * * *", "Europe/Lisbon")
	if a.sched != b.sched {
		t.Error("the same spec and zone: two parsed schedules; want one shared")
	}
	at := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec, zone string
		next       time.Time
	}{
		{"0 6 * * *", "Europe/Lisbon", time.Date(2026, 7, 2, 5, 0, 0, 0, time.UTC)},
		{"0 6 * * *", "", time.Date(2026, 7, 2, 6, 0, 0, 0, time.UTC)},
		{"0 6 * * *", "Asia/Tokyo", time.Date(2026, 7, 1, 21, 0, 0, 0, time.UTC)},
		{"0 7 * * *", "Europe/Lisbon", time.Date(2026, 7, 2, 6, 0, 0, 0, time.UTC)},
	} {
		r := prep(tc.spec, tc.zone)
		if tc.spec != a.Schedule || tc.zone != a.TimeZone {
			if r.sched == a.sched {
				t.Errorf("%q in %q shares the schedule of %q in %q", tc.spec, tc.zone, a.Schedule, a.TimeZone)
			}
		}
		if got := r.sched.Next(at); !got.Equal(tc.next) {
			t.Errorf("%q in %q: Next(%s) = %s, want %s", tc.spec, tc.zone, at, got, tc.next)
		}
		if got := r.sched.String(); got != tc.spec {
			t.Errorf("%q: String() = %q", tc.spec, got)
		}
	}
}

// hostileJobNames are job names an attacker or a careless operator might
// declare. ok says whether Register must accept them (and every interface
// give them back byte for byte) or refuse them naming the field.
var hostileJobNames = []struct {
	label, name string
	ok          bool
}{
	{"quotes", `it's a "quoted" \name\`, true},
	{"sql", `'; DROP TABLE runs; --`, true},
	{"newlines", "line1\nline2\r\n", true},
	{"rtl", "\u202Eevil\u202C\u200F", true},
	{"emoji", "⏰ backup 🚀👩‍👩‍👧", true},
	{"combining", "e\u0301\u0301\u0301", true},
	{"dotdot", "../../etc/passwd", true},
	{"escaped-slash", "a%2Fb", true},
	{"slash", "reports/daily", true},
	{"max-length", strings.Repeat("é", MaxJobNameLength/2), true},
	{"nul", "a\x00b", false},
	{"empty", "", false},
	{"invalid-utf8", "\xff\xfe", false},
	{"over-max", strings.Repeat("é", MaxJobNameLength/2) + "x", false},
	{"10KB", strings.Repeat("x", 10<<10), false},
}

// Register takes a hostile name exactly or refuses it naming the field;
// an accepted name comes back unchanged from Jobs, the handler's Run,
// Trigger, SetEnabled and the store's run rows.
func TestHostileJobNames(t *testing.T) {
	t.Parallel()
	for _, kind := range hostileStores {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, _ := kind.open(t)
			seen := make(chan string, len(hostileJobNames))
			s, err := New(Config{Store: st, Logger: quiet, DisableTimers: true, Owner: "hostile-1", ShutdownGrace: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			for _, tc := range hostileJobNames {
				before := len(s.Jobs())
				err := s.Register(Job{Name: tc.name, Schedule: "@daily", Handler: func(ctx context.Context, run *Run) error {
					seen <- run.Job
					return nil
				}})
				if !tc.ok {
					if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "name") {
						t.Errorf("%s: Register: %v, want ErrInvalidArgument naming the name", tc.label, err)
					}
					if len(s.Jobs()) != before {
						t.Errorf("%s: a refused Register added a job", tc.label)
					}
					if _, err := s.Trigger(ctx, tc.name); !errors.Is(err, ErrUnknownJob) {
						t.Errorf("%s: Trigger of a refused name: %v, want ErrUnknownJob", tc.label, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: Register: %v", tc.label, err)
					continue
				}
				found := false
				for _, info := range s.Jobs() {
					found = found || info.Job.Name == tc.name
				}
				if !found {
					t.Errorf("%s: Jobs() lacks the name", tc.label)
				}
				off := false
				js, err := s.SetEnabled(ctx, tc.name, &off, tc.name, tc.name)
				if err != nil || js.Job != tc.name || js.OverrideBy != tc.name || js.Note != tc.name {
					t.Errorf("%s: SetEnabled: %+v %v", tc.label, js, err)
				}
				if _, err := s.SetEnabled(ctx, tc.name, nil, "ops", ""); err != nil {
					t.Errorf("%s: SetEnabled(nil): %v", tc.label, err)
				}
				mr, err := s.Trigger(ctx, tc.name)
				if err != nil || mr.Job != tc.name {
					t.Errorf("%s: Trigger: %+v %v", tc.label, mr, err)
					continue
				}
				select {
				case got := <-seen:
					if got != tc.name {
						t.Errorf("%s: the handler's Run.Job is %q", tc.label, got)
					}
				case <-ctx.Done():
					t.Fatalf("%s: the manual run never started", tc.label)
				}
				for {
					runs, err := st.RunList(ctx, store.RunListParams{Job: tc.name})
					if err != nil {
						t.Fatal(err)
					}
					if len(runs) == 1 {
						if runs[0].Job != tc.name || !runs[0].Manual {
							t.Errorf("%s: run row %+v", tc.label, runs[0])
						}
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("%s: no run row", tc.label)
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}
