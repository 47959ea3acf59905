package store

import (
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

const (
	// MaxNameLength is the longest lease, job or owner name, in bytes.
	MaxNameLength = 200

	// MinTTL is the shortest lease TTL a store accepts. Production leases
	// should be far longer (60 to 120 seconds is typical); see the cronfence
	// package documentation.
	MinTTL = time.Millisecond

	// MaxTTL is the longest lease TTL a store accepts: longer leases bring
	// back the eternal lock at a smaller scale.
	MaxTTL = 7 * 24 * time.Hour

	// MaxRunLogLines and MaxRunLogBytes bound the logs kept in one run row.
	// Beyond them the oldest lines are dropped and a marker line says how
	// many.
	MaxRunLogLines = 500
	MaxRunLogBytes = 64 << 10

	// MaxRunErrorBytes bounds the error text kept in one run row.
	MaxRunErrorBytes = 8 << 10

	// DefaultRunListLimit and MaxRunListLimit bound RunList.
	DefaultRunListLimit = 100
	MaxRunListLimit     = 10_000
	// MaxRunListJobs bounds the jobs of one RunListPerJob.
	MaxRunListJobs = 1_000
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("store: "+format+": %w", append(args, ErrInvalidArgument)...)
}

// ValidateName checks a lease, job or owner name: non-empty, at most
// MaxNameLength bytes, valid UTF-8 and free of NUL bytes (which PostgreSQL
// text cannot hold). field names the argument in the error.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return invalid("%s must not be empty", field)
	case len(name) > MaxNameLength:
		return invalid("%s must be at most %d bytes, got %d", field, MaxNameLength, len(name))
	case !utf8.ValidString(name):
		return invalid("%s must be valid UTF-8", field)
	case strings.IndexByte(name, 0) >= 0:
		return invalid("%s must not contain NUL bytes", field)
	}
	return nil
}

// ValidateTTL checks a lease TTL.
func ValidateTTL(ttl time.Duration) error {
	if ttl < MinTTL || ttl > MaxTTL {
		return invalid("TTL must be between %s and %s, got %s", MinTTL, MaxTTL, ttl)
	}
	return nil
}

func validateRef(ref LeaseRef) error {
	if err := ValidateName("lease name", ref.Name); err != nil {
		return err
	}
	if err := ValidateName("owner", ref.Owner); err != nil {
		return err
	}
	if ref.Generation < 1 {
		return invalid("generation must be at least 1, got %d", ref.Generation)
	}
	return nil
}

// Validate checks the arguments of LeaseAcquire.
func (p LeaseAcquireParams) Validate() error {
	if err := ValidateName("lease name", p.Name); err != nil {
		return err
	}
	if err := ValidateName("owner", p.Owner); err != nil {
		return err
	}
	return ValidateTTL(p.TTL)
}

// Validate checks the arguments of LeaseRenew.
func (p LeaseRenewParams) Validate() error {
	if err := validateRef(p.LeaseRef); err != nil {
		return err
	}
	return ValidateTTL(p.TTL)
}

// Validate checks a lease reference (LeaseRelease).
func (ref LeaseRef) Validate() error { return validateRef(ref) }

// ValidateFence checks the arguments of LeaseFence.
func ValidateFence(name string, generation int64) error {
	if err := ValidateName("lease name", name); err != nil {
		return err
	}
	if generation < 1 {
		return invalid("generation must be at least 1, got %d", generation)
	}
	return nil
}

// Validate checks the arguments of SlotComplete. A zero Slot is a manual
// run: fence only.
func (p SlotCompleteParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	return ValidateFence(p.LeaseName, p.Generation)
}

// MaxRegisterJobs bounds one JobRegister call.
const MaxRegisterJobs = 100_000

