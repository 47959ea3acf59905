package cronfence

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// jsonLines returns the JSON log lines in out whose msg is msg.
func jsonLines(t *testing.T, out *syncBuffer, msg string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(out.String(), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			lines = append(lines, m)
		}
	}
	return lines
}

// Every run ends with one log line naming the job, slot, attempt, result
// and duration: a successful run too, at INFO; a failed one at WARN.
func TestEveryRunEndsWithOneLogLine(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var out syncBuffer
		log := slog.New(slog.NewJSONHandler(&out, nil))
		ok := Job{Name: "ok", Schedule: "0 * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		bad := Job{Name: "bad", Schedule: "0 * * * * *", MaxAttempts: 1, Handler: func(context.Context, *Run) error {
			return errors.New("exit status 2")
		}}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: log}, ok, bad)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Second)

		ended := jsonLines(t, &out, "cronfence: run ended")
		if len(ended) != 2 {
			t.Fatalf("%d run-end lines, want one per run: %v", len(ended), ended)
		}
		byJob := map[string]map[string]any{}
		for _, l := range ended {
			byJob[l["job"].(string)] = l
		}
		for job, want := range map[string][2]string{"ok": {"INFO", "success"}, "bad": {"WARN", "failure"}} {
			l := byJob[job]
			if l == nil || l["level"] != want[0] || l["result"] != want[1] || l["attempt"] != 1.0 ||
				l["slot"] != slot.Format(time.RFC3339) || l["origin"] != "scheduled" || l["duration"] == nil {
				t.Errorf("job %s's run-end line = %v; want level %s, result %s, attempt 1, slot %s, origin and duration",
					job, l, want[0], want[1], slot.Format(time.RFC3339))
			}
		}
	})
}

// derivations is a slog.Handler that notes the jobs of the attributes it
// is asked to derive handlers with (WithAttrs), and logs through next.
type derivations struct {
	next slog.Handler
	mu   *sync.Mutex
	jobs map[string]int
}

func (d derivations) Enabled(ctx context.Context, l slog.Level) bool  { return d.next.Enabled(ctx, l) }
func (d derivations) Handle(ctx context.Context, r slog.Record) error { return d.next.Handle(ctx, r) }
func (d derivations) WithGroup(name string) slog.Handler {
	return derivations{d.next.WithGroup(name), d.mu, d.jobs}
}
func (d derivations) WithAttrs(attrs []slog.Attr) slog.Handler {
	d.mu.Lock()
	for _, a := range attrs {
		if a.Key == "job" {
			d.jobs[a.Value.String()]++
		}
	}
	d.mu.Unlock()
	return derivations{d.next.WithAttrs(attrs), d.mu, d.jobs}
}

// A run's Logger writes to the scheduler's logger with the run's job,
// slot and attempt, groups kept, and to the run's own log lines; a run
// that logs nothing costs the scheduler's handler nothing (deriving a
// text or JSON handler formats the attributes, at every run).
func TestARunsLoggerCarriesTheRunAndCostsNothingUnused(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var out syncBuffer
		d := derivations{slog.NewJSONHandler(&out, nil), &sync.Mutex{}, map[string]int{}}
		quiet := Job{Name: "quiet", Schedule: "0 * * * * *", Handler: func(context.Context, *Run) error { return nil }}
		talks := Job{Name: "talks", Schedule: "0 * * * * *", Handler: func(_ context.Context, run *Run) error {
			run.Logger.WithGroup("step").Info("working", "n", 1)
			return nil
		}}
		s := c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: -1, Logger: slog.New(d)}, quiet, talks)
		slot := c.db.Now().Truncate(time.Minute).Add(time.Minute)
		c.advance(time.Minute, time.Second)

		lines := jsonLines(t, &out, "working")
		if len(lines) != 1 {
			t.Fatalf("%d \"working\" lines, want 1:\n%s", len(lines), out.String())
		}
		l := lines[0]
		step, _ := l["step"].(map[string]any)
		if l["job"] != "talks" || l["owner"] != "a" || l["attempt"] != 1.0 || l["slot"] != slot.Format(time.RFC3339) || step["n"] != 1.0 {
			t.Errorf("the run's line = %v; want job talks, owner a, attempt 1, slot %s and step.n 1", l, slot.Format(time.RFC3339))
		}
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "talks"})
		if err != nil || len(runs) != 1 || len(runs[0].Logs) != 1 || !strings.Contains(runs[0].Logs[0], "working") {
			t.Fatalf("talks's runs = %+v, %v; want one with its line", runs, err)
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		if n := d.jobs["quiet"]; n != 0 {
			t.Errorf("the scheduler's handler derived %d handler(s) for a run that logged nothing", n)
		}
	})
}

