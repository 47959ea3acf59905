package riverbridge

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/cronfence/cronfence"
)

// Args is what a bridged job enqueues: River job args that carry the
// enqueuing run's Slot, by embedding it.
type Args interface {
	river.JobArgs
	CronfenceSlot() Slot
}

// Config configures a bridge from a cronfence job to River.
type Config[T Args] struct {
	// Pool is a pool on the database that holds both the cronfence store
	// (postgres.New) and River's tables: the River job and the slot's
	// completion are written in one transaction begun on it, so they must
	// live in one database (schemas may differ). Required.
	Pool *pgxpool.Pool
	// Client is the River client that inserts the jobs, with InsertTx. An
	// insert-only client (no Queues, no Workers) will do. Required.
	Client *river.Client[pgx.Tx]
	// ArgsFunc builds the args of the River job a run enqueues, with slot
	// (SlotOf(run)) embedded in them unchanged: a run whose args carry
	// another Key fails with ErrSlotMismatch. It is called again for each
	// attempt of a slot, and must not depend on the attempt for anything
	// tagged river:"unique". An error fails the run, which inserts nothing.
	// Required.
	ArgsFunc func(ctx context.Context, run *cronfence.Run, slot Slot) (T, error)
	// InsertOptsFunc, when set, returns the River insert options of a run's
	// job (queue, priority, max attempts, tags, scheduled time …); it may
	// return nil. Its UniqueOpts must be left empty: the bridge sets them
	// (ByArgs, across every job state), and a run whose options set any
	// fails. Defaults to nil: the args' InsertOpts, else River's defaults.
	InsertOptsFunc func(run *cronfence.Run) *river.InsertOpts

	// beforeCommit, when set, is called after the job's insert and the
	// slot's completion, before the commit. A test hook; nil in production.
	beforeCommit func(ctx context.Context, run *cronfence.Run)
}

func (c *Config[T]) validate() error {
	switch {
	case c.Pool == nil:
		return fmt.Errorf("%w: Pool is required", ErrInvalidConfig)
	case c.Client == nil:
		return fmt.Errorf("%w: Client is required", ErrInvalidConfig)
	case c.ArgsFunc == nil:
		return fmt.Errorf("%w: ArgsFunc is required", ErrInvalidConfig)
	}
	return nil
}

// uniqueOpts makes a River job unique per slot: by its args, of which only
// Slot.Key is tagged unique, in every state, so that not even a cancelled
// or discarded job of the slot lets a second one in while its row exists.
func uniqueOpts() river.UniqueOpts {
	return river.UniqueOpts{ByArgs: true, ByState: rivertype.JobStates()}
}

// Job returns job with its Handler set to the bridge's (see Handler) and
// CompletesInTx set: the job's runs enqueue a River job each, in the
// transaction that completes their slot. job must have no Handler of its
// own; its other fields (Name, Schedule, LeaseTTL, MaxAttempts …) are kept.
func Job[T Args](job cronfence.Job, cfg Config[T]) (cronfence.Job, error) {
	if job.Handler != nil {
		return cronfence.Job{}, fmt.Errorf("%w: job %q has a Handler: the bridge sets it", ErrInvalidConfig, job.Name)
	}
	h, err := Handler(cfg)
	if err != nil {
		return cronfence.Job{}, err
	}
	job.Handler = h
	job.CompletesInTx = true
	return job, nil
}

// Handler returns a cronfence handler that enqueues one River job per run:
// it begins a transaction on cfg.Pool, inserts the job built by
// cfg.ArgsFunc with Client.InsertTx (unique per slot), completes the run's
// slot with run.Complete, and commits. Register it on a job with
// CompletesInTx set (Job does both).
//
// When the slot's job exists already (UniqueSkippedAsDuplicate), nothing is
// inserted and the slot is completed all the same: its job is enqueued.
func Handler[T Args](cfg Config[T]) (cronfence.Handler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return func(ctx context.Context, run *cronfence.Run) error {
		slot := SlotOf(run)
		args, err := cfg.ArgsFunc(ctx, run, slot)
		if err != nil {
			return fmt.Errorf("riverbridge: building the args of job %s: %w", slot.Key, err)
		}
		if got := args.CronfenceSlot(); got.Key != slot.Key {
			return fmt.Errorf("%w: Key %q, want %q (embed the Slot ArgsFunc is given)", ErrSlotMismatch, got.Key, slot.Key)
		}
		opts := &river.InsertOpts{}
		if cfg.InsertOptsFunc != nil {
			if o := cfg.InsertOptsFunc(run); o != nil {
				if u := o.UniqueOpts; u.ByArgs || u.ByPeriod != 0 || u.ByQueue || u.ByState != nil || u.ExcludeKind {
					return fmt.Errorf("%w: InsertOptsFunc set UniqueOpts: the bridge sets them", ErrInvalidConfig)
				}
				c := *o
				opts = &c
			}
		}
		// These win over the args' own InsertOpts (River takes those only
		// where these are empty).
		opts.UniqueOpts = uniqueOpts()

		tx, err := cfg.Pool.Begin(ctx)
		if err != nil {
			return fmt.Errorf("riverbridge: beginning the transaction of %s: %w", slot.Key, err)
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // a no-op after the commit
		res, err := cfg.Client.InsertTx(ctx, tx, args, opts)
		if err != nil {
			return fmt.Errorf("riverbridge: inserting the River job of %s: %w", slot.Key, err)
		}
		if err := run.Complete(ctx, tx); err != nil {
			return fmt.Errorf("riverbridge: completing %s: %w", slot.Key, err)
		}
		if cfg.beforeCommit != nil {
			cfg.beforeCommit(ctx, run)
		}
		if err := tx.Commit(ctx); err != nil {
			// The commit's outcome is unknown: the scheduler reads whether
			// the slot was completed (CompletesInTx), and resumes it if not.
			return fmt.Errorf("riverbridge: committing %s: %w", slot.Key, err)
		}
		if res.UniqueSkippedAsDuplicate {
			run.Logger.InfoContext(ctx, "riverbridge: the slot's River job existed already; none inserted",
				"key", slot.Key, "river_job_id", res.Job.ID)
		} else {
			run.Logger.DebugContext(ctx, "riverbridge: River job enqueued", "key", slot.Key, "river_job_id", res.Job.ID)
		}
		return nil
	}, nil
}
