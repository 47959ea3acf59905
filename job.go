package cronfence

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/schedcache"
	"github.com/cronfence/cronfence/store"
)

// Overlap is what happens when a job's slot comes due while a previous run
// of it (or a manual run) still holds the job's lease.
type Overlap string

const (
	// OverlapSkip skips the slot and records the skip as a run row naming
	// the holder. The default.
	OverlapSkip Overlap = "skip"
	// OverlapAllow runs every slot, overlapping or not: no job lease, each
	// slot guarded by a lease of its own.
	OverlapAllow Overlap = "allow"
	// OverlapBufferOne runs the overlapped slot once the current run ends;
	// further slots while one is buffered are skipped.
	OverlapBufferOne Overlap = "buffer-one"
)

// CatchUp is which slots a job missed (while no replica ran, or while the
// store could not be reached) it runs at start-up and once the store is
// back, inside its CatchUpWindow.
type CatchUp string

const (
	// CatchUpNone runs no missed slot. The default when CatchUpWindow is
	// zero.
	CatchUpNone CatchUp = "none"
	// CatchUpLatest runs the most recent missed slot, once. The default
	// when CatchUpWindow is positive.
	CatchUpLatest CatchUp = "latest"
	// CatchUpAll runs every missed slot, each once, oldest first, one
	// after another: catch-up looks at the job's MaxCatchUp most recent
	// slots inside the window, never one from before the job existed, and
	// runs those nobody claimed. A catch-up run never overlaps another run
	// of the job: its claim waits for the job's lease rather than being
	// recorded as an overlap (an OverlapAllow job, whose slots each have a
	// lease of their own, runs its catch-ups one after another per
	// replica).
	CatchUpAll CatchUp = "all"
)

const (
	// DefaultMaxCatchUp is how many slots back catch-up of policy
	// CatchUpAll looks when Job.MaxCatchUp is zero.
	DefaultMaxCatchUp = 100
	// MaxCatchUpLimit bounds Job.MaxCatchUp: each slot looked at costs a
	// claim at every start-up.
	MaxCatchUpLimit = 10000
)

const (
	// DefaultLeaseTTL is a job's lease TTL when Job.LeaseTTL is zero.
	DefaultLeaseTTL = 90 * time.Second
	// DefaultMaxAttempts is how often a slot may be attempted when
	// Job.MaxAttempts is zero.
	DefaultMaxAttempts = 3
	// DefaultRetryBackoff is how long after a failed attempt the next one
	// starts when Job.RetryBackoff is zero.
	DefaultRetryBackoff = 10 * time.Second
	// MaxJobNameLength leaves room in lease names for the slot.
	MaxJobNameLength = 150
)

// Handler is a job's work. ctx is cancelled when the run's lease is lost,
// when the job's timeout passes and on shutdown; fence every write with
// run.Fence all the same.
type Handler func(ctx context.Context, run *Run) error

