package cronfence

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/store"
)

// Scheduler runs registered jobs so that each slot runs once across every
// replica sharing the store. Build it with New, Register jobs, Start it, and
// Stop it on shutdown.
type Scheduler struct {
	cfg   Config
	store store.Store
	log   *slog.Logger

	mu                        sync.Mutex
	jobs                      map[string]*registered
	heap                      timers
	started                   bool
	stopped                   bool
	liveKey                   int64
	release                   func()
	keeper                    *leasekeeper.Keeper
	catchUp                   bool                 // a catch-up pass is due: the store came back
	missed                    map[string]time.Time // per job, the latest slot that fired while the store was down
	deposed                   map[string]bool      // jobs whose deposed-writer alert this replica raised or refreshed (giveup.go)
	down                      bool                 // the last claim failed: the store is unreachable
	nextPrune, nextClockCheck time.Time
	nextResume                time.Time
	unregistered              []string     // jobs registered after Start whose first registration is not recorded yet
	monitor                   monitorState // the absence checks (monitor.go)

	wake        chan struct{}
	loopCancel  context.CancelFunc
	loopDone    chan struct{}
	runsCtx     context.Context // parent of every handler's context; cancelled after the shutdown grace
	runsCancel  context.CancelFunc
	runs        sync.WaitGroup
	scans       sync.WaitGroup // the resume pass in its own goroutine, if one runs
	resuming    atomic.Bool    // a resume pass runs
	busy        atomic.Int64   // fires, resume passes and runs in progress; for tests
	offset      atomic.Int64   // this clock minus the database clock, in ns
	pauseUnread atomic.Bool    // the last claim could not read the pause overrides (see notePauseState)
	reg         registry       // this replica's row in the replica registry (registry.go)
}

// New returns a Scheduler. It does no I/O.
func New(cfg Config) (*Scheduler, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	s := &Scheduler{
		cfg: c, store: c.Store, log: c.Logger.With("owner", c.Owner),
		jobs: map[string]*registered{}, missed: map[string]time.Time{}, deposed: map[string]bool{}, wake: make(chan struct{}, 1),
	}
	s.runsCtx, s.runsCancel = context.WithCancel(context.Background())
	return s, nil
}

// Register adds a job. Jobs may be registered before or after Start; every
// replica must register the same jobs with the same settings.
func (s *Scheduler) Register(job Job) error {
	r, err := job.prepare()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.jobs[r.Name]; dup {
		return errInvalid(fmt.Sprintf("job %q is already registered", r.Name))
	}
	s.jobs[r.Name] = r
	s.jobsChanged()
	if s.started {
		s.unregistered = append(s.unregistered, r.Name) // recorded by the next tick
	}
	if s.started && !s.stopped && !s.cfg.DisableTimers {
		s.arm(r, s.scheduleNow())
		s.poke()
	}
	return nil
}

// Start begins firing jobs. It checks the store's schema, takes this
// replica's liveness lock where the store has them, and runs catch-up for
// jobs with a CatchUpWindow. It returns once the scheduler is running; ctx
// bounds only the start-up round trips.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("cronfence: scheduler already started")
	}
	s.started = true
	s.mu.Unlock()

	db, bin, err := s.store.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("cronfence: start: %w", err)
	}
	if db != bin {
		return fmt.Errorf("cronfence: start: %w", &store.SchemaVersionError{Database: db, Binary: bin})
	}
	if lv, ok := s.store.(store.Liveness); ok {
		key, release, err := lv.LivenessHold(ctx, s.cfg.Owner)
		if err != nil {
			s.log.Warn("cronfence: no liveness lock; a crash of this replica frees its leases only at their TTL", "error", err)
		} else {
			s.liveKey, s.release = key, release
		}
	}
	s.keeper = leasekeeper.New(s.store, leasekeeper.Options{Clock: s.cfg.Clock})
	s.measureOffset(ctx)
	now := s.scheduleNow()
	s.heartbeat(ctx, now)
	s.mu.Lock()
	names := make([]string, 0, len(s.jobs))
	for name := range s.jobs {
		names = append(names, name)
	}
	s.mu.Unlock()
	s.registerJobs(ctx, names)
	s.mu.Lock()
	s.nextClockCheck = now.Add(s.cfg.ClockCheckEvery)
	if s.cfg.DisableTimers {
		// An API-only process: manual runs and pauses, no timers. Its loop
		// only measures the clock offset and keeps its registry row fresh.
		s.mu.Unlock()
	} else {
		for _, r := range s.jobs {
			s.arm(r, now)
		}
		s.nextPrune = now // the first prune soon after start, by whichever replica gets there
		latest := map[string]time.Time{}
		for name, r := range s.jobs {
			latest[name] = r.sched.Prev(now)
		}
		s.mu.Unlock()
		s.runCatchUp(ctx, now, latest, true)
	}

	loopCtx, cancel := context.WithCancel(context.Background())
	s.loopCancel, s.loopDone = cancel, make(chan struct{})
	go s.loop(loopCtx)
	return nil
}

