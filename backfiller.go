package cronfence

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// A backfill (Scheduler.Backfill) is a row in the store; a replica that
// registers its job drives it: it takes the backfill's lease, walks the
// range's slots oldest first from the cursor the row records, and claims
// each slot that never ran, one at a time, at most Rate a second, as an
// entry of origin OriginBackfill that goes through the claimer like any
// other. The store's slot row keeps each slot to one run whoever claims
// it; the backfill's lease keeps the walk to one replica; the cursor and
// counts, written before each claim, let another replica go on where a
// driver that died stopped.

const (
	// backfillPollEvery is how often a replica looks for backfills to
	// drive, and renews the leases of those it drives, while one of its
	// jobs' runs or it is not told of new ones. A backfill asked for on a
	// replica that registers its job is looked for at once (soon), as is
	// one told (store.NoticeBackfill).
	backfillPollEvery = 10 * time.Second
	// backfillIdlePollEvery is how often a replica told of new backfills
	// looks for them while none of its jobs' runs: a backstop. Every
	// replica looking every backfillPollEvery was two statements a slot
	// of a job every 2 s at 10 replicas (issue 14's goal is five in all).
	backfillIdlePollEvery = time.Minute
	// backfillLeaseTTL is the lease a driver holds: a replica that dies
	// leaves its backfills to another after this long.
	backfillLeaseTTL = 30 * time.Second
	// backfillWaitEvery is how often a backfill claims again a slot whose
	// job's lease another run holds, or that the store could not be asked
	// for.
	backfillWaitEvery = time.Second
	// backfillPausedEvery is how long a backfill takes its job's pause
	// state as read: a slot claimed while the job was paused since is
	// settled skipped (paused) by the store, as any slot of a paused job.
	backfillPausedEvery = time.Second
	// backfillProgressEvery bounds how many slots that need no run are
	// passed over between two writes of the progress.
	backfillProgressEvery = 100
)

// backfiller drives, on this replica, the backfills of the jobs it
// registers. The loop ticks it; its store work runs beside the loop.
type backfiller struct {
	e       *env
	jobs    *jobSet
	claim   func(ctx context.Context, batch []*entry) ([]*entry, []store.SlotClaimResult)
	refire  func(e *entry, wait time.Duration)
	beside  func(func(ctx context.Context))
	stopped func() bool
	// told reports whether this replica is told of new backfills now
	// (the store's notices, heard); nil: never.
	told func() bool

	mu       sync.Mutex
	polling  bool
	nextPoll time.Time
	driven   map[string]*drive // by job: one backfill of a job runs at a time
	// running: the last look found a backfill of a job registered here
	// running (driven here or elsewhere); it is looked at every
	// backfillPollEvery, so that a driver that died is replaced soon.
	running bool
}

// tick looks for backfills to drive every backfillPollEvery, or every
// backfillIdlePollEvery while none of this replica's jobs' runs and it is
// told of new ones.
func (bf *backfiller) tick(now time.Time) {
	told := bf.told != nil && bf.told()
	bf.mu.Lock()
	if bf.polling || now.Before(bf.nextPoll) {
		bf.mu.Unlock()
		return
	}
	every := backfillPollEvery
	if told && !bf.running && len(bf.driven) == 0 {
		every = backfillIdlePollEvery
	}
	bf.polling, bf.nextPoll = true, now.Add(every)
	bf.mu.Unlock()
	bf.beside(func(ctx context.Context) {
		defer func() {
			bf.mu.Lock()
			bf.polling = false
			bf.mu.Unlock()
		}()
		bf.poll(ctx)
	})
}

// soon has the next tick look for backfills to drive.
func (bf *backfiller) soon() {
	bf.mu.Lock()
	bf.nextPoll = time.Time{}
	bf.mu.Unlock()
}

// poll renews the leases of the backfills driven here and takes up the
// running backfills of jobs registered here that nobody drives.
func (bf *backfiller) poll(ctx context.Context) {
	bf.mu.Lock()
	var held []*drive
	for _, d := range bf.driven {
		held = append(held, d)
	}
	bf.mu.Unlock()
	for _, d := range held {
		bf.renew(ctx, d)
	}
	bctx, cancel := bf.e.Bounded(ctx)
	running, err := bf.e.Store.BackfillList(bctx, store.BackfillListParams{Running: true, Limit: store.MaxBackfillListLimit})
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			bf.e.WarnRepeated("cronfence: could not list the running backfills", "error", err)
		}
		return
	}
	mine := false
	for _, b := range running {
		mine = mine || bf.jobs.get(b.Job) != nil
	}
	bf.mu.Lock()
	bf.running = mine
	bf.mu.Unlock()
	for _, b := range running {
		r := bf.jobs.get(b.Job)
		if r == nil || bf.stopped() {
			continue
		}
		bf.mu.Lock()
		_, driven := bf.driven[b.Job]
		bf.mu.Unlock()
		if driven {
			continue
		}
		bctx, cancel := bf.e.Bounded(ctx)
		lease, acquired, err := bf.e.Store.LeaseAcquire(bctx, store.LeaseAcquireParams{
			Name: backfillLease(b.ID), Owner: bf.e.cfg.Owner, TTL: backfillLeaseTTL, LiveKey: bf.e.LiveKey.Load()})
		cancel()
		if err != nil || !acquired {
			continue // another replica drives it, or will
		}
		d := &drive{b: b, job: r, lease: lease}
		bf.mu.Lock()
		if bf.driven == nil {
			bf.driven = map[string]*drive{}
		}
		bf.driven[b.Job] = d
		bf.mu.Unlock()
		bf.e.Log.Info("cronfence: driving a backfill", "backfill", b.ID, "job", b.Job, "from", b.From, "to", b.To,
			"cursor", b.Cursor, "handled", b.Counts.Handled(), "total", b.Total)
		bf.advance(ctx, d)
	}
}

// backfillLease is the lease of backfill id's driver.
func backfillLease(id int64) string { return "backfill:" + strconv.FormatInt(id, 10) }

// renew renews d's lease; a lease lost ends d here.
func (bf *backfiller) renew(ctx context.Context, d *drive) {
	bctx, cancel := bf.e.Bounded(ctx)
	lease, err := bf.e.Store.LeaseRenew(bctx, store.LeaseRenewParams{LeaseRef: d.ref(), TTL: backfillLeaseTTL})
	cancel()
	switch {
	case err == nil:
		bf.mu.Lock()
		d.lease = lease
		bf.mu.Unlock()
	case errors.Is(err, store.ErrLeaseLost):
		bf.e.Log.Warn("cronfence: lost the lease of a backfill; another replica goes on with it", "backfill", d.b.ID, "job", d.b.Job)
		bf.drop(d)
	}
}

// drop ends d on this replica.
func (bf *backfiller) drop(d *drive) {
	bf.mu.Lock()
	defer bf.mu.Unlock()
	d.done = true
	if bf.driven[d.b.Job] == d {
		delete(bf.driven, d.b.Job)
	}
}

// stop releases the leases of the backfills driven here, so that another
// replica goes on with them at once.
func (bf *backfiller) stop(ctx context.Context) {
	bf.mu.Lock()
	held := bf.driven
	bf.driven = nil
	for _, d := range held {
		d.done = true
	}
	bf.mu.Unlock()
	for _, d := range held {
		bctx, cancel := bf.e.Bounded(ctx)
		_, _ = bf.e.Store.LeaseRelease(bctx, d.ref())
		cancel()
	}
}

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