// Validate checks the arguments of JobRegister: valid, distinct job names.
func (p JobRegisterParams) Validate() error {
	if len(p.Jobs) > MaxRegisterJobs {
		return invalid("at most %d jobs in one registration, got %d", MaxRegisterJobs, len(p.Jobs))
	}
	seen := make(map[string]bool, len(p.Jobs))
	for i, j := range p.Jobs {
		if err := ValidateName("job", j); err != nil {
			return fmt.Errorf("job %d: %w", i, err)
		}
		if seen[j] {
			return invalid("job %q appears twice in one registration", j)
		}
		seen[j] = true
	}
	return nil
}

// Validate checks the arguments of SlotClaim.
func (p SlotClaimParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return invalid("slot must be set")
	}
	if err := (LeaseAcquireParams{Name: p.LeaseName, Owner: p.Owner, TTL: p.TTL}).Validate(); err != nil {
		return err
	}
	if p.MaxAttempts < 1 {
		return invalid("MaxAttempts must be at least 1, got %d", p.MaxAttempts)
	}
	if p.RetryOf < 0 || (p.RetryOf > 0 && !p.RetryFailed) {
		return invalid("RetryOf must be zero, or the attempt a claim with RetryFailed retries, got %d (RetryFailed %v)", p.RetryOf, p.RetryFailed)
	}
	switch p.Overlap {
	case "", OverlapSkip, OverlapBuffer, OverlapWait:
	default:
		return invalid("overlap policy must be %q, %q or %q, got %q", OverlapSkip, OverlapBuffer, OverlapWait, p.Overlap)
	}
	return nil
}

// ValidateClaimBatch checks the items of SlotClaimBatch: each valid, lease
// names and (job, slot)s distinct (one statement cannot take one lease or
// claim one slot twice), and Owner, LiveKey and Now shared.
func ValidateClaimBatch(items []SlotClaimParams) error {
	leases := make(map[string]bool, len(items))
	slots := make(slotSet, len(items))
	for i, p := range items {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if leases[p.LeaseName] {
			return invalid("item %d: lease name %q appears twice in one batch", i, p.LeaseName)
		}
		leases[p.LeaseName] = true
		if err := slots.add(i, p.Job, p.Slot); err != nil {
			return err
		}
		if p.Owner != items[0].Owner || p.LiveKey != items[0].LiveKey || !p.Now.Equal(items[0].Now) {
			return invalid("item %d: Owner, LiveKey and Now must be the same for every item of a batch", i)
		}
	}
	return nil
}

// slotSet is the (job, slot)s of a batch seen so far, for refusing one
// twice.
type slotSet map[jobSlot]bool

type jobSlot struct {
	job  string
	slot int64 // µs, the stores' precision
}

// add records item i's (job, slot), or refuses it when the batch has it
// already.
func (s slotSet) add(i int, job string, slot time.Time) error {
	key := jobSlot{job, slot.UnixMicro()}
	if s[key] {
		return invalid("item %d: job %q slot %s appears twice in one batch", i, job, slot.UTC().Format(time.RFC3339Nano))
	}
	s[key] = true
	return nil
}

// Validate checks one item of Store.SlotSkip.
func (p SlotSkipParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return invalid("skip needs a slot")
	}
	if err := ValidateName("lease name", p.LeaseName); err != nil {
		return err
	}
	if err := ValidateName("owner", p.Owner); err != nil {
		return err
	}
	if p.After.Before(p.Slot) {
		return invalid("skip of slot %s: after (%s) is before the slot", p.Slot.UTC().Format(time.RFC3339Nano), p.After.UTC().Format(time.RFC3339Nano))
	}
	switch p.Reason {
	case SkipLeaseBusy, SkipPassedOver, SkipExcluded:
	default:
		return invalid("skip reason %q is not one of %q, %q, %q", p.Reason, SkipLeaseBusy, SkipPassedOver, SkipExcluded)
	}
	return nil
}