// JobInfo describes a registered job.
type JobInfo struct {
	Job  Job       // as registered, with defaults applied
	Next time.Time // its next slot after now, in its zone; zero if none
}

// Jobs returns the registered jobs, by name.
func (s *Scheduler) Jobs() []JobInfo {
	now := s.scheduleNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobInfo, 0, len(s.jobs))
	for _, r := range s.jobs {
		out = append(out, JobInfo{Job: r.Job, Next: r.sched.Next(now)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job.Name < out[j].Job.Name })
	return out
}

// Store returns the store the scheduler coordinates through.
func (s *Scheduler) Store() store.Store { return s.store }

// arm puts the job's next slot after now on the timer heap. Callers hold mu.
func (s *Scheduler) arm(r *registered, now time.Time) {
	next := r.sched.Next(now)
	if next.IsZero() {
		s.log.Warn("cronfence: job has no future slot", "job", r.Name, "schedule", r.Schedule)
		return
	}
	heap.Push(&s.heap, &entry{job: r, slot: next.UTC(), fireAt: next})
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop sleeps until the earliest entry is due, at most MaxSleep at a time so
// that a suspended host or a clock jump is noticed, and fires.
func (s *Scheduler) loop(ctx context.Context) {
	defer close(s.loopDone)
	defer s.scans.Wait()    // before loopDone: a pass may still start a run, which Stop then waits for
	defer s.removeReplica() // after the last tick, so no heartbeat follows it
	defer s.stopMonitor()   // after the last tick, so no pass follows it
	for {
		s.mu.Lock()
		now := s.scheduleNow()
		wait := s.cfg.MaxSleep
		if s.heap.Len() > 0 {
			wait = min(wait, max(s.heap[0].fireAt.Sub(now), 0))
		}
		if s.resumeScans() {
			wait = min(wait, max(s.nextResume.Sub(now), 0))
		}
		s.mu.Unlock()
		slept := s.cfg.Clock.Now()
		timer := s.cfg.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-s.wake:
			timer.Stop()
			continue
		case <-timer.C():
		}
		s.busy.Add(1)
		s.tick(ctx, s.clockStep(slept, wait))
		s.busy.Add(-1)
	}
}

// clockStepThreshold is how far this replica's clock may move away from a
// timer's wait before the loop takes it for a step of the clock.
const clockStepThreshold = time.Second

// clockStep returns how far this replica's clock was stepped while the loop
// slept for wait from slept: timers run on the monotonic clock, which an NTP
// step, a resumed VM or an operator's date -s does not move, so the wall
// clock's movement should equal the wait. Zero when it (nearly) does. A
// timer that fires late (a busy host) reads as a small forward step, which
// only costs one clock measurement.
func (s *Scheduler) clockStep(slept time.Time, wait time.Duration) time.Duration {
	moved := s.cfg.Clock.Now().Round(0).Sub(slept.Round(0)) // wall clock only: Round(0) drops the monotonic reading
	if step := moved - wait; step > clockStepThreshold || step < -clockStepThreshold {
		return step
	}
	return 0
}

