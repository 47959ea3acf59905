package cronfence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// By hand: a run started now on this replica (Trigger), and a job paused
// or resumed on every replica (SetEnabled).

// ManualRun describes a run started by Trigger.
type ManualRun struct {
	Job        string
	Owner      string
	Lease      string // the lease the run holds: with Generation, the run's holding, which its run row names
	Generation int64
	StartedAt  time.Time // by the database clock
}

// Trigger starts a manual run of the job now, on this replica. It takes the
// job's lease like any run, so it never overlaps a scheduled or manual run
// on any replica: when one holds the lease, Trigger records the refusal as
// a skip row and returns an *AlreadyExecutingError (errors.Is
// ErrAlreadyExecuting) naming the holder. The run goes on in the background
// after Trigger returns. A paused job can still be triggered by hand.
func (s *Scheduler) Trigger(ctx context.Context, name string) (ManualRun, error) {
	r := s.jobs.get(name)
	s.mu.Lock()
	live := s.state == started
	s.mu.Unlock()
	if r == nil {
		return ManualRun{}, unknownJob(name)
	}
	if !live {
		return ManualRun{}, ErrNotStarted
	}
	leaseName := r.leaseName(time.Time{})
	if r.Overlap == OverlapAllow {
		leaseName = fmt.Sprintf("job:%s@manual-%d", r.Name, s.e.cfg.Clock.Now().UnixNano())
	}
	sent := s.e.cfg.Clock.Now()
	lease, acquired, err := s.e.Store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: leaseName, Owner: s.e.cfg.Owner, TTL: r.LeaseTTL, LiveKey: s.e.LiveKey.Load()})
	if err != nil {
		return ManualRun{}, fmt.Errorf("cronfence: trigger %q: %w", name, err)
	}
	if !acquired {
		holder := "another owner"
		if lease.Owner != "" {
			holder = fmt.Sprintf("%s at generation %d", lease.Owner, lease.Generation)
		}
		skip, err := s.e.Store.RunInsert(ctx, store.Run{
			Job: name, Manual: true, Owner: s.e.cfg.Owner, Success: true, Skipped: true, Reason: string(store.ClaimHeld),
			Logs: []string{fmt.Sprintf("Skipped: the previous run has not finished (lease %s held by %s)", leaseName, holder)},
		})
		if err != nil {
			s.e.Log.Warn("cronfence: could not record a refused manual run", "job", name, "error", err)
		}
		s.e.observe(SkipEvent{Job: name, Owner: s.e.cfg.Owner, Reason: string(store.ClaimHeld), Holder: lease.Owner, Origin: OriginManual})
		return ManualRun{}, &AlreadyExecutingError{Job: name, Holder: lease, Skip: skip}
	}
	mr := ManualRun{Job: name, Owner: s.e.cfg.Owner, Lease: lease.Name, Generation: lease.Generation, StartedAt: lease.AcquiredAt}
	s.manual.add(mr)
	s.runner.beside(func(context.Context) {
		defer s.manual.remove(mr)
		s.runner.execute(runSpec{job: r, lease: lease, attempt: 1, origin: OriginManual, sent: sent})
	})
	return mr, nil
}

// ManualRunning returns the manual run this replica started (Trigger)
// under the holding (lease, generation) while it has not ended: its
// handler runs, or its end is being recorded, which is retried while the
// store does not answer and may land after the lease expired or another
// replica took it. Once it returns false for a run this replica started,
// that run's row is written, or its end was given up (Stop).
func (s *Scheduler) ManualRunning(lease string, generation int64) (ManualRun, bool) {
	return s.manual.get(lease, generation)
}

// SetEnabled overrides the job's declared enabled value on every replica:
// true or false pause or resume it from the next slot on, nil removes the
// override. by and note are recorded with it. It survives restarts. Once
// it returns, no slot due after then runs on the old value, even one whose
// claim was already sent and waits for its slot (it may wait for such a
// claim, a few tens of milliseconds).
func (s *Scheduler) SetEnabled(ctx context.Context, name string, enabled *bool, by, note string) (store.JobState, error) {
	if s.jobs.get(name) == nil {
		return store.JobState{}, unknownJob(name)
	}
	js, err := s.e.Store.JobStateSet(ctx, store.JobStateSetParams{Job: name, Enabled: enabled, By: by, Note: note})
	if err != nil {
		return store.JobState{}, fmt.Errorf("cronfence: set enabled of %q: %w", name, err)
	}
	return js, nil
}

// PauseUntil pauses the job on every replica until the instant until, as
// SetEnabled(false) does, and ends the pause by itself: the slots before
// until are settled skipped (reason paused), and from until on the job's
// declared value decides again, with no replica restarted and no further
// write. until must lie ahead by the database clock.
func (s *Scheduler) PauseUntil(ctx context.Context, name string, until time.Time, by, note string) (store.JobState, error) {
	if s.jobs.get(name) == nil {
		return store.JobState{}, unknownJob(name)
	}
	now, err := s.e.Store.Now(ctx)
	if err != nil {
		return store.JobState{}, fmt.Errorf("cronfence: pause %q until %s: %w", name, until.Format(time.RFC3339), err)
	}
	if !until.After(now) {
		return store.JobState{}, errInvalid(fmt.Sprintf("pause %q until %s: that is not ahead of the database clock (%s)",
			name, until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	off := false
	js, err := s.e.Store.JobStateSet(ctx, store.JobStateSetParams{Job: name, Enabled: &off, By: by, Note: note, Until: until})
	if err != nil {
		return store.JobState{}, fmt.Errorf("cronfence: pause %q until %s: %w", name, until.Format(time.RFC3339), err)
	}
	return js, nil
}

// manualRuns are the manual runs a replica started that have not ended.
type manualRuns struct {
	mu   sync.Mutex
	runs map[holding]ManualRun
}

// holding names a run by the lease it holds and its generation.
type holding struct {
	lease      string
	generation int64
}

func (m *manualRuns) add(r ManualRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[holding]ManualRun{}
	}
	m.runs[holding{r.Lease, r.Generation}] = r
}

func (m *manualRuns) remove(r ManualRun) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.runs, holding{r.Lease, r.Generation})
}

func (m *manualRuns) get(lease string, generation int64) (ManualRun, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[holding{lease, generation}]
	return r, ok
}