// ValidateSkipBatch checks the items of Store.SlotSkip: each valid, no
// (job, slot) twice, Owner and Now shared.
func ValidateSkipBatch(items []SlotSkipParams) error {
	slots := make(slotSet, len(items))
	for i, p := range items {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if err := slots.add(i, p.Job, p.Slot); err != nil {
			return err
		}
		if p.Owner != items[0].Owner || !p.Now.Equal(items[0].Now) {
			return invalid("item %d: Owner and Now must be the same for every item of a batch", i)
		}
	}
	return nil
}

// Run is the skip run row SlotSkip writes for p at now.
func (p SlotSkipParams) Run(now time.Time) Run {
	var logs []string
	if p.Log != "" {
		logs = []string{p.Log}
	}
	return Run{
		Job: p.Job, Slot: p.Slot, CatchUp: p.CatchUp, Owner: p.Owner, StartedAt: now, FinishedAt: now,
		Success: true, Skipped: true, Reason: string(p.Reason), Logs: logs,
	}.Bounded()
}

// ValidateRenewBatch checks the items of LeaseRenewBatch: each valid, Now
// shared.
func ValidateRenewBatch(items []LeaseRenewParams) error {
	for i, p := range items {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if !p.Now.Equal(items[0].Now) {
			return invalid("item %d: Now must be the same for every item of a batch", i)
		}
	}
	return nil
}

// MaxNoteLength bounds the note of a job state override or of an alert's
// acknowledgement, in bytes.
const MaxNoteLength = 1000

// Validate checks the arguments of JobStateSet.
func (p JobStateSetParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if err := ValidateName("who (By)", p.By); err != nil {
		return err
	}
	if !p.Until.IsZero() && p.Enabled == nil {
		return invalid("until ends an override: it needs Enabled set")
	}
	return validText("note", p.Note, MaxNoteLength)
}

// Validate checks the arguments of SlotFinish. A zero Slot is a manual run.
func (p SlotFinishParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if err := validateRef(LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation}); err != nil {
		return err
	}
	if p.Status != SlotCompleted && p.Status != SlotFailed && p.Status != SlotRunning {
		return invalid("finish status must be %q, %q or %q, got %q", SlotCompleted, SlotFailed, SlotRunning, p.Status)
	}
	if p.Status == SlotRunning && p.Slot.IsZero() {
		return invalid("finish status %q needs a slot: a manual run has no slot to leave running", SlotRunning)
	}
	if !p.RetryUntil.IsZero() && (p.Status != SlotFailed || p.Slot.IsZero()) {
		return invalid("finish RetryUntil needs status %q and a slot: only a failed slot is retried, got status %q", SlotFailed, p.Status)
	}
	return nil
}

// ValidateFinishBatch checks the items of SlotFinishBatch: each valid, and
// no holding (lease name and generation) twice, since a holding ends once
// and writes one run row.
func ValidateFinishBatch(items []SlotFinishParams) error {
	type holding struct {
		lease      string
		generation int64
	}
	seen := make(map[holding]bool, len(items))
	for i, p := range items {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("item %d (job %q): %w", i, p.Job, err)
		}
		h := holding{p.LeaseName, p.Generation}
		if seen[h] {
			return invalid("item %d (job %q): lease %q at generation %d appears twice in one batch", i, p.Job, p.LeaseName, p.Generation)
		}
		seen[h] = true
	}
	return nil
}

// NotCompleted reports whether a finish with p leaves the slot other than
// completed when it ends in status (the slot's status after it), and so
// the run row takes p.NotCompletedError.
func (p SlotFinishParams) NotCompleted(status SlotStatus) bool {
	return p.NotCompletedError != "" && status != SlotCompleted
}

// RetriesFailed reports whether the claim p may take a failed slot that
// has had attempts attempts: only a retry (RetryFailed), and only of that
// attempt when RetryOf names one. Both stores decide by it (PostgreSQL's
// claim statement says the same in SQL).
func (p SlotClaimParams) RetriesFailed(attempts int) bool {
	return p.RetryFailed && (p.RetryOf == 0 || p.RetryOf == attempts)
}

