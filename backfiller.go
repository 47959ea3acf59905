package cronfence

import (
	"context"
	"errors"
	"slices"
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
	mine := slices.ContainsFunc(running, func(b store.Backfill) bool { return bf.jobs.get(b.Job) != nil })
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