// tick does what is due: clock check, catch-up, pruning and fires. When
// the replica's clock was stepped (step not zero), its offset from the
// database clock is measured again first: every instant the scheduler
// judges by (slots, its own next clock check, prune and resume passes) is
// this clock corrected by that offset, so one measurement puts them all
// right, before anything fires early or waits for a clock that jumped
// back.
func (s *Scheduler) tick(ctx context.Context, step time.Duration) {
	if step != 0 {
		s.log.Warn("cronfence: this replica's clock was stepped (or the host slept); measuring its offset from the database clock again", "step", step)
		s.measureOffset(ctx)
	}
	now := s.scheduleNow()
	s.mu.Lock()
	// A step's measurement counts as this period's clock check.
	checkClock := step == 0 && !now.Before(s.nextClockCheck)
	if checkClock || step != 0 {
		s.nextClockCheck = now.Add(s.cfg.ClockCheckEvery)
	}
	// An API-only replica (DisableTimers) leaves pruning, resuming and the
	// absence checks to the replicas that fire.
	timers := !s.cfg.DisableTimers
	prune := timers && s.cfg.Retention > 0 && !now.Before(s.nextPrune)
	if prune {
		s.nextPrune = now.Add(s.cfg.PruneEvery)
	}
	resume := s.resumeScans() && !now.Before(s.nextResume)
	if resume {
		s.nextResume = now.Add(s.cfg.ResumeEvery)
	}
	down := s.down
	unregistered := s.unregistered
	s.unregistered = nil
	due := s.heap.popDue(now)
	// Re-arm before claiming, so a slow store never delays the next slot.
	// A retry was re-armed when it first fired.
	for _, e := range due {
		if e.retry {
			continue
		}
		if next := e.job.sched.Next(now); !next.IsZero() {
			heap.Push(&s.heap, &entry{job: e.job, slot: next.UTC(), fireAt: next})
		}
	}
	s.mu.Unlock()

	if checkClock || down {
		// While the store is down, every tick probes it, so its return is
		// noticed (and the missed slots caught up) before the next fire.
		s.measureOffset(ctx)
	}
	if len(unregistered) > 0 {
		s.registerJobs(ctx, unregistered)
	}
	// Read after the probe: when it found the store back, the missed slots
	// are claimed now, before this tick's fires, which they came before.
	// (A fire claimed first would hold the job's lease, and the missed
	// slot would wait behind it, buffered, and run after the later slot.)
	s.mu.Lock()
	catchUp := s.catchUp
	var missed map[string]time.Time
	if catchUp {
		missed, s.missed = s.missed, map[string]time.Time{}
		s.catchUp = false
	}
	s.mu.Unlock()
	if catchUp {
		s.runCatchUp(ctx, now, missed, false)
	}
	if prune {
		s.prune(ctx)
	}
	if timers {
		s.checkAbsence(ctx, now)
	}
	if resume {
		s.resumeInBackground(ctx)
	}
	if len(due) > 0 {
		s.fire(ctx, due, now)
	}
	s.heartbeatIfDue(ctx, now)
}