// Job is a scheduled job. Name, Schedule and Handler are required.
type Job struct {
	// Name identifies the job across replicas: lower-case is not required,
	// but it must be the same on every replica. At most MaxJobNameLength
	// bytes.
	Name string
	// Schedule is a cron spec: 5 fields, or 6 with seconds first, @hourly
	// and friends, or "@every D" (anchored to the Unix epoch). A CRON_TZ=
	// prefix sets the zone. See package schedule. A spec that never fires
	// ("0 0 31 2 *") is refused by Register, saying why.
	Schedule string
	// TimeZone is the IANA zone the schedule is read in. Defaults to UTC.
	// "Local" is refused: each machine's local zone may differ.
	TimeZone string
	// Handler does the work.
	Handler Handler
	// Timeout cancels a run's context after this long, with a
	// *TimeoutError as its cause (context.Cause). Zero means no timeout
	// (the lease still guards the run).
	Timeout time.Duration
	// LeaseTTL is the run's lease TTL, renewed every third. Defaults to
	// DefaultLeaseTTL (90s).
	LeaseTTL time.Duration
	// CatchUpWindow is how late a missed slot is still run, by CatchUp.
	// Defaults to 0: none is.
	CatchUpWindow time.Duration
	// CatchUp is which missed slots inside CatchUpWindow run: CatchUpNone,
	// CatchUpLatest (the default when CatchUpWindow is positive) or
	// CatchUpAll. latest and all need a CatchUpWindow.
	CatchUp CatchUp
	// MaxCatchUp is, for CatchUpAll, how many of the job's most recent
	// slots catch-up looks at: at most that many missed slots run, the
	// most recent. Defaults to DefaultMaxCatchUp (100); at most
	// MaxCatchUpLimit. Set only with CatchUpAll.
	MaxCatchUp int
	// Overlap is the overlap policy. Defaults to OverlapSkip.
	Overlap Overlap
	// Jitter, when positive, delays the start of each slot's run by up to
	// this long: a delay derived from a hash of the job's name and the
	// slot, the same on every replica, so the slot and its once-ness are
	// unchanged, and many jobs due at one instant spread out. It must be
	// below the shortest interval between two of the job's slots (a run
	// never starts at or after the next slot) and below its Deadline.
	// Catch-up runs a missed slot at once. Defaults to 0: none.
	Jitter time.Duration
	// Deadline is how long after its slot a run should have completed, for
	// absence monitoring. Zero means none. It must be shorter than
	// Config.Retention (when pruning is on): Register refuses it otherwise.
	Deadline time.Duration
	// MaxAttempts bounds how often one slot is attempted. A run whose
	// handler failed (an error, a panic, its Timeout) is retried after
	// RetryBackoff, and a run that died or was cut short (its process
	// killed, its lease lost, a shutdown) is resumed by a live replica,
	// while attempts remain; each attempt is a run row of its own, with
	// its number. A slot whose last attempt failed ends failed. 1 turns
	// retries off. Defaults to DefaultMaxAttempts (3).
	MaxAttempts int
	// RetryBackoff is how long after a failed attempt the next one
	// starts; each further retry of the slot waits twice as long as the
	// one before. A retry that would start at or after the job's next
	// slot is not made: the slot ends failed, and the next slot runs on
	// time. Defaults to DefaultRetryBackoff (10s).
	RetryBackoff time.Duration
	// Disabled declares the job off; an override (SetEnabled) wins.
	Disabled bool
	// RunWhenStoreDown runs the handler, without a lease, when the store
	// cannot be reached at a fire (fail-open), with a warning. Default:
	// leave the slot to catch-up.
	RunWhenStoreDown bool
	// CompletesInTx says the handler completes its slot itself, in the
	// transaction that writes its effect: Run.Complete, or a command's
	// complete() (cronfence_complete on SQLite), as the last statement
	// before COMMIT. Then a slot counts as completed only when that
	// transaction completed it: a handler that returns nil without it is
	// treated as a run whose effect did not commit, its slot left to
	// resume (attempts left) or ended failed. That is what keeps a slot
	// from being lost when a COMMIT's success is answered by a server whose
	// commit does not survive: an asynchronous standby promoted before it
	// received the commit, or a demoted primary that took it after the
	// promotion (docs/fencing.md). It costs one read per successful run.
	// Default false: a handler's nil completes the slot.
	CompletesInTx bool
}

// registered is a validated job with its parsed schedule, shared with
// the other jobs of the same spec and zone. One per job, of 144 bytes (a
// size class): small, which is why the schedule is held by a pointer
// rather than as an interface and when a declared job was first seen lives
// in jobSet.
type registered struct {
	Job
	sched  *schedcache.Schedule
	stored *storedJob // nil for a declared job (Register)
}

