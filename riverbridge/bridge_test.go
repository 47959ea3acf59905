package riverbridge

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// testJob is the cronfence job the tests bridge: a slot every second.
func testJob(name string) cronfence.Job {
	return cronfence.Job{Name: name, Schedule: "* * * * * *", LeaseTTL: 5 * time.Second, MaxAttempts: 3}
}

// testConfig bridges to testArgs through client.
func testConfig(b *testBundle) Config[testArgs] {
	return Config[testArgs]{
		Pool: b.pool, Client: b.river,
		ArgsFunc: func(_ context.Context, run *cronfence.Run, slot Slot) (testArgs, error) {
			return testArgs{Slot: slot, Note: "from " + run.Owner}, nil
		},
	}
}

// startScheduler starts a replica with job registered, stopped at cleanup.
func startScheduler(t *testing.T, b *testBundle, job cronfence.Job) *cronfence.Scheduler {
	t.Helper()
	s, err := cronfence.New(cronfence.Config{
		Store: b.store, Owner: "test-" + cronfence.OwnerID(),
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(job); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Stop(ctx); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(stop)
	return s
}

// distinctAfter counts the distinct slots of job worked after from.
func distinctAfter(slots []Slot, job string, from time.Time) int {
	seen := map[string]bool{}
	for _, s := range slots {
		if s.Job == job && s.Time.After(from) {
			seen[s.Key] = true
		}
	}
	return len(seen)
}

func TestJob(t *testing.T) {
	t.Parallel()

	t.Run("EachSlotEnqueuedOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		job, err := Job(testJob("every-second"), testConfig(b))
		if err != nil {
			t.Fatal(err)
		}
		if !job.CompletesInTx {
			t.Fatal("Job did not set CompletesInTx")
		}
		// Two replicas, as in production: each slot is still one job.
		startScheduler(t, b, job)
		startScheduler(t, b, job)
		b.worked.waitFor(t, 20*time.Second, "3 slots", func(slots []Slot) bool {
			return distinctAfter(slots, job.Name, time.Time{}) >= 3
		})

		jobs := onePerSlot(t, b.riverJobs(t))
		for key, j := range jobs {
			if j.Slot.IsZero() || j.Slot.Truncate(time.Second) != j.Slot || key != job.Name+"/"+j.Slot.Format(time.RFC3339Nano) {
				t.Errorf("job %s carries slot %s: want a whole second, and the key job/slot", key, j.Slot)
			}
			if j.Attempt != 1 || j.Generation < 1 {
				t.Errorf("job %s: attempt %d generation %d, want attempt 1 and a generation", key, j.Attempt, j.Generation)
			}
			claim, err := b.store.SlotGet(context.Background(), job.Name, j.Slot)
			if err != nil {
				t.Fatal(err)
			}
			if claim.Status != store.SlotCompleted && claim.Status != store.SlotRunning {
				t.Errorf("slot %s with a River job is %s", key, claim.Status)
			}
		}
	})

	t.Run("UniqueKeyPerSlot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		ctx := context.Background()
		slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
		insert := func(attempt int, generation int64) (bool, error) {
			s := Slot{Key: "daily/" + slot.Format(time.RFC3339Nano), Job: "daily", Time: slot, Attempt: attempt, Generation: generation}
			var skipped bool
			err := pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
				res, err := b.river.InsertTx(ctx, tx, testArgs{Slot: s, Note: "attempt"}, &river.InsertOpts{UniqueOpts: uniqueOpts()})
				if err != nil {
					return err
				}
				skipped = res.UniqueSkippedAsDuplicate
				return nil
			})
			return skipped, err
		}
		if skipped, err := insert(1, 7); err != nil || skipped {
			t.Fatalf("first insert: skipped %v, err %v", skipped, err)
		}
		// A second attempt of the slot, under another generation and with
		// other args besides the key: the same job.
		if skipped, err := insert(2, 8); err != nil || !skipped {
			t.Fatalf("second insert of the slot: skipped %v, err %v; want skipped as a duplicate", skipped, err)
		}
		b.worked.waitFor(t, 10*time.Second, "the slot's job", func(slots []Slot) bool { return len(slots) >= 1 })
		// Worked (completed) jobs still hold the key.
		if skipped, err := insert(3, 9); err != nil || !skipped {
			t.Fatalf("insert after the job was worked: skipped %v, err %v; want skipped as a duplicate", skipped, err)
		}
		jobs := b.riverJobs(t)
		if len(jobs) != 1 || jobs[0].Attempt != 1 || jobs[0].Generation != 7 {
			t.Errorf("River jobs = %+v, want one: attempt 1, generation 7", jobs)
		}
	})

	t.Run("ArgsWithoutTheSlot", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cfg := testConfig(b)
		cfg.ArgsFunc = func(_ context.Context, run *cronfence.Run, slot Slot) (testArgs, error) {
			return testArgs{Slot: Slot{Key: "other"}}, nil
		}
		failed := make(chan error, 10)
		job, err := Job(testJob("mismatch"), cfg)
		if err != nil {
			t.Fatal(err)
		}
		h := job.Handler
		job.Handler = func(ctx context.Context, run *cronfence.Run) error {
			err := h(ctx, run)
			failed <- err
			return err
		}
		startScheduler(t, b, job)
		select {
		case err := <-failed:
			if !errors.Is(err, ErrSlotMismatch) {
				t.Errorf("run's error = %v, want ErrSlotMismatch", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no run within 10s")
		}
		if jobs := b.riverJobs(t); len(jobs) != 0 {
			t.Errorf("River jobs = %+v, want none", jobs)
		}
	})

	t.Run("Config", func(t *testing.T) {
		t.Parallel()
		for _, cfg := range []Config[testArgs]{
			{},
			{Pool: nil, Client: nil, ArgsFunc: testConfig(&testBundle{}).ArgsFunc},
		} {
			if _, err := Handler(cfg); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("Handler(%+v): err = %v, want ErrInvalidConfig", cfg, err)
			}
		}
		j := testJob("x")
		j.Handler = func(context.Context, *cronfence.Run) error { return nil }
		if _, err := Job(j, Config[testArgs]{}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Job with a Handler: err = %v, want ErrInvalidConfig", err)
		}
	})
}