// fire claims every due entry in one round trip and starts the winners.
func (s *Scheduler) fire(ctx context.Context, due []*entry, now time.Time) {
	items := make([]store.SlotClaimParams, 0, len(due))
	claimed := make([]*entry, 0, len(due))
	// One claim per lease in a batch: when two slots of a job are due
	// together (a retry and the next slot), the earlier goes now and the
	// later on the next pass.
	sort.Slice(due, func(i, j int) bool { return due[i].slot.Before(due[j].slot) })
	leases := make(map[string]bool, len(due))
	var passed []store.SlotSkipParams
	for _, e := range due {
		if !e.retry {
			if latest := e.job.sched.Prev(now); latest.After(e.slot) {
				// The host slept or the clock jumped past several slots: fire
				// the latest, and record the others as passed over (below,
				// after the claims) where no replica ran them.
				s.log.Warn("cronfence: slots passed while the scheduler could not fire", "job", e.job.Name,
					"first_missed", e.slot, "firing", latest.UTC())
				passed = append(passed, s.passedOver(e.job, e.slot, latest, s.cfg.Owner)...)
				e.slot = latest.UTC()
			}
		}
		name := e.job.leaseName(e.slot)
		if leases[name] {
			s.retryLater(e, 0)
			continue
		}
		leases[name] = true
		claimed = append(claimed, e)
		items = append(items, e.job.claimParams(e.slot, s.cfg.Owner, s.liveKey, e.catchUp))
	}
	due = claimed
	sent := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	if err != nil && ctx.Err() == nil && !s.isDown() && !errors.Is(err, errStoreTimeout) {
		// Once more at once before leaving the slots to catch-up: after a
		// database restart the first statement sent on a pooled connection
		// fails, and the pool hands out a fresh one. Safe even when the
		// first claim committed and only its answer was lost: the lease is
		// then this owner's, the retry is refused, and the interrupted-run
		// scan resumes the slot once that lease expires. Not after a store
		// that did not answer in time: that would only wait as long again.
		s.log.Warn("cronfence: a claim failed; trying once more", "error", err)
		results, err = s.claimBatch(ctx, items)
	}
	if err != nil {
		s.storeDown(err, due)
		return
	}
	s.storeUp()
	for i, r := range results {
		e := due[i]
		s.observeClaim(e.job.Name, e.slot, r, claimFire)
		s.resolveDeposed(ctx, e.job.Name, r)
		switch {
		case r.Claimed && e.catchUp:
			s.startRun(e.job, r, sent, true, catchUpLine(e.slot, r))
		case r.Claimed:
			s.startRun(e.job, r, sent, false, "")
		case r.Refusal == store.ClaimLeaseBusy:
			s.retryBusy(ctx, e, r.Lease)
		case r.Refusal == store.ClaimNotDue:
			// The slot fired a little early by the database clock (the
			// offset moved since it was last measured, or the measurement
			// is off by part of a round trip): try it again shortly.
			s.retryLater(e, 0)
		case r.Recorded == store.SlotSkipped:
			s.log.Info("cronfence: slot skipped: the previous run has not finished", "job", e.job.Name, "slot", e.slot,
				"holder", r.Lease.Owner, "generation", r.Lease.Generation)
		case r.Recorded == store.SlotBuffered:
			s.log.Info("cronfence: slot buffered until the current run ends", "job", e.job.Name, "slot", e.slot,
				"holder", r.Lease.Owner)
		default:
			s.log.Debug("cronfence: slot not claimed", "job", e.job.Name, "slot", e.slot, "reason", r.Refusal)
		}
	}
	s.recordSkips(ctx, passed)
}

// busyRetryEvery is how often a slot refused store.ClaimLeaseBusy is tried
// again.
const busyRetryEvery = 500 * time.Millisecond

