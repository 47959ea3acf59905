package cronfence

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence/internal/finishbatch"
	"github.com/cronfence/cronfence/internal/leasekeeper"
	"github.com/cronfence/cronfence/internal/monitor"
	"github.com/cronfence/cronfence/internal/peers"
	"github.com/cronfence/cronfence/internal/prune"
	"github.com/cronfence/cronfence/internal/registry"
	"github.com/cronfence/cronfence/internal/schedsync"
	"github.com/cronfence/cronfence/store"
)

// Scheduler runs registered jobs so that each slot runs once across every
// replica sharing the store. Build it with New, Register jobs, Start it, and
// Stop it on shutdown.
//
// Inside, a slot flows one way through a pipeline of parts that each own
// their state: the timers (timers.go) hand due slots to the claimer
// (claim.go), whose winners the runner runs (runner.go), whose ends the
// finisher records (finish.go). Beside them, services the loop (loop.go)
// gives a turn at each tick: the clock offset (internal/dbclock), the
// replica registry (internal/registry), the peers' notices
// (internal/peers), the absence checks (internal/monitor), pruning
// (internal/prune), the stored schedules (internal/schedsync, stored.go)
// and the scan for dead runs (resume.go). The Scheduler only builds and
// wires them.
type Scheduler struct {
	e       *env
	jobs    *jobSet
	stored  *stored
	timers  *timers
	claimer *claimer
	runner  *runner
	loop    *loop
	resumer *resumer
	// backfiller drives the backfills of the jobs registered here.
	backfiller *backfiller
	manual     manualRuns // the manual runs started here that have not ended (manual.go)

	mu      sync.Mutex
	state   lifecycle
	armed   atomic.Bool // Start armed the jobs: a job added since is armed as it comes
	release func()      // gives the liveness lock up; nil without one
}

// lifecycle is where a Scheduler is: built, started, stopped.
type lifecycle int

const (
	built lifecycle = iota
	started
	stopped
)

// New returns a Scheduler. It does no I/O.
func New(cfg Config) (*Scheduler, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	e := newEnv(c)
	s := &Scheduler{e: e, jobs: &jobSet{}}
	s.timers = &timers{e: e, current: s.jobs.current}
	s.stored = &stored{e: e, jobs: s.jobs, arm: s.armAdded}
	peers := &peers.Peers{Base: e.Base, Listen: e.timers() && c.ClaimGrace >= 0, ClaimGrace: c.ClaimGrace,
		ResumeEvery: c.ResumeEvery, ReplicaStale: c.Alerts.ReplicaStale,
		Registered: func(job string) bool { return s.jobs.get(job) != nil }}
	alerts := &monitor.Alerter{Base: e.Base, InRegistry: e.inRegistry(),
		Changed: func(a store.Alert, raised bool, endedAck store.AlertAck) {
			e.observe(AlertEvent{Alert: a, Raised: raised, EndedAck: endedAck})
		}}
	retries := &retryPlanner{e: e}
	batch := &finishbatch.Batcher{Store: c.Store}

	s.runner = &runner{e: e, policy: runPolicy{resume: true, stampEnd: true, logEnd: true}}
	s.runner.ctx, s.runner.cancel = context.WithCancel(context.Background())
	s.runner.finish = &finisher{e: e, resume: true, retries: retries, batch: batch, stop: s.runner.ctx.Done(),
		watchOwn: peers.WatchOwn}

	s.claimer = &claimer{e: e, jobs: s.jobs, alerts: alerts, retries: retries,
		skips:  &skipRecorder{e: e, beside: s.runner.beside},
		refire: s.timers.refire, start: s.runner.start, endsFirst: batch.Drain, stopped: s.stopping}
	s.runner.buffered = s.claimer.runBuffered
	s.runner.caughtUp = s.claimer.caughtUp
	s.backfiller = &backfiller{e: e, jobs: s.jobs, claim: s.claimer.claim, refire: s.timers.refire,
		beside: s.runner.beside, stopped: s.stopping}
	s.claimer.backfilled = s.backfiller.claimed
	s.runner.backfilled = s.backfiller.ran
	e.clock.Reached = s.claimer.storeUp

	s.resumer = &resumer{e: e, jobs: s.jobs, retries: retries, peers: peers,
		claim: func(ctx context.Context, batch []*entry) { s.claimer.claim(ctx, batch) },
		down:  s.claimer.isDown, buffered: s.claimer.runBuffered}
	s.claimer.beforeCatchUp = s.resumer.recordDeadAmong
	heartbeat := &registry.Heartbeat{Base: e.Base, Every: c.HeartbeatEvery, Version: c.Version, Timers: e.timers(),
		Jobs: func() (int, uint64) {
			return s.jobs.count(), s.jobs.generation() + uint64(len(s.stored.handlerKinds()))
		},
		JobRows: s.jobs.replicaJobs, Kinds: s.stored.handlerKinds, Offset: e.clock.Offset, Answered: e.clock.FromHeartbeat}
	mon := &monitor.Monitor{Base: e.Base, Alerts: alerts, Chosen: peers.RunsChecks, InRegistry: e.inRegistry(),
		CheckEvery: c.CheckEvery, Thresholds: c.Alerts.absence(c.Retention), StoredKinds: s.stored.usedKinds}
	sync := &schedsync.Sync{Base: e.Base, Every: max(c.SchedulePollEvery, 0), Hearing: peers.Hearing,
		Load: s.stored.load, Apply: s.stored.apply, Applied: s.schedulesApplied}
	s.loop = &loop{e: e, jobs: s.jobs, timers: s.timers, claimer: s.claimer, peers: peers, heartbeat: heartbeat,
		monitor: mon, pruner: &prune.Pruner{Base: e.Base, Retention: c.Retention, Every: c.PruneEvery, Timers: e.timers()},
		resumer: s.resumer, sync: sync, backfiller: s.backfiller, wake: make(chan struct{}, 1)}
	peers.ScheduleChanged = func(seq int64) {
		if seq == 0 {
			sync.Missed()
		} else {
			sync.Told(seq)
		}
		s.loop.poke()
	}
	peers.BackfillCreated = func(job string) {
		if job == "" || s.jobs.get(job) != nil {
			s.backfiller.soon()
			s.loop.poke()
		}
	}
	s.backfiller.told = peers.Hearing
	s.claimer.wake = s.loop.poke
	retries.rearm = func(en *entry) {
		if !s.stopping() {
			s.timers.push(en)
			s.loop.poke()
		}
	}
	return s, nil
}