// Validate checks p before SlotAbandon.
func (p SlotAbandonParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return invalid("abandon needs a slot: a manual run has no slot to abandon")
	}
	if err := validateRef(LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation}); err != nil {
		return err
	}
	if p.MaxAttempts < 1 {
		return invalid("max attempts must be at least 1, got %d", p.MaxAttempts)
	}
	if p.Grace < 0 {
		return invalid("abandon grace must not be negative, got %s", p.Grace)
	}
	return nil
}

// Run is the run row SlotAbandon writes for p, given the slot's attempts
// and start, how the run was found dead (see DeadHolding) and its end.
func (p SlotAbandonParams) Run(attempts int, started time.Time, how string, ended time.Time) Run {
	return interruptedRun(p.Job, p.Slot, LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation},
		attempts, started, InterruptedError(p.Error, how), p.Logs, ended)
}

// Run is the run row RunInterrupted writes for p, given the slot's
// attempts and start, how the run was found dead (see DeadHolding) and
// its end.
func (p RunInterruptedParams) Run(attempts int, started time.Time, how string, ended time.Time) Run {
	var logs []string
	if p.Log != "" {
		logs = []string{p.Log}
	}
	return interruptedRun(p.Job, p.Slot, LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation},
		attempts, started, InterruptedError(p.Error, how), logs, ended)
}

func interruptedRun(job string, slot time.Time, holding LeaseRef, attempts int, started time.Time, err string, logs []string, ended time.Time) Run {
	return Run{
		Job: job, Slot: slot, Owner: holding.Owner, Generation: holding.Generation, LeaseName: holding.Name, Attempt: attempts,
		StartedAt: started, FinishedAt: latest(ended, started), Reason: ReasonInterrupted, Error: err, Logs: logs,
	}.Bounded()
}

// DeadHolding judges the holding (lease name, generation) of a running
// slot as SlotListInterrupted does, from its lease row l as read (zero
// when there is none) and, where the store can tell, whether the lease
// owner's process is gone: dead or not, how it was found dead
// (DeadLeaseExpired, DeadOwnerGone, DeadLeaseTaken), and the end its
// interrupted run row gets: the lease's expiry when it expired, else now.
func DeadHolding(generation int64, l Lease, ownerGone bool, now time.Time) (dead bool, how string, ended time.Time) {
	switch {
	case l.Name == "" || l.Generation != generation:
		return true, DeadLeaseTaken, now
	case !l.ExpiresAt.After(now):
		return true, DeadLeaseExpired, l.ExpiresAt
	case ownerGone:
		return true, DeadOwnerGone, now
	}
	return false, "", time.Time{}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Validate checks p before RunInterrupted.
func (p RunInterruptedParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return invalid("an interrupted run needs its slot: a manual run has none to resume")
	}
	return validateRef(LeaseRef{Name: p.LeaseName, Owner: p.Owner, Generation: p.Generation})
}

// ValidateInterruptedBatch checks the items of RunInterrupted: each valid,
// each a holding of its own, Now shared.
func ValidateInterruptedBatch(items []RunInterruptedParams) error {
	holdings := make(map[LeaseRef]int, len(items))
	for i, p := range items {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		h := LeaseRef{Name: p.LeaseName, Generation: p.Generation}
		if j, dup := holdings[h]; dup {
			return invalid("items %d and %d name the same holding (lease %q, generation %d)", j, i, p.LeaseName, p.Generation)
		}
		holdings[h] = i
		if !p.Now.Equal(items[0].Now) {
			return invalid("item %d: Now must be the same for every item of a batch", i)
		}
	}
	return nil
}