// retryBusy tries a slot refused store.ClaimLeaseBusy again every
// busyRetryEvery, beside the other jobs' fires, while it is still its job's
// latest (a catch-up: while it is inside the job's catch-up window): a
// deposed writer, frozen or cut off inside its fenced transaction, still
// holds the lease, and the takeover must wait until that transaction ends,
// which the store no longer makes the whole batch do. Once a later slot is
// due, that one is fired instead (as after any stall, only the latest slot
// of a job is fired; the others are catch-up's).
func (s *Scheduler) retryBusy(ctx context.Context, e *entry, writer store.Lease) {
	now := s.scheduleNow()
	after := e.job.sched.Prev(now)
	passed := after.After(e.slot)
	if e.catchUp {
		after = e.slot.Add(e.job.CatchUpWindow)
		passed = now.After(after)
	}
	if passed {
		s.log.Warn("cronfence: slot given up: a deposed writer's transaction held its lease until a later slot was due (for a catch-up, until its window closed)",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		s.recordSkips(ctx, []store.SlotSkipParams{s.givenUp(e, writer, after)})
		return
	}
	if !e.busy {
		s.log.Warn("cronfence: slot waits: a deposed writer (its lease expired) is still inside a transaction fenced under it; the takeover waits for it to end",
			"job", e.job.Name, "slot", e.slot, "writer", writer.Owner, "generation", writer.Generation)
		s.raiseDeposed(ctx, e, writer)
	}
	s.retryLater(&entry{job: e.job, slot: e.slot, busy: true, catchUp: e.catchUp}, busyRetryEvery)
}

// retryLater fires the entry's slot again after about wait (at least
// 20 ms, at most MaxSleep), without re-arming its job; a catch-up stays a
// catch-up.
func (s *Scheduler) retryLater(e *entry, wait time.Duration) {
	wait = min(max(wait+20*time.Millisecond, 20*time.Millisecond), s.cfg.MaxSleep)
	s.mu.Lock()
	heap.Push(&s.heap, &entry{job: e.job, slot: e.slot, fireAt: s.scheduleNow().Add(wait), retry: true, busy: e.busy, catchUp: e.catchUp})
	s.mu.Unlock()
}

// storeDown handles a claim that could not reach the store: the slots are
// left to catch-up, except for jobs that run anyway (fail-open).
func (s *Scheduler) storeDown(err error, due []*entry) {
	s.mu.Lock()
	wasDown := s.down
	s.down = true
	for _, e := range due {
		if !e.job.RunWhenStoreDown && e.slot.After(s.missed[e.job.Name]) {
			s.missed[e.job.Name] = e.slot
		}
	}
	s.mu.Unlock()
	if !wasDown {
		s.log.Error("cronfence: the store is unreachable; slots are left to catch-up", "error", err)
	}
	for _, e := range due {
		if e.job.RunWhenStoreDown && !e.job.Disabled {
			s.log.Warn("cronfence: running without a lease because the store is unreachable (RunWhenStoreDown)",
				"job", e.job.Name, "slot", e.slot)
			s.startRun(e.job, store.SlotClaimResult{Slot: store.Slot{Job: e.job.Name, Slot: e.slot, Attempts: 1}}, time.Time{}, false, "")
		}
	}
}

// resumeScans reports whether this replica scans for interrupted runs now:
// it fires (an API-only replica leaves them to those that do) and the store
// is up. While the store is down the scan is not done and nextResume stays
// in the past, so the loop must not wait for it: it would spin. Callers
// hold mu.
func (s *Scheduler) resumeScans() bool {
	return s.cfg.ResumeEvery > 0 && !s.cfg.DisableTimers && !s.down
}

// isDown reports whether the last claim could not reach the store.
func (s *Scheduler) isDown() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.down
}

// storeUp notes a round trip that reached the store; after an outage it
// schedules a catch-up pass.
func (s *Scheduler) storeUp() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.down = false
		s.catchUp = true
		s.log.Info("cronfence: the store is reachable again; catching up")
		s.poke()
	}
}