// stopping reports whether Stop was called.
func (s *Scheduler) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stopped
}

// Register adds a job. Jobs may be registered before or after Start; every
// replica must register the same jobs with the same settings.
func (s *Scheduler) Register(job Job) error {
	r, err := job.prepare()
	if err != nil {
		return err
	}
	if err := r.excludeAlso(s.e.cfg.Exclude); err != nil {
		return err
	}
	if ret := s.e.cfg.Retention; ret > 0 && r.Deadline >= ret {
		// By the time the deadline passed the slot's row may be pruned, and
		// a missing row that old is not judged: the deadline would never be.
		return errInvalid(fmt.Sprintf("job %q: Deadline %s must be shorter than Config.Retention %s, or pruning may delete its slot before the deadline check reads it",
			r.Name, r.Deadline, ret))
	}
	if err := r.catchUpKept(s.e.cfg.Retention); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	shadowed, err := s.jobs.add(r, s.state != built)
	if err != nil {
		return err
	}
	if shadowed != nil {
		s.stored.shadowed(shadowed)
	}
	s.armAdded(r, time.Time{})
	return nil
}

// RegisterKind adds the handler of a kind of stored schedules
// (Scheduler.Schedules): this replica runs every stored schedule of that
// kind, with the schedule's arguments in Run.Args. Kinds may be
// registered before or after Start; a stored schedule whose kind no
// replica registers does not run, and raises the alert kind_unknown.
func (s *Scheduler) RegisterKind(kind string, handler Handler) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored.registerKind(kind, handler)
}

// armAdded puts a job added after Start armed the others on the timers;
// since, when not zero, is when it took its settings (a stored schedule's
// change), which timers.arm reads.
func (s *Scheduler) armAdded(r *registered, since time.Time) {
	if s.armed.Load() && s.e.timers() {
		s.timers.arm(r, s.e.Now(), since)
		s.loop.poke()
	}
}

// schedulesApplied follows a read of the stored schedules that changed
// jobs: the timers drop the entries of the jobs replaced, once enough of
// them wait on the heap.
func (s *Scheduler) schedulesApplied(int64) {
	if s.stored.takeStale() >= compactAfter {
		s.timers.compact()
	}
}

// compactAfter is how many stored schedules' jobs are replaced or removed
// before the timers drop their entries at once; until then each is dropped
// when it fires.
const compactAfter = 1024