// Validate checks a run row before RunInsert.
func (r Run) Validate() error {
	if err := ValidateName("job", r.Job); err != nil {
		return err
	}
	if r.Owner != "" {
		if err := ValidateName("owner", r.Owner); err != nil {
			return err
		}
	}
	if r.Generation < 0 {
		return invalid("generation must not be negative, got %d", r.Generation)
	}
	if r.LeaseName != "" {
		if err := ValidateName("lease name", r.LeaseName); err != nil {
			return err
		}
		if r.Generation < 1 {
			return invalid("a run row naming lease %q needs its generation, got %d", r.LeaseName, r.Generation)
		}
	}
	if r.Attempt < 0 {
		return invalid("attempt must not be negative, got %d", r.Attempt)
	}
	if !r.FinishedAt.IsZero() && !r.StartedAt.IsZero() && r.FinishedAt.Before(r.StartedAt) {
		return invalid("run finished (%s) before it started (%s)", r.FinishedAt, r.StartedAt)
	}
	return nil
}

// Validate checks the arguments of RunList.
func (p RunListParams) Validate() error {
	if p.Job != "" {
		if err := ValidateName("job", p.Job); err != nil {
			return err
		}
	}
	if p.Limit < 0 || p.Limit > MaxRunListLimit {
		return invalid("limit must be between 0 and %d, got %d", MaxRunListLimit, p.Limit)
	}
	if c := p.Before; !c.IsZero() && (c.StartedAt.IsZero() || c.ID < 1) {
		return invalid("Before must be a row's cursor (its start and id, at least 1) or zero, got %s and %d", c.StartedAt.Format(time.RFC3339Nano), c.ID)
	}
	return nil
}

// ValidateHolding checks the arguments of RunGet: a lease name and a
// generation, which starts at 1.
func ValidateHolding(leaseName string, generation int64) error {
	if err := ValidateName("lease name", leaseName); err != nil {
		return err
	}
	if generation < 1 {
		return invalid("generation must be at least 1, got %d", generation)
	}
	return nil
}

// EffectiveLimit is the limit RunList applies.
func (p RunListParams) EffectiveLimit() int {
	if p.Limit == 0 {
		return DefaultRunListLimit
	}
	return p.Limit
}

// ValidateReplicaJobCount checks that a replica's row may hold n jobs
// (Replica.Validate), for a caller that knows n before building the row.
func ValidateReplicaJobCount(n int) error {
	if n > MaxReplicaJobs {
		return invalid("a replica must register at most %d jobs, got %d", MaxReplicaJobs, n)
	}
	return nil
}

// Validate checks the arguments of RunListPerJob.
func (p RunListPerJobParams) Validate() error {
	if len(p.Jobs) > MaxRunListJobs {
		return invalid("at most %d jobs a call, got %d", MaxRunListJobs, len(p.Jobs))
	}
	if p.Limit < 1 || p.Limit > MaxRunListLimit {
		return invalid("limit must be between 1 and %d, got %d", MaxRunListLimit, p.Limit)
	}
	seen := make(map[string]bool, len(p.Jobs))
	for i, j := range p.Jobs {
		if err := ValidateName(fmt.Sprintf("job %d", i), j); err != nil {
			return err
		}
		if seen[j] {
			return invalid("job %q is listed twice", j)
		}
		seen[j] = true
	}
	return nil
}

// Validate checks the arguments of Prune.
func (p PruneParams) Validate() error {
	if p.Before.IsZero() {
		return invalid("prune cutoff (Before) must be set")
	}
	if p.Batch < 0 || p.Batch > MaxPruneBatch {
		return invalid("prune batch must be 1 to %d (0 for %d), got %d", MaxPruneBatch, DefaultPruneBatch, p.Batch)
	}
	return nil
}

// TakenOverError is the error of a run row whose slot generation no longer
// held when the run ended (SlotFinish did not mark it): the row must not pass
// for the slot's result. runErr, the run's own error, follows. Every store
// records exactly this, bounded as Bounded bounds it.
func TakenOverError(generation int64, runErr string) string {
	msg := fmt.Sprintf("the slot was taken over (generation %d no longer held it) before this run ended; its result was not recorded on the slot", generation)
	if runErr != "" {
		msg += ": " + runErr
	}
	return Run{Error: msg}.Bounded().Error
}