// runCatchUp claims, in one round trip for all jobs, each job's candidate
// slot if it lies inside the job's catch-up window: at start-up the most
// recent slot, after an outage the latest slot that fired while the store
// was down. A slot already claimed (run, running or skipped) is refused by
// the store, so this costs one query when there is nothing to do.
//
// At start-up a slot from before the job was first registered (on any
// replica) is not a missed slot: the job did not exist then. A job added at
// 12:29:34 does not run its 12:29:00 slot, as a Kubernetes CronJob does
// not. A slot that fired while the store was down came after this replica
// registered the job.
func (s *Scheduler) runCatchUp(ctx context.Context, now time.Time, candidates map[string]time.Time, startup bool) {
	s.mu.Lock()
	var (
		jobs  []*registered
		items []store.SlotClaimParams
	)
	for name, slot := range candidates {
		r := s.jobs[name]
		if r == nil || r.CatchUpWindow <= 0 || slot.IsZero() || now.Sub(slot) > r.CatchUpWindow {
			continue
		}
		if startup && (r.firstSeen.IsZero() || slot.Before(r.firstSeen)) {
			continue // unknown (the registration failed, and was logged) or before the job existed
		}
		jobs = append(jobs, r)
		items = append(items, r.claimParams(slot.UTC(), s.cfg.Owner, s.liveKey, true))
	}
	s.mu.Unlock()
	if len(items) == 0 {
		return
	}
	sent := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	if err != nil {
		s.mu.Lock()
		for i, r := range jobs { // try again when the store is back (after this replica registered them)
			if items[i].Slot.After(s.missed[r.Name]) {
				s.missed[r.Name] = items[i].Slot
			}
		}
		s.mu.Unlock()
		s.storeDown(err, nil)
		return
	}
	for i, r := range results {
		s.observeClaim(jobs[i].Name, items[i].Slot, r, claimCatchUp)
		s.resolveDeposed(ctx, jobs[i].Name, r)
		if r.Refusal == store.ClaimLeaseBusy {
			s.retryBusy(ctx, &entry{job: jobs[i], slot: items[i].Slot, catchUp: true}, r.Lease)
			continue
		}
		if !r.Claimed {
			continue
		}
		s.startRun(jobs[i], r, sent, true, catchUpLine(items[i].Slot, r))
	}
}

// registerJobs records the jobs' first registration (Store.JobRegister, one
// round trip) and notes when each was first seen, for catch-up. A failure
// is logged; the jobs are tried again at the next tick, and catch-up at
// start-up passes over a job whose first registration is unknown.
func (s *Scheduler) registerJobs(ctx context.Context, names []string) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	regs, err := s.store.JobRegister(ctx, store.JobRegisterParams{Jobs: names})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not record the jobs' registration; catch-up at start-up passes over them until it is", "jobs", len(names), "error", err)
		}
		s.unregistered = append(s.unregistered, names...)
		return
	}
	for _, reg := range regs {
		if r := s.jobs[reg.Job]; r != nil {
			r.firstSeen = reg.FirstSeen
		}
	}
}

// catchUpLine is the first log line of a catch-up run of slot.
func catchUpLine(slot time.Time, r store.SlotClaimResult) string {
	late := r.Lease.AcquiredAt.Sub(slot)
	return fmt.Sprintf("Catch-up run for missed slot %s (%ds late)", slot.UTC().Format(time.RFC3339), int64(late.Seconds()))
}

// resumeInBackground runs a resume pass in a goroutine of its own, one at
// a time. Its claim of a dead run's slot must take that slot's lease row,
// which a deposed writer's transaction may hold FOR KEY SHARE for as long as
// that writer is frozen mid-way (that is the fence at work); run in the
// tick, it held up every other job's fires on every replica meanwhile, and
// slots that came due then were left behind.
func (s *Scheduler) resumeInBackground(ctx context.Context) {
	if !s.resuming.CompareAndSwap(false, true) {
		return // the last pass is still waiting; its answer will do
	}
	s.busy.Add(1)
	s.scans.Add(1)
	go func() {
		defer s.scans.Done()
		defer s.busy.Add(-1)
		defer s.resuming.Store(false)
		s.resumeInterrupted(ctx)
	}()
}