func (j Job) prepare() (*registered, error) {
	// The shorter limit first, so a long name is told the limit that applies.
	if len(j.Name) > MaxJobNameLength {
		return nil, errInvalid(fmt.Sprintf("job name must be at most %d bytes, got %d", MaxJobNameLength, len(j.Name)))
	}
	if err := store.ValidateName("job name", j.Name); err != nil {
		return nil, fmt.Errorf("cronfence: %w", err)
	}
	if j.Handler == nil {
		return nil, errInvalid(fmt.Sprintf("job %q: Handler is required", j.Name))
	}
	loc := time.UTC
	if j.TimeZone == "Local" {
		// time.LoadLocation accepts it, but it is each machine's own zone:
		// two replicas in different zones would compute different slots
		// for one job, and run it twice. Worded as the YAML refuses it.
		return nil, errInvalid(fmt.Sprintf("job %q: time zone: \"Local\" differs between machines; name an IANA zone such as Europe/Lisbon", j.Name))
	}
	if j.TimeZone != "" {
		var err error
		if loc, err = schedcache.Location(j.TimeZone); err != nil {
			return nil, errInvalid(fmt.Sprintf("job %q: time zone %q: %v", j.Name, j.TimeZone, err))
		}
	}
	sched, err := schedcache.Parse(j.Schedule, j.TimeZone, loc)
	if err != nil {
		return nil, errInvalid(fmt.Sprintf("job %q: %v", j.Name, err))
	}
	if j.LeaseTTL == 0 {
		j.LeaseTTL = DefaultLeaseTTL
	}
	if err := store.ValidateTTL(j.LeaseTTL); err != nil {
		return nil, fmt.Errorf("cronfence: job %q: lease %w", j.Name, err)
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = DefaultMaxAttempts
	}
	if j.RetryBackoff == 0 {
		j.RetryBackoff = DefaultRetryBackoff
	}
	if j.Overlap == "" {
		j.Overlap = OverlapSkip
	}
	if err := j.prepareCatchUp(); err != nil {
		return nil, err
	}
	if err := j.checkJitter(sched); err != nil {
		return nil, err
	}
	switch {
	case j.Overlap != OverlapSkip && j.Overlap != OverlapAllow && j.Overlap != OverlapBufferOne:
		return nil, errInvalid(fmt.Sprintf("job %q: overlap must be %q, %q or %q, got %q", j.Name, OverlapSkip, OverlapAllow, OverlapBufferOne, j.Overlap))
	case j.Timeout < 0:
		return nil, errInvalid(fmt.Sprintf("job %q: Timeout must not be negative, got %s", j.Name, j.Timeout))
	case j.Deadline < 0:
		return nil, errInvalid(fmt.Sprintf("job %q: Deadline must not be negative, got %s", j.Name, j.Deadline))
	case j.MaxAttempts < 1:
		return nil, errInvalid(fmt.Sprintf("job %q: MaxAttempts must be at least 1, got %d", j.Name, j.MaxAttempts))
	case j.RetryBackoff < 0:
		return nil, errInvalid(fmt.Sprintf("job %q: RetryBackoff must not be negative, got %s", j.Name, j.RetryBackoff))
	}
	return &registered{Job: j, sched: sched}, nil
}

// prepareCatchUp checks the catch-up settings and fills in their
// defaults.
func (j *Job) prepareCatchUp() error {
	if j.CatchUpWindow < 0 {
		return errInvalid(fmt.Sprintf("job %q: CatchUpWindow must not be negative, got %s", j.Name, j.CatchUpWindow))
	}
	if j.CatchUp == "" {
		j.CatchUp = CatchUpNone
		if j.CatchUpWindow > 0 {
			j.CatchUp = CatchUpLatest
		}
	}
	switch j.CatchUp {
	case CatchUpNone:
		if j.CatchUpWindow > 0 {
			return errInvalid(fmt.Sprintf("job %q: CatchUp %q with a CatchUpWindow of %s: the window says how late a missed slot still runs, and none does; drop one", j.Name, j.CatchUp, j.CatchUpWindow))
		}
	case CatchUpLatest, CatchUpAll:
		if j.CatchUpWindow == 0 {
			return errInvalid(fmt.Sprintf("job %q: CatchUp %q needs a CatchUpWindow: how late a missed slot still runs", j.Name, j.CatchUp))
		}
	default:
		return errInvalid(fmt.Sprintf("job %q: CatchUp must be %q, %q or %q, got %q", j.Name, CatchUpNone, CatchUpLatest, CatchUpAll, j.CatchUp))
	}
	switch {
	case j.MaxCatchUp < 0:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp must not be negative, got %d", j.Name, j.MaxCatchUp))
	case j.MaxCatchUp > 0 && j.CatchUp != CatchUpAll:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp applies only to CatchUp %q, not %q", j.Name, CatchUpAll, j.CatchUp))
	case j.MaxCatchUp > MaxCatchUpLimit:
		return errInvalid(fmt.Sprintf("job %q: MaxCatchUp must be at most %d, got %d", j.Name, MaxCatchUpLimit, j.MaxCatchUp))
	case j.MaxCatchUp == 0 && j.CatchUp == CatchUpAll:
		j.MaxCatchUp = DefaultMaxCatchUp
	}
	return nil
}

