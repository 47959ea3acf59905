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

	"github.com/cronfence/cronfence/internal/clock"
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
	firstSeen                 map[string]time.Time   // jobs with a CatchUpWindow: when first registered on any replica (Store.JobRegister)
	retriesGivenUp            map[retryKey]time.Time // retries refused for good, until their slot's window closes (retry.go)
	heap                      timers
	started                   bool
	stopped                   bool
	liveKey                   int64
	release                   func()
	keeper                    *leasekeeper.Keeper
	outage                    outage          // the store's reachability as the claims see it (outage.go)
	failures                  failureLog      // the failures an outage repeats, logged once and then once a minute (failurelog.go)
	deposed                   map[string]bool // jobs whose deposed-writer alert this replica raised or refreshed (giveup.go)
	nextPrune, nextClockCheck time.Time
	nextResume                time.Time
	unregistered              []string     // jobs registered after Start whose first registration is not recorded yet
	monitor                   monitorState // the absence checks (monitor.go)
	notices                   notices      // what the store told of the other replicas (notices.go)
	finishes                  finishBatcher
	buffered                  bufferedQueue // buffered slots handed over by runs' ends, claimed together (claim.go: runBuffered)
	passed                    skipQueue     // slots stalls passed over, recorded off the loop (giveup.go: recordPassedOver)
	// passedOver is the first slot a stall passed over, by the job's
	// latest slot that the stalled entry claims instead (claim.go:
	// passOver), until that entry fires or is dropped (a fallback whose
	// slot another replica claimed).
	passedOver map[slotKey]time.Time
	manual     manualRuns // the manual runs started here that have not ended (manual.go)

	wake       chan struct{}
	loopCancel context.CancelFunc
	loopDone   chan struct{}
	runsCtx    context.Context // parent of every handler's context; cancelled after the shutdown grace
	runsCancel context.CancelFunc
	runs       sync.WaitGroup
	scans      sync.WaitGroup // the resume pass in its own goroutine, if one runs
	resuming   atomic.Bool    // a resume pass runs
	pruning    atomic.Bool    // a prune runs (prune.go: pruneInBackground)
	busy       atomic.Int64   // fires, resume passes and runs in progress; for tests
	offset     atomic.Int64   // this clock minus the database clock, in ns
	// bestClockRead is the round trip of the last full clock measurement's
	// fastest read, in ns, once clockReadKnown (offset.go).
	bestClockRead  atomic.Int64
	clockReadKnown atomic.Bool
	pauseUnread    atomic.Bool // the last claim could not read the pause overrides (see notePauseState)
	// claimLead is how long before its slot a timer's claim is sent (see
	// claimLeadReal); zero on any clock but the real one (a test's).
	claimLead time.Duration
	reg       registry // this replica's row in the replica registry (registry.go)
}

// New returns a Scheduler. It does no I/O.
func New(cfg Config) (*Scheduler, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	s := &Scheduler{
		cfg: c, store: c.Store, log: c.Logger.With("owner", c.Owner),
		jobs: map[string]*registered{}, deposed: map[string]bool{}, wake: make(chan struct{}, 1),
		finishes: finishBatcher{store: c.Store},
	}
	if _, real := c.Clock.(clock.Real); real {
		s.claimLead = claimLeadReal
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
	if s.cfg.Retention > 0 && r.Deadline >= s.cfg.Retention {
		// By the time the deadline passed the slot's row may be pruned, and
		// a missing row that old is not judged: the deadline would never be.
		return errInvalid(fmt.Sprintf("job %q: Deadline %s must be shorter than Config.Retention %s, or pruning may delete its slot before the deadline check reads it",
			r.Name, r.Deadline, s.cfg.Retention))
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
	s.startNotices()
	now := s.scheduleNow()
	s.mu.Lock()
	s.nextClockCheck = now.Add(s.cfg.ClockCheckEvery) // just measured: the heartbeat below need not
	s.mu.Unlock()
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
	if !s.started || s.stopped {
		s.mu.Unlock()
		return nil
	}
	s.stopped = true
	s.mu.Unlock()
	s.loopCancel()
	<-s.loopDone

	deadline := ctx.Done()
	if ctx.Err() != nil {
		deadline = nil // ended before Stop: not a deadline (see above)
	}
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	grace := s.cfg.Clock.NewTimer(s.cfg.ShutdownGrace)
	select {
	case <-done:
	case <-grace.C():
		s.log.Warn("cronfence: shutdown grace passed; cancelling running handlers", "grace", s.cfg.ShutdownGrace)
	case <-deadline:
		s.log.Warn("cronfence: the context given to Stop ended during the shutdown grace; cancelling running handlers", "cause", context.Cause(ctx))
	}
	grace.Stop()
	s.runsCancel()
	<-done
	s.keeper.Close()
	if s.release != nil {
		s.release()
	}
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
	heap.Push(&s.heap, &entry{job: r, slot: next.UTC(), fireAt: next.Add(-s.claimLead), origin: OriginScheduled})
}
