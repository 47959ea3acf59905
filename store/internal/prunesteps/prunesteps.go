// Package prunesteps runs Store.Prune as the stores share it: a step at a
// time, each a transaction of its own, until a step finds nothing more to
// delete, the caller's AfterStep stops it, or a step fails.
package prunesteps

import (
	"context"
	"fmt"

	"github.com/cronfence/cronfence/store"
)

// Step deletes at most batch slots and batch runs older than the cutoff in
// one transaction, from where the last step stopped (the store keeps that
// in the step's closure). It returns what it deleted, and done when it
// found fewer than batch of each: nothing older is left to delete.
type Step func(ctx context.Context, batch int) (deleted store.PruneResult, done bool, err error)

// Run calls step until it is done, calling p.AfterStep after each. The
// totals count every step that committed, also beside an error.
func Run(ctx context.Context, p store.PruneParams, step Step) (store.PruneResult, error) {
	var total store.PruneResult
	for {
		deleted, done, err := step(ctx, p.BatchOrDefault())
		if err != nil {
			return total, err
		}
		total.Slots += deleted.Slots
		total.Runs += deleted.Runs
		if p.AfterStep != nil {
			if err := p.AfterStep(total); err != nil {
				return total, fmt.Errorf("store: prune stopped after a step: %w", err)
			}
		}
		if done {
			return total, nil
		}
	}
}

// JobCursor walks a table job by job for the stores that prune that way
// (SQLite, MySQL): a job's rows older than the cutoff are found through the
// table's index by (job, key), and the next job by one probe of it, so a
// step reads the jobs it passes and, for slots (keyed by their instant),
// only what it deletes. It remembers where the last step stopped: at a job
// that may have more rows to delete.
type JobCursor struct {
	job  string // "" before the first step: before every job name
	done bool   // no job is left
}

// NextJob returns the first job at or after after (after excluded unless
// inclusive) that has rows in the table, and its newest row's key; ok is
// false when there is none.
type NextJob func(ctx context.Context, after string, inclusive bool) (job string, newest any, ok bool, err error)

// DeleteOld deletes at most limit of job's rows older than the cutoff
// whose key is below newest, oldest first, and returns how many it did.
type DeleteOld func(ctx context.Context, job string, newest any, limit int) (int64, error)

// Step deletes at most batch rows, job after job from where the last step
// stopped, and returns how many. Done reports when every job was passed.
func (c *JobCursor) Step(ctx context.Context, batch int, next NextJob, deleteOld DeleteOld) (int64, error) {
	var n int64
	inclusive := true // the job the last step stopped at may have more
	for !c.done && n < int64(batch) {
		job, newest, ok, err := next(ctx, c.job, inclusive)
		if err != nil {
			return n, err
		}
		if !ok {
			c.done = true
			break
		}
		deleted, err := deleteOld(ctx, job, newest, batch-int(n))
		if err != nil {
			return n, err
		}
		n += deleted
		c.job, inclusive = job, false
	}
	return n, nil
}

// Done reports whether the walk passed every job.
func (c *JobCursor) Done() bool { return c.done }
