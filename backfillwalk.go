package cronfence

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/store"
)

// The walk of a backfill this replica drives (backfiller.go takes them
// up): its range from the cursor, one slot at a time, each judged from
// its slot row, claimed when it never ran, and counted when it settles.

// advance walks d's range from its cursor, counting the slots that need
// no run, until one does: it claims that one (after the wait Rate asks
// for), and the walk goes on once it is settled (settled). At the range's
// end the backfill is done.
func (bf *backfiller) advance(ctx context.Context, d *drive) {
	for {
		if bf.isDone(d) {
			return
		}
		slot := d.job.sched.Next(d.after())
		if slot.IsZero() || !slot.Before(d.b.To) {
			bf.finish(ctx, d)
			return
		}
		slot = slot.UTC()
		row, found, err := bf.row(ctx, d, slot)
		if err != nil {
			bf.retryLater(ctx, d, err)
			return
		}
		what, attempt, err := bf.judge(ctx, d, slot, row, found)
		if err != nil {
			bf.retryLater(ctx, d, err)
			return
		}
		if what != "" {
			d.count(what, slot)
			if d.unwritten >= backfillProgressEvery && !bf.write(ctx, d, false) {
				return
			}
			continue
		}
		// Written before the claim: a driver that takes over goes on from
		// the slot before this one, and finds this one run or running.
		if d.unwritten > 0 && !bf.write(ctx, d, false) {
			return
		}
		e := &entry{job: d.job, slot: slot, origin: OriginBackfill, attempt: int32(attempt)}
		if wait := d.rateWait(bf.e.cfg.Clock.Now()); wait > 0 {
			bf.refire(e, wait)
			return
		}
		bf.send(ctx, e)
		return
	}
}

// send claims e's slot now.
func (bf *backfiller) send(ctx context.Context, e *entry) {
	if claimed, _ := bf.claim(ctx, []*entry{e}); len(claimed) == 0 && !bf.stopped() {
		bf.refire(e, backfillWaitEvery) // the store did not answer
	}
}

// claimed handles the claimer's answer to the claim of e's slot, r (it
// runs on the claimer's goroutine: the walk goes on beside it). A slot
// claimed goes on once its run ends (ran); one whose job's lease another
// run holds waits for it; any other refusal settles it.
func (bf *backfiller) claimed(e *entry, r store.SlotClaimResult) {
	switch {
	case r.Claimed:
		bf.mu.Lock()
		if d := bf.driven[e.job.Name]; d != nil {
			d.lastStart = bf.e.cfg.Clock.Now()
		}
		bf.mu.Unlock()
		return
	case r.Refusal == store.ClaimHeld && r.Recorded == "" && r.Slot.Status == "":
		bf.refire(e, backfillWaitEvery)
		return
	}
	what := countTaken
	if r.Refusal == store.ClaimPaused {
		what = BackfillPaused
	}
	bf.settled(e.job, e.slot, what)
}

// ran goes on with the job's backfill once this replica's run of its
// slot ended, with the slot's status as the run left it.
func (bf *backfiller) ran(job *registered, slot time.Time, status store.SlotStatus) {
	what := countRan
	switch status {
	case store.SlotCompleted:
	case store.SlotFailed:
		what = countRanFailed
	default:
		// Left running (this replica stops, or lost the lease): a resume
		// finishes it; the backfill goes on past it.
		what = BackfillRunning
	}
	bf.settled(job, slot, what)
}

// settled counts the slot of job's backfill as what, and walks on.
func (bf *backfiller) settled(job *registered, slot time.Time, what string) {
	bf.mu.Lock()
	d := bf.driven[job.Name]
	bf.mu.Unlock()
	if d == nil || d.done || bf.stopped() {
		return
	}
	d.count(what, slot)
	bf.beside(func(ctx context.Context) {
		if bf.write(ctx, d, false) {
			bf.advance(ctx, d)
		}
	})
}

// retryLater goes on with d after backfillWaitEvery, the store having
// failed.
func (bf *backfiller) retryLater(ctx context.Context, d *drive, err error) {
	if ctx.Err() != nil || bf.isDone(d) {
		return
	}
	bf.e.WarnRepeated("cronfence: a backfill could not read the store; trying again", "backfill", d.b.ID, "job", d.b.Job, "error", err)
	// Taken up again by the next poll's renewal turn: the cheapest wait
	// that needs no timer of its own.
	bf.drop(d)
	bctx, cancel := bf.e.Bounded(ctx)
	defer cancel()
	_, _ = bf.e.Store.LeaseRelease(bctx, d.ref())
}

