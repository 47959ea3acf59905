package cronfence

import (
	"context"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/internal/schedcache"
	"github.com/cronfence/cronfence/schedule"
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
	// Exclude lists times the job does not run in: ranges
	// ("2026-12-24T00:00Z/2026-12-27T00:00Z", or dates and wall times
	// without a zone, read in TimeZone) and calendar entries of five cron
	// fields ("* * 25 12 *": every Christmas Day, in TimeZone); see
	// schedule.Exclusions. A slot inside one does not run: it is recorded
	// skipped, reason "excluded", and JobInfo.Next passes over it.
	// Config.Exclude applies to every job besides. Ranges must not
	// overlap; at most schedule.MaxExclusions entries.
	Exclude []string
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
// the other jobs of the same spec and zone. One per job, of 192 bytes (a
// size class): small, which is why the schedule is held by a pointer
// rather than as an interface and when a declared job was first seen lives
// in jobSet.
type registered struct {
	Job
	sched   *schedcache.Schedule
	exclude *schedule.Exclusions // Exclude and Config.Exclude; nil for none
	stored  *storedJob           // nil for a declared job (Register)
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
	exclude, err := parseExclusions(j.Exclude, loc)
	if err != nil {
		return nil, errInvalid(fmt.Sprintf("job %q: Exclude: %v", j.Name, err))
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
	return &registered{Job: j, sched: sched, exclude: exclude}, nil
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
	if origin == OriginBackfill {
		// As catch-up all: waits for the job's own run, and a failed
		// slot's rerun (IncludeFailed) is one attempt more than it had.
		p.Overlap = store.OverlapWait
		if retryOf > 0 {
			p.RetryFailed, p.RetryOf, p.MaxAttempts = true, retryOf, retryOf+1
		}
	}
	return p
}