// resumeInterrupted claims again, with one more attempt, the slots whose
// run died mid-way: its owner crashed (on PostgreSQL noticed as soon as the
// owner's session is gone) or lost its lease. One query finds them; they are
// claimed, the latest per job, in one more round trip.
func (s *Scheduler) resumeInterrupted(ctx context.Context) {
	listCtx, cancel := s.bounded(ctx)
	dead, err := s.store.SlotListInterrupted(listCtx)
	cancel()
	if err != nil {
		s.log.Warn("cronfence: could not look for interrupted runs", "error", err)
		return
	}
	if len(dead) == 0 {
		return
	}
	s.mu.Lock()
	// The latest slot of each job here that has an attempt left: one out
	// of attempts would only be refused, on every scan, and would hide an
	// older slot that can still be resumed. Those are abandoned instead.
	latest := map[string]store.Slot{}
	var spent []abandoned
	for _, sl := range dead {
		r := s.jobs[sl.Job]
		if r == nil {
			continue
		}
		if sl.Attempts >= r.MaxAttempts {
			spent = append(spent, abandoned{r, sl})
			continue
		}
		if cur, ok := latest[sl.Job]; !ok || sl.Slot.After(cur.Slot) {
			latest[sl.Job] = sl
		}
	}
	var (
		jobs  []*registered
		items []store.SlotClaimParams
	)
	for name, sl := range latest {
		r := s.jobs[name]
		jobs = append(jobs, r)
		items = append(items, r.claimParams(sl.Slot, s.cfg.Owner, s.liveKey, false))
	}
	s.mu.Unlock()
	for _, a := range spent {
		s.abandon(ctx, a.job, a.slot)
	}
	if len(items) == 0 {
		return
	}
	sent := s.cfg.Clock.Now()
	results, err := s.claimBatch(ctx, items)
	if err != nil {
		s.log.Warn("cronfence: could not resume interrupted runs", "error", err)
		return
	}
	for i, r := range results {
		s.observeClaim(jobs[i].Name, items[i].Slot, r, claimResume)
		if r.Claimed {
			first := fmt.Sprintf("Resuming slot %s: its previous run was interrupted (attempt %d of %d)",
				items[i].Slot.UTC().Format(time.RFC3339), r.Slot.Attempts, jobs[i].MaxAttempts)
			s.startRun(jobs[i], r, sent, false, first)
		}
	}
}

// abandoned is a dead slot of a registered job with no attempt left.
type abandoned struct {
	job  *registered
	slot store.Slot
}

// abandon ends as failed a dead slot that has no attempt left: its run
// died (its process was killed, or it could not record its end) on the
// job's last attempt, and no claim may run it again, so it would otherwise
// stay running for good, in the dashboard and for every check. One round
// trip; of several replicas scanning at once, one records it. The grace of
// one lease TTL past the lease's end leaves a live owner that lost its
// lease (and cancelled its handler at the expiry) time to record the end
// itself; on PostgreSQL an owner whose process is gone is not waited for.
func (s *Scheduler) abandon(ctx context.Context, job *registered, sl store.Slot) {
	why := fmt.Sprintf("interrupted on its last attempt (%d of %d): the run by %s at generation %d died without recording its end",
		sl.Attempts, job.MaxAttempts, sl.Owner, sl.Generation)
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	res, err := s.store.SlotAbandon(ctx, store.SlotAbandonParams{
		Job: sl.Job, Slot: sl.Slot, LeaseName: sl.LeaseName, Owner: sl.Owner, Generation: sl.Generation,
		MaxAttempts: job.MaxAttempts, Grace: job.LeaseTTL, Error: why,
		Logs: []string{fmt.Sprintf("Slot %s ended failed by %s: %s; no attempt is left",
			sl.Slot.UTC().Format(time.RFC3339), s.cfg.Owner, why)},
	})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not end a dead slot that has no attempt left", "job", sl.Job, "slot", sl.Slot, "error", err)
		}
		return
	}
	if !res.SlotUpdated {
		return // another replica did, or its owner finished after all
	}
	s.log.Warn("cronfence: slot failed: "+why, "job", sl.Job, "slot", sl.Slot, "attempts", sl.Attempts)
	if !res.Buffered.IsZero() {
		s.runBuffered(job, res.Buffered)
	}
}