// isDone reports whether d ended here.
func (bf *backfiller) isDone(d *drive) bool {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	return d.done || bf.stopped()
}

// row returns the slot row of slot, reading the next page of the range
// when slot lies past the one read.
func (bf *backfiller) row(ctx context.Context, d *drive, slot time.Time) (store.Slot, bool, error) {
	if d.rows == nil || !slot.Before(d.pageEnd) {
		bctx, cancel := bf.e.Bounded(ctx)
		rows, err := bf.e.Store.SlotList(bctx, store.SlotListParams{Job: d.b.Job, From: slot, To: d.b.To, Limit: store.MaxSlotListLimit})
		cancel()
		if err != nil {
			return store.Slot{}, false, err
		}
		d.rows = make(map[int64]store.Slot, len(rows))
		for _, r := range rows {
			d.rows[r.Slot.Unix()] = r
		}
		d.pageEnd = d.b.To
		if len(rows) == store.MaxSlotListLimit {
			d.pageEnd = rows[len(rows)-1].Slot.Add(time.Second)
		}
	}
	r, ok := d.rows[slot.Unix()]
	return r, ok, nil
}

// judge says what the backfill does with slot (planOutcome): "" to run
// it, with the attempt a failed slot's rerun retries (0 for none), or
// the outcome that needs no run. Whether the job is paused is read only
// for a slot to run: a claim of a paused job's slot would settle it
// skipped, so the backfill leaves it untouched instead.
func (bf *backfiller) judge(ctx context.Context, d *drive, slot time.Time, row store.Slot, found bool) (string, int, error) {
	outcome := planOutcome(d.job, slot, row, found, false, d.b.IncludeFailed)
	if outcome != BackfillRun && outcome != BackfillRerun {
		return outcome, 0, nil
	}
	paused, err := bf.paused(ctx, d)
	switch {
	case err != nil:
		return "", 0, err
	case paused:
		return BackfillPaused, 0, nil
	case outcome == BackfillRerun:
		return "", row.Attempts, nil
	}
	return "", 0, nil
}

// paused is pausedNow, read at most once a backfillPausedEvery per
// drive: the slots that need a run come one after another, and each read
// lists every job's override.
func (bf *backfiller) paused(ctx context.Context, d *drive) (bool, error) {
	now := bf.e.cfg.Clock.Now()
	if !d.pausedAt.IsZero() && now.Sub(d.pausedAt) < backfillPausedEvery {
		return d.pausedNow, nil
	}
	bctx, cancel := bf.e.Bounded(ctx)
	defer cancel()
	paused, err := pausedNow(bctx, bf.e, d.job)
	if err == nil {
		d.pausedNow, d.pausedAt = paused, now
	}
	return paused, err
}

// write records d's progress, and the backfill's end with done. It
// reports whether the walk goes on: not when the backfill ended meanwhile
// (cancelled), or another driver took it over.
func (bf *backfiller) write(ctx context.Context, d *drive, done bool) bool {
	bctx, cancel := bf.e.Bounded(ctx)
	b, written, err := bf.e.Store.BackfillProgress(bctx, store.BackfillProgressParams{
		ID: d.b.ID, Cursor: d.b.Cursor, Counts: d.b.Counts, Driver: bf.e.cfg.Owner, Done: done})
	cancel()
	switch {
	case err != nil:
		bf.retryLater(ctx, d, err)
		return false
	case !written:
		if b.State == store.BackfillCancelled {
			bf.e.Log.Info("cronfence: backfill cancelled", "backfill", b.ID, "job", b.Job, "by", b.CancelledBy)
		}
		bf.release(ctx, d)
		return false
	}
	bf.mu.Lock()
	d.unwritten = 0
	bf.mu.Unlock()
	return true
}

// finish records d done and lets its lease go.
func (bf *backfiller) finish(ctx context.Context, d *drive) {
	if bf.write(ctx, d, true) {
		bf.e.Log.Info("cronfence: backfill done", "backfill", d.b.ID, "job", d.b.Job, "ran", d.b.Counts.Ran, "failed", d.b.Counts.Failed,
			"handled", d.b.Counts.Handled())
		bf.release(ctx, d)
	}
}

// release ends d here and lets its lease go.
func (bf *backfiller) release(ctx context.Context, d *drive) {
	bf.drop(d)
	bctx, cancel := bf.e.Bounded(ctx)
	defer cancel()
	_, _ = bf.e.Store.LeaseRelease(bctx, d.ref())
}