// Bounded returns the run with its logs and error cut to the store's bounds,
// keeping the newest log lines, and with text made safe for every store
// (invalid UTF-8 and NUL bytes replaced). Both stores write exactly this.
func (r Run) Bounded() Run {
	r.Error = cleanText(r.Error)
	if len(r.Error) > MaxRunErrorBytes {
		r.Error = truncateUTF8(r.Error, MaxRunErrorBytes-len(" …(truncated)")) + " …(truncated)"
	}
	if len(r.Logs) == 0 {
		r.Logs = nil
		return r
	}
	lines := make([]string, 0, len(r.Logs))
	for _, l := range r.Logs {
		l = cleanText(l)
		if len(l) > MaxRunLogBytes/4 {
			l = truncateUTF8(l, MaxRunLogBytes/4) + " …(line truncated)"
		}
		lines = append(lines, l)
	}
	// Keep the newest lines within both bounds.
	keep, size := 0, 0
	for i := len(lines) - 1; i >= 0; i-- {
		if keep == MaxRunLogLines-1 || size+len(lines[i]) > MaxRunLogBytes-64 {
			break
		}
		keep++
		size += len(lines[i])
	}
	if dropped := len(lines) - keep; dropped > 0 {
		lines = append([]string{fmt.Sprintf("… %d earlier log lines dropped", dropped)}, lines[len(lines)-keep:]...)
	}
	r.Logs = lines
	return r
}

func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Bounds of the monitoring rows (Monitor). They keep one alert or replica
// row small enough to list hundreds of on a dashboard.
const (
	// MaxAlertKindLength bounds an AlertKind, in bytes.
	MaxAlertKindLength = 64
	// MaxAlertMessageBytes bounds Alert.Message.
	MaxAlertMessageBytes = 4 << 10
	// MaxAlertDetails bounds the number of entries of Alert.Details, and
	// MaxAlertDetailsBytes the sum of their keys' and values' lengths.
	MaxAlertDetails      = 32
	MaxAlertDetailsBytes = 8 << 10

	// MaxReplicaTextBytes bounds Replica.Host and Replica.Version.
	MaxReplicaTextBytes = 255
	// MaxReplicaJobs bounds the jobs one replica registers, and
	// MaxReplicaJobBytes the text of one job's Schedule, TimeZone, Overlap
	// and Hash together.
	MaxReplicaJobs     = 10_000
	MaxReplicaJobBytes = 1 << 10
)

// ValidateAlertKind checks an alert kind: lower-case ASCII letters, digits
// and underscores, starting with a letter, at most MaxAlertKindLength
// bytes. Kinds beyond the Alert* constants are accepted, so a check can be
// added without a store change.
func ValidateAlertKind(kind AlertKind) error {
	if kind == "" {
		return invalid("alert kind must not be empty")
	}
	if len(kind) > MaxAlertKindLength {
		return invalid("alert kind must be at most %d bytes, got %d", MaxAlertKindLength, len(kind))
	}
	for i, c := range []byte(kind) {
		if !(c >= 'a' && c <= 'z' || i > 0 && (c >= '0' && c <= '9' || c == '_')) {
			return invalid("alert kind must be lower-case letters, digits and underscores starting with a letter, got %q", kind)
		}
	}
	return nil
}

// validText checks free text: valid UTF-8, no NUL bytes (which PostgreSQL
// text cannot hold), at most max bytes.
func validText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return invalid("%s must be at most %d bytes, got %d", field, max, len(s))
	case !utf8.ValidString(s):
		return invalid("%s must be valid UTF-8", field)
	case strings.IndexByte(s, 0) >= 0:
		return invalid("%s must not contain NUL bytes", field)
	}
	return nil
}