// catchUpKept refuses a catch-up of policy all whose window is not
// shorter than retention (when pruning is on): catch-up runs every slot of
// its window without a claim, and would run again a slot whose claim was
// pruned. Policy latest only runs a job's latest slot, whose claim is
// never pruned.
func (r *registered) catchUpKept(retention time.Duration) error {
	if r.CatchUp == CatchUpAll && retention > 0 && r.CatchUpWindow >= retention {
		return errInvalid(fmt.Sprintf("job %q: CatchUpWindow %s must be shorter than Config.Retention %s with CatchUp %q, or catch-up would run again a slot whose claim was pruned",
			r.Name, r.CatchUpWindow, retention, r.CatchUp))
	}
	return nil
}

// leaseName is the lease that guards a run of the job: one per job, so runs
// never overlap, or with OverlapAllow one per slot.
func (r *registered) leaseName(slot time.Time) string {
	if r.Overlap == OverlapAllow {
		return "job:" + r.Name + "@" + slot.UTC().Format(time.RFC3339Nano)
	}
	return "job:" + r.Name
}

func (r *registered) storeOverlap() store.OverlapPolicy {
	if r.Overlap == OverlapBufferOne {
		return store.OverlapBuffer
	}
	return store.OverlapSkip
}

// claimParams are the arguments of a claim of the job's slot: of origin
// OriginCatchUp it is marked as catch-up, of OriginRetry it retries the
// slot's failed attempt retryOf (store.SlotClaimParams.RetryFailed).
func (r *registered) claimParams(slot time.Time, owner string, liveKey int64, origin Origin, retryOf int) store.SlotClaimParams {
	p := store.SlotClaimParams{
		Job: r.Name, Slot: slot, LeaseName: r.leaseName(slot), Owner: owner, TTL: r.LeaseTTL,
		MaxAttempts: r.MaxAttempts, DeclaredDisabled: r.Disabled, Overlap: r.storeOverlap(),
		CatchUp: origin == OriginCatchUp, LiveKey: liveKey,
	}
	if origin == OriginCatchUp && r.CatchUp == CatchUpAll {
		// Waits for the job's run (catchUpQueues) rather than being
		// recorded as its overlap.
		p.Overlap = store.OverlapWait
	}
	if origin == OriginRetry {
		p.RetryFailed, p.RetryOf = true, retryOf
	}
	return p
}

// jobSet is a replica's jobs: those declared (Register) and those made
// from stored schedules whose kind it knows (stored.go), by name, and what
// it recorded of the declared ones in the store: when each with a
// CatchUpWindow was first registered on any replica (catch-up runs no slot
// from before), and which it has not recorded yet. A declared job and a
// stored schedule never share a name: the declared one wins.
type jobSet struct {
	mu         sync.Mutex
	byName     map[string]*registered
	declared   int // how many of byName are declared
	firstSeen  map[string]time.Time
	unrecorded []string // registered after Start, their first registration not recorded yet
	gen        uint64   // counts the declared jobs added, so the registry row is sent again after one
}