// measureOffset measures this clock against the database clock, halving the
// round trip, and warns when they are more than ClockOffsetWarning apart.
func (s *Scheduler) measureOffset(ctx context.Context) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	before := s.cfg.Clock.Now()
	db, err := s.store.Now(ctx)
	if err != nil {
		s.log.Warn("cronfence: could not read the database clock", "error", err)
		return
	}
	s.storeUp()
	after := s.cfg.Clock.Now()
	offset := before.Add(after.Sub(before) / 2).Sub(db)
	s.offset.Store(int64(offset))
	s.observe(ClockOffsetEvent{Offset: offset})
	if offset > ClockOffsetWarning || offset < -ClockOffsetWarning {
		s.log.Warn("cronfence: this replica's clock is off the database clock; the database decides", "offset", offset)
	}
}

// scheduleNow is the time slots are judged by: this replica's clock
// corrected by its last measured offset from the database clock, so a
// replica whose clock is minutes off still fires each slot when the
// database says it is due (neither early, to be refused as not due, nor
// late) and arms from the database's now at start-up. Timers still run on
// Clock: only durations are taken from it.
func (s *Scheduler) scheduleNow() time.Time {
	return s.cfg.Clock.Now().Add(-time.Duration(s.offset.Load()))
}

// ClockOffset returns the last measured offset of this replica's clock from
// the database clock (positive: this clock is ahead).
func (s *Scheduler) ClockOffset() time.Duration { return time.Duration(s.offset.Load()) }

// prune deletes history older than the retention, on one replica at a time
// (whichever takes the retention lease).
func (s *Scheduler) prune(ctx context.Context) {
	l, ok := s.takeLease(ctx, "cronfence:retention", 5*time.Minute)
	if !ok {
		return
	}
	defer func() {
		ctx, cancel := s.bounded(context.WithoutCancel(ctx))
		defer cancel()
		_, _ = s.store.LeaseRelease(ctx, l.Ref())
	}()
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	res, err := s.store.Prune(ctx, store.PruneParams{Before: l.AcquiredAt.Add(-s.cfg.Retention)})
	if err != nil {
		s.log.Warn("cronfence: prune failed", "error", err)
		return
	}
	if res.Slots > 0 || res.Runs > 0 {
		s.log.Info("cronfence: pruned history", "slots", res.Slots, "runs", res.Runs, "retention", s.cfg.Retention)
	}
}

// takeLease takes a cluster-wide lease of this replica's (pruning, the
// absence checks) when it is free. False when another replica holds it or
// the store could not be reached, which is logged.
func (s *Scheduler) takeLease(ctx context.Context, name string, ttl time.Duration) (store.Lease, bool) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	l, ok, err := s.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: name, Owner: s.cfg.Owner, TTL: ttl, LiveKey: s.liveKey})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("cronfence: could not take a lease", "lease", name, "error", err)
		}
		return store.Lease{}, false
	}
	return l, ok
}

// errStoreTimeout is the cause of a store round trip of the scheduler's
// that did not answer within Config.StoreTimeout.
var errStoreTimeout = errors.New("cronfence: the store did not answer within Config.StoreTimeout")

// bounded returns parent bounded by Config.StoreTimeout, for one store
// round trip the scheduler makes on its own: a database that accepts
// connections but does not answer must not hold the loop (or a scan, a
// prune) for good. The bound is real time, not the scheduler's Clock: it
// bounds how long a real database takes to answer, which no injected clock
// moves.
func (s *Scheduler) bounded(parent context.Context) (context.Context, func()) {
	return context.WithTimeoutCause(parent, s.cfg.StoreTimeout, errStoreTimeout)
}

// claimBatch is one bounded claim round trip. A claim the store did not
// answer in time fails with an error wrapping errStoreTimeout: the store
// counts as down (storeDown), as when it refuses connections.
func (s *Scheduler) claimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	bctx, cancel := s.bounded(ctx)
	defer cancel()
	results, err := s.store.SlotClaimBatch(bctx, items)
	if err != nil && context.Cause(bctx) == errStoreTimeout && ctx.Err() == nil {
		err = fmt.Errorf("%w (after %s): %w", errStoreTimeout, s.cfg.StoreTimeout, err)
	}
	return results, err
}