// Validate checks the arguments of AlertRaise.
func (p AlertRaiseParams) Validate() error {
	if err := ValidateAlertKind(p.Kind); err != nil {
		return err
	}
	if err := ValidateName("alert subject", p.Subject); err != nil {
		return err
	}
	if err := ValidateName("alert RaisedBy", p.RaisedBy); err != nil {
		return err
	}
	if err := validText("alert message", p.Message, MaxAlertMessageBytes); err != nil {
		return err
	}
	if err := validText("alert fingerprint", p.Fingerprint, MaxNameLength); err != nil {
		return err
	}
	if len(p.Details) > MaxAlertDetails {
		return invalid("alert details must have at most %d entries, got %d", MaxAlertDetails, len(p.Details))
	}
	size := 0
	for k, v := range p.Details {
		if err := ValidateName("alert details key", k); err != nil {
			return err
		}
		if err := validText(fmt.Sprintf("alert details[%q]", k), v, MaxAlertDetailsBytes); err != nil {
			return err
		}
		size += len(k) + len(v)
	}
	if size > MaxAlertDetailsBytes {
		return invalid("alert details must be at most %d bytes of keys and values, got %d", MaxAlertDetailsBytes, size)
	}
	return nil
}

// Validate checks the arguments of AlertAcknowledge.
func (p AlertAcknowledgeParams) Validate() error {
	if err := ValidateAlertRef(p.Kind, p.Subject); err != nil {
		return err
	}
	if p.ID < 0 {
		return invalid("alert ID must not be negative, got %d", p.ID)
	}
	if err := ValidateName("who (By)", p.By); err != nil {
		return err
	}
	return validText("note", p.Note, MaxNoteLength)
}

// ValidateAlertRef checks the arguments of AlertResolve.
func ValidateAlertRef(kind AlertKind, subject string) error {
	if err := ValidateAlertKind(kind); err != nil {
		return err
	}
	return ValidateName("alert subject", subject)
}

// Validate checks the arguments of AlertList.
func (p AlertListParams) Validate() error {
	if p.Kind != "" {
		if err := ValidateAlertKind(p.Kind); err != nil {
			return err
		}
	}
	if p.Subject != "" {
		if err := ValidateName("alert subject", p.Subject); err != nil {
			return err
		}
	}
	if p.Limit < 0 || p.Limit > MaxRunListLimit {
		return invalid("limit must be between 0 and %d, got %d", MaxRunListLimit, p.Limit)
	}
	return nil
}

