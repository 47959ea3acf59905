package cronfence

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// startLedger records when each slot's run started, by the database clock.
type startLedger struct {
	mu     sync.Mutex
	starts map[time.Time][]time.Time
}

func (l *startLedger) handler(c *cluster) Handler {
	return func(ctx context.Context, run *Run) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.starts == nil {
			l.starts = map[time.Time][]time.Time{}
		}
		l.starts[run.Slot] = append(l.starts[run.Slot], c.db.Now())
		return nil
	}
}

// Three replicas run a minutely job with a 50 s jitter. Each slot runs
// once, at the delay its hash gives, computed alike on every replica (a
// replica that computed another would claim first at its own, and the run
// would start then): never before it, never at or past the next slot; and
// the delays differ from slot to slot.
func TestJitterIsTheSameOnEveryReplicaAndNeverCrossesTheNextSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var l startLedger
		job := Job{Name: "spread", Schedule: "* * * * *", Jitter: 50 * time.Second, Handler: l.handler(c)}
		for _, name := range []string{"a", "b", "c"} {
			c.start(name, 0, job)
		}
		const step = time.Second
		c.advance(10*time.Minute, step)

		// The delays as another process computes them, from the job alone.
		r, err := job.prepare()
		if err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		delays := map[time.Duration]bool{}
		for slot := c.replicas[0].e.cfg.Clock.Now().Add(-10 * time.Minute).Truncate(time.Minute).Add(time.Minute); slot.Before(c.db.Now().Add(-time.Minute)); slot = slot.Add(time.Minute) {
			starts := l.starts[slot]
			if len(starts) != 1 {
				t.Fatalf("slot %s ran %d times, want once", slot.Format(time.TimeOnly), len(starts))
			}
			d := r.delay(slot)
			delays[d] = true
			if at := starts[0]; at.Before(slot.Add(d)) || !at.Before(slot.Add(d+step)) || !at.Before(slot.Add(time.Minute)) {
				t.Errorf("slot %s started at %s, want within a step of its delay %s (and before the next slot)", slot.Format(time.TimeOnly), at.Format(time.TimeOnly), d)
			}
		}
		if len(delays) < 3 {
			t.Errorf("9 slots had %d distinct delays: the jitter does not spread them", len(delays))
		}
	})
}

// A replica started inside a slot's jitter delay (no other replica ran it
// yet) fires that slot at its delay: it is not missed, though the job has
// no catch-up.
func TestAReplicaStartedInsideTheJitterDelayFiresTheSlot(t *testing.T) {
	// A job name whose 12:00 slot is delayed 10 s or more.
	slot := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var job Job
	var d time.Duration
	for i := 0; d < 10*time.Second; i++ {
		job = Job{Name: fmt.Sprintf("late-%d", i), Schedule: "* * * * *", Jitter: 50 * time.Second,
			Handler: func(context.Context, *Run) error { return nil }}
		r, err := job.prepare()
		if err != nil {
			t.Fatal(err)
		}
		d = r.delay(slot)
	}
	eachStoreFrom(t, slot.Add(time.Second), func(t *testing.T, c *cluster) {
		var l startLedger
		job := job
		job.Handler = l.handler(c)
		c.start("a", 0, job)
		c.advance(d, time.Second)
		l.mu.Lock()
		defer l.mu.Unlock()
		if got := l.starts[slot]; len(got) != 1 || got[0].Before(slot.Add(d)) {
			t.Fatalf("slot 12:00 (delay %s) of a replica started at 12:00:01 ran at %v, want once at its delay", d, got)
		}
	})
}

// A jitter that cannot keep its promise is refused, naming it.
func TestJitterSettings(t *testing.T) {
	noop := func(context.Context, *Run) error { return nil }
	for _, tc := range []struct {
		name, spec string
		jitter     time.Duration
		deadline   time.Duration
		wantErr    string
	}{
		{"below the interval", "* * * * *", 59 * time.Second, 0, ""},
		{"the interval", "* * * * *", time.Minute, 0, "Jitter 1m0s must be below the shortest interval between two of its slots, 1m0s"},
		{"the shortest of uneven intervals", "0 9,10 * * *", 2 * time.Hour, 0, "shortest interval between two of its slots, 1h0m0s"},
		{"every", "@every 30s", 30 * time.Second, 0, "shortest interval between two of its slots, 30s"},
		{"negative", "@hourly", -time.Second, 0, "Jitter must not be negative"},
		{"the deadline", "@hourly", 10 * time.Minute, 10 * time.Minute, "Jitter 10m0s must be below the Deadline 10m0s"},
		{"below the deadline", "@hourly", 10 * time.Minute, 11 * time.Minute, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Job{Name: "j", Schedule: tc.spec, Handler: noop, Jitter: tc.jitter, Deadline: tc.deadline}.prepare()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !errors.Is(err, store.ErrInvalidArgument)):
				t.Fatalf("error %v, want an invalid job saying %q", err, tc.wantErr)
			}
		})
	}
}

// The delay of a slot whose next slot comes sooner than the jitter (the
// daylight-saving change the scan did not meet, or a spec of uneven
// intervals) still ends before that next slot.
func TestJitterDelayEndsBeforeTheNextSlot(t *testing.T) {
	r, err := Job{Name: "uneven", Schedule: "0 9,10 * * *", Jitter: 50 * time.Minute,
		Handler: func(context.Context, *Run) error { return nil }}.prepare()
	if err != nil {
		t.Fatal(err)
	}
	r.Jitter = 5 * time.Hour // past what prepare allows: as if the scan had missed the short interval
	for day := range 200 {
		slot := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, day)
		if d := r.delay(slot); d < 0 || d >= time.Hour {
			t.Fatalf("slot %s: delay %s, want below the hour to the next slot", slot, d)
		}
	}
}