// add registers the declared job r, in place of a stored schedule of its
// name (returned, to be kept aside); started says the scheduler runs, so
// its first registration is recorded by the next tick.
func (js *jobSet) add(r *registered, started bool) (shadowed *registered, err error) {
	js.mu.Lock()
	defer js.mu.Unlock()
	if old, dup := js.byName[r.Name]; dup {
		if old.stored == nil {
			return nil, errInvalid(fmt.Sprintf("job %q is already registered", r.Name))
		}
		shadowed = old
	}
	if js.byName == nil {
		js.byName = map[string]*registered{}
	}
	js.byName[r.Name] = r
	js.declared++
	js.gen++
	if started {
		js.unrecorded = append(js.unrecorded, r.Name)
	}
	return shadowed, nil
}

// putStored puts the job of a stored schedule in place of the one of its
// name, if any; false when a declared job has the name.
func (js *jobSet) putStored(r *registered) bool {
	js.mu.Lock()
	defer js.mu.Unlock()
	if old := js.byName[r.Name]; old != nil && old.stored == nil {
		return false
	}
	if js.byName == nil {
		js.byName = map[string]*registered{}
	}
	js.byName[r.Name] = r
	return true
}

// removeStored removes the job of the stored schedule name, when it is
// the one with that ID (zero: whichever), and returns it.
func (js *jobSet) removeStored(name string, id int64) *registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	r := js.byName[name]
	if r == nil || r.stored == nil || id != 0 && r.stored.id != id {
		return nil
	}
	delete(js.byName, name)
	return r
}

// current is the job now registered in r's place, for an entry of r on
// the timers: r itself; the same stored schedule, edited (again set: the
// entry is a slot fired again, which runs under the new settings); or nil:
// the entry is dropped, its job gone, or re-armed when it changed.
func (js *jobSet) current(r *registered, again bool) *registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	cur := js.byName[r.Name]
	switch {
	case cur == r:
		return r
	case again && cur != nil && cur.stored != nil && r.stored != nil && cur.stored.id == r.stored.id:
		return cur
	}
	return nil
}

// get returns the job registered as name, or nil.
func (js *jobSet) get(name string) *registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.byName[name]
}

// all returns the registered jobs, declared and stored, in no order.
func (js *jobSet) all() []*registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*registered, 0, len(js.byName))
	for _, r := range js.byName {
		out = append(out, r)
	}
	return out
}

// declaredJobs returns the declared jobs, in no order.
func (js *jobSet) declaredJobs() []*registered {
	js.mu.Lock()
	defer js.mu.Unlock()
	out := make([]*registered, 0, js.declared)
	for _, r := range js.byName {
		if r.stored == nil {
			out = append(out, r)
		}
	}
	return out
}

// count is how many jobs are declared.
func (js *jobSet) count() int {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.declared
}

// generation is the count of declared jobs ever added.
func (js *jobSet) generation() uint64 {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.gen
}

// takeUnrecorded returns the jobs whose first registration is not
// recorded, and forgets them.
func (js *jobSet) takeUnrecorded() []string {
	js.mu.Lock()
	defer js.mu.Unlock()
	names := js.unrecorded
	js.unrecorded = nil
	return names
}

// notRecorded puts names back to be recorded by the next tick.
func (js *jobSet) notRecorded(names []string) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.unrecorded = append(js.unrecorded, names...)
}

// recorded notes the first registrations the store answered.
func (js *jobSet) recorded(regs []store.JobRegistration) {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, reg := range regs {
		// Only catch-up reads it, and only of jobs with a window.
		if r := js.byName[reg.Job]; r != nil && r.CatchUpWindow > 0 {
			if js.firstSeen == nil {
				js.firstSeen = map[string]time.Time{}
			}
			js.firstSeen[reg.Job] = reg.FirstSeen
		}
	}
}

// firstSeenOf is when the job was first registered on any replica, or
// its stored schedule created; zero when not known.
func (js *jobSet) firstSeenOf(name string) time.Time {
	js.mu.Lock()
	defer js.mu.Unlock()
	if r := js.byName[name]; r != nil && r.stored != nil {
		return r.stored.createdAt
	}
	return js.firstSeen[name]
}