// Validate checks the arguments of MonitorSnapshot: each part's as its
// own list method checks them.
func (p MonitorSnapshotParams) Validate() error {
	if err := (RunListParams{Limit: p.RecentRuns}).Validate(); err != nil {
		return fmt.Errorf("recent runs: %w", err)
	}
	if err := (AlertListParams{OpenOnly: true, Limit: p.OpenAlerts}).Validate(); err != nil {
		return fmt.Errorf("open alerts: %w", err)
	}
	if err := p.Leases.Validate(); err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	for owner, hash := range p.KnownJobs {
		if err := validText("known jobs' owner", owner, MaxNameLength); err != nil {
			return err
		}
		if err := validText("known jobs' digest", hash, MaxNameLength); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the arguments of LeaseList.
func (p LeaseListParams) Validate() error {
	switch {
	case len(p.Prefix) > MaxNameLength:
		return invalid("lease name prefix must be at most %d bytes, got %d", MaxNameLength, len(p.Prefix))
	case !utf8.ValidString(p.Prefix):
		return invalid("lease name prefix must be valid UTF-8")
	case strings.IndexByte(p.Prefix, 0) >= 0:
		return invalid("lease name prefix must not contain NUL bytes")
	case p.Limit < 0 || p.Limit > MaxRunListLimit:
		return invalid("limit must be between 0 and %d, got %d", MaxRunListLimit, p.Limit)
	}
	return nil
}

// EffectiveLimit is the limit LeaseList applies.
func (p LeaseListParams) EffectiveLimit() int {
	if p.Limit == 0 {
		return DefaultRunListLimit
	}
	return p.Limit
}

// EffectiveLimit is the limit AlertList applies.
func (p AlertListParams) EffectiveLimit() int {
	if p.Limit == 0 {
		return DefaultRunListLimit
	}
	return p.Limit
}

// Validate checks a replica row before ReplicaHeartbeat. StartedAt and
// HeartbeatAt are not checked: the store sets them.
func (r Replica) Validate() error {
	if err := ValidateName("replica owner", r.Owner); err != nil {
		return err
	}
	if err := validText("replica host", r.Host, MaxReplicaTextBytes); err != nil {
		return err
	}
	if err := validText("replica version", r.Version, MaxReplicaTextBytes); err != nil {
		return err
	}
	if r.PID < 0 || r.PID > math.MaxInt32 {
		return invalid("replica PID must be between 0 and %d, got %d", math.MaxInt32, r.PID)
	}
	if err := ValidateReplicaJobCount(len(r.Jobs)); err != nil {
		return err
	}
	if r.JobsUnchanged && len(r.Jobs) > 0 {
		return invalid("a replica heartbeat with JobsUnchanged keeps the stored jobs and must carry none, got %d", len(r.Jobs))
	}
	if err := r.validateKinds(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(r.Jobs))
	for i, j := range r.Jobs {
		if err := ValidateName(fmt.Sprintf("replica job %d name", i), j.Name); err != nil {
			return err
		}
		if seen[j.Name] {
			return invalid("replica job %q appears twice", j.Name)
		}
		seen[j.Name] = true
		size := 0
		for _, f := range []struct{ field, text string }{
			{"schedule", j.Schedule}, {"time zone", j.TimeZone}, {"overlap", j.Overlap}, {"hash", j.Hash},
		} {
			if err := validText(fmt.Sprintf("replica job %q %s", j.Name, f.field), f.text, MaxReplicaJobBytes); err != nil {
				return err
			}
			size += len(f.text)
		}
		if size > MaxReplicaJobBytes {
			return invalid("replica job %q: schedule, time zone, overlap and hash must be at most %d bytes together, got %d", j.Name, MaxReplicaJobBytes, size)
		}
	}
	return nil
}

// validateKinds checks a replica's handler kinds: names, each once, as
// many as its jobs may be, and none on a heartbeat that keeps the stored
// ones (JobsUnchanged).
func (r Replica) validateKinds() error {
	if len(r.Kinds) > MaxReplicaJobs {
		return invalid("a replica must register at most %d kinds, got %d", MaxReplicaJobs, len(r.Kinds))
	}
	if r.JobsUnchanged && len(r.Kinds) > 0 {
		return invalid("a replica heartbeat with JobsUnchanged keeps the stored kinds and must carry none, got %d", len(r.Kinds))
	}
	seen := make(map[string]bool, len(r.Kinds))
	for i, k := range r.Kinds {
		if err := ValidateName(fmt.Sprintf("replica kind %d", i), k); err != nil {
			return err
		}
		if seen[k] {
			return invalid("replica kind %q appears twice", k)
		}
		seen[k] = true
	}
	return nil
}

// PausedSkipLine is the one log line of the skip run row a claim writes for
// a slot that came due while its job was paused (overridden: by
// JobStateSet) or declared disabled, worded as the PostgreSQL store's
// claim statement words it in SQL.
func PausedSkipLine(overridden bool) string {
	if overridden {
		return "Skipped: the job is paused"
	}
	return "Skipped: the job is declared disabled"
}

// OverlapSkipLine is the one log line of the skip run row a claim writes for
// a slot that came due while holder held its lease, worded as the
// PostgreSQL store's claim statement words it in SQL. "another owner"
// stands for the zero lease.
func OverlapSkipLine(leaseName string, holder Lease) string {
	who := "another owner"
	if holder.Generation != 0 {
		who = fmt.Sprintf("%s at generation %d", holder.Owner, holder.Generation)
	}
	return fmt.Sprintf("Skipped: the previous run has not finished (lease %s held by %s)", leaseName, who)
}