// TestARunCutBeforeItsSlotDoesNotStart: a run whose claim committed ahead
// of its slot (store.SlotClaimResult.Wait) waits for the slot before its
// handler starts; when the replica's runs are cancelled meanwhile (Stop's
// grace over), the handler does not start at all, and the slot is left as
// a run cut short by shutdown is: still running, its lease released, for
// a live replica to resume at once. (Stop cancels the runs only once its
// loop is done, which on a real clock usually outlasts the 50 ms a claim
// is sent ahead, so the run is started here by hand.)
func TestARunCutBeforeItsSlotDoesNotStart(t *testing.T) {
	for _, o := range storeOpeners {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t, nil)(t)
			var called atomic.Int64
			s, err := New(Config{Store: st, Owner: "a", Logger: quiet, Retention: -1, HeartbeatEvery: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Register(Job{Name: "yearly", Schedule: "0 0 1 1 *", Handler: func(context.Context, *Run) error {
				called.Add(1)
				return nil
			}}); err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = s.Stop(context.Background()) }()
			now, err := st.Now(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			job := s.jobs.get("yearly")
			slot := now.Add(-time.Second).Truncate(time.Second)
			claim, err := st.SlotClaim(context.Background(), job.claimParams(slot, "a", 0, OriginScheduled, 0))
			if err != nil || !claim.Claimed {
				t.Fatalf("claim = %+v, %v", claim, err)
			}
			s.runner.cancel()
			ended := make(chan struct{})
			go func() {
				defer close(ended)
				s.runner.execute(runSpec{job: job, slot: slot, lease: claim.Lease, attempt: claim.Slot.Attempts, origin: OriginScheduled,
					sent: now, startAt: time.Now().Add(time.Hour)})
			}()
			select {
			case <-ended:
			case <-time.After(30 * time.Second):
				t.Fatal("a run cut before its slot (an hour away) did not end: it waits for the slot regardless")
			}
			if n := called.Load(); n != 0 {
				t.Fatalf("the handler ran %d time(s) although the run was cut before its slot", n)
			}
			sl, err := st.SlotGet(context.Background(), "yearly", slot)
			if err != nil {
				t.Fatal(err)
			}
			interrupted, err := st.SlotListInterrupted(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			resumable := false
			for _, i := range interrupted {
				resumable = resumable || (i.Job == "yearly" && i.Slot.Equal(slot))
			}
			if sl.Status != store.SlotRunning || !resumable {
				t.Fatalf("the slot after the cut = %+v (listed to resume: %v); want running and free to resume at once", sl, resumable)
			}
		})
	}
}

// A handler's plain error is recorded as it is: not decorated with the
// cancellation that ending the run's lease hold causes afterwards.
func TestFailedRunRecordsTheHandlersError(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		job := Job{Name: "failing", Schedule: "* * * * * *", Handler: func(_ context.Context, run *Run) error {
			run.Logger.Info("working")
			return errors.New("exit status 3")
		}}
		s := c.start("a", 0, job)
		c.advance(time.Second, time.Second)
		runs, err := s.e.Store.RunList(context.Background(), store.RunListParams{Job: "failing"})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		if r := runs[0]; r.Success || r.Error != "exit status 3" || len(r.Logs) != 1 || !strings.Contains(r.Logs[0], "working") {
			t.Fatalf("run row = %+v; want the handler's error as is and only its own log line", r)
		}
	})
}