// Start begins firing jobs. It checks the store's schema, takes this
// replica's liveness lock where the store has them, and runs catch-up for
// jobs with a CatchUpWindow. It returns once the scheduler is running; ctx
// bounds only the start-up round trips.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.state != built {
		s.mu.Unlock()
		return errors.New("cronfence: scheduler already started")
	}
	s.state = started
	s.mu.Unlock()

	e := s.e
	db, bin, err := e.Store.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("cronfence: start: %w", err)
	}
	if db != bin {
		return fmt.Errorf("cronfence: start: %w", &store.SchemaVersionError{Database: db, Binary: bin})
	}
	if lv, ok := e.Store.(store.Liveness); ok {
		key, release, err := lv.LivenessHold(ctx, e.cfg.Owner)
		if err != nil {
			e.Log.Warn("cronfence: no liveness lock; a crash of this replica frees its leases only at their TTL", "error", err)
		} else {
			e.LiveKey.Store(key)
			s.release = release
		}
	}
	s.runner.keeper = leasekeeper.New(e.Store, leasekeeper.Options{Clock: e.cfg.Clock})
	e.clock.Measure(ctx)
	s.loop.peers.Start()
	now := e.Now()
	e.clock.Checked(now) // just measured: the heartbeat below need not
	if e.timers() {
		s.loop.sync.Tick(ctx, now) // the stored schedules, before the jobs are armed
	}
	s.loop.heartbeat.Beat(ctx, now)
	declared := s.jobs.declaredJobs()
	names := make([]string, len(declared))
	for i, r := range declared {
		names[i] = r.Name
	}
	recordRegistrations(ctx, e, s.jobs, names)
	if e.timers() {
		// An API-only process (DisableTimers) arms nothing: its loop only
		// measures the clock offset and keeps its registry row fresh.
		s.mu.Lock() // Register and RegisterKind arm what they add once this is done
		all := s.jobs.all()
		latest := make(map[string]time.Time, len(all))
		for _, r := range all {
			s.timers.arm(r, now, time.Time{})
			latest[r.Name] = r.sched.Prev(now)
		}
		s.armed.Store(true)
		s.mu.Unlock()
		s.claimer.catchUp(ctx, now, latest, true)
	}
	s.loop.start()
	return nil
}

// Stop stops firing, lets running handlers finish within the shutdown
// grace (Config.ShutdownGrace), then cancels their contexts and waits for
// them to return; every run still ends with its lease released, so another
// replica takes the next slot at once.
//
// ctx is a deadline for the grace only if it is live when Stop is called:
// when it ends during the grace (a deploy's own deadline, a second
// signal), the handlers still running are cancelled at once. A ctx that
// has already ended when Stop is called is not a deadline: it is taken
// for the context the program ran under, cancelled by the signal that
// stops it (as in defer sched.Stop(ctx)), and the handlers get their
// whole grace. Either way Stop returns only once every handler returned.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	if s.state != started {
		s.mu.Unlock()
		return nil
	}
	s.state = stopped
	s.mu.Unlock()
	s.loop.stop()
	s.loop.monitor.Stop()   // after the last tick, so no pass follows
	s.loop.heartbeat.Stop() // after the last tick, so no heartbeat writes the row back
	s.resumer.stop()        // a scan may still start a run, which the runner waits for
	s.loop.pruner.Stop()
	s.backfiller.stop(ctx) // its leases let go: another replica goes on at once
	s.loop.peers.Stop()    // last of the services: nothing decides by them any more
	s.runner.stop(ctx, s.e.cfg.ShutdownGrace)
	s.runner.keeper.Close()
	if s.release != nil {
		s.release()
	}
	return nil
}

// JobInfo describes a registered job.
type JobInfo struct {
	Job  Job       // as registered, with defaults applied
	Next time.Time // its next slot after now that no exclusion holds, in its zone; zero if none
	// Starts is when Next's run starts: Next, plus its delay when the job
	// has a Jitter.
	Starts time.Time
	// Exclusions are its exclusion entries, Job.Exclude and
	// Config.Exclude (schedule.Exclusions.Entries); nil for none.
	Exclusions []string
}

// Jobs returns the registered jobs, by name.
func (s *Scheduler) Jobs() []JobInfo {
	now := s.e.Now()
	all := s.jobs.all()
	out := make([]JobInfo, 0, len(all))
	for _, r := range all {
		next := r.nextSlot(now)
		info := JobInfo{Job: r.Job, Next: next, Starts: next, Exclusions: r.exclude.Entries()}
		if !next.IsZero() {
			info.Starts = next.Add(r.delay(next))
		}
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Job.Name < out[j].Job.Name })
	return out
}

// Store returns the store the scheduler coordinates through.
func (s *Scheduler) Store() store.Store { return s.e.Store }

// ClockOffset returns the last measured offset of this replica's clock from
// the database clock (positive: this clock is ahead). It is an upper bound:
// at most one round trip to the database more than the true offset.
func (s *Scheduler) ClockOffset() time.Duration { return time.Duration(s.e.clock.Offset()) }

// Replicas returns the replica registry: every replica that recorded
// itself, by owner, with its last heartbeat (by the database clock: compare
// with Store().Now, not this replica's clock). A replica that crashed stays
// listed, its heartbeat ageing, until pruned.
func (s *Scheduler) Replicas(ctx context.Context) ([]store.Replica, error) {
	replicas, err := s.e.Store.ReplicaList(ctx)
	if err != nil {
		return nil, fmt.Errorf("cronfence: list replicas: %w", err)
	}
	return replicas, nil
}
