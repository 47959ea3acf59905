package sqlstore

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Refusal is the part of a claim's gate that the slot's row, existing,
// decides, in the order of the PostgreSQL store's sql/slotClaim.sql, once
// the slot is due and its job not paused: a completed or skipped slot is
// final; a failed one is refused unless the claim retries it; a running
// one is refused while the holding that claimed it is live, naming that
// holding (live reads it, as the store can tell); and a slot out of
// attempts is refused. An empty refusal lets the claim take the lease.
func Refusal(p store.SlotClaimParams, existing store.Slot, live func() (guard store.Lease, ok bool, err error)) (store.ClaimRefusal, store.Lease, error) {
	switch existing.Status {
	case store.SlotCompleted:
		return store.ClaimCompleted, store.Lease{}, nil
	case store.SlotSkipped:
		return store.ClaimSkipped, store.Lease{}, nil
	case store.SlotFailed:
		if !p.RetriesFailed(existing.Attempts) {
			return store.ClaimFailed, store.Lease{}, nil
		}
	case store.SlotRunning:
		guard, ok, err := live()
		if err != nil {
			return "", store.Lease{}, err
		}
		if ok {
			return store.ClaimHeld, guard, nil
		}
	}
	if existing.Attempts >= p.MaxAttempts {
		return store.ClaimAttemptsExhausted, store.Lease{}, nil
	}
	return "", store.Lease{}, nil
}

// MayBuffer reports whether a claim of slot refused because holder holds
// its lease records the slot buffered, when the job has no buffered slot
// yet, rather than skipped: when its overlap policy is buffer-one, or when
// the holder took the lease after the slot came due. That is no overlap:
// the lease was free at the slot's instant and this claim arrived late (a
// catch-up or resumed run of an earlier slot started first), so the slot
// waits for that run, whatever the policy.
func MayBuffer(p store.SlotClaimParams, slot time.Time, holder store.Lease) bool {
	return p.Overlap == store.OverlapBuffer || holder.AcquiredAt.After(slot)
}

// OverlapSkipRun is the skip run row of a slot that a claim at now
// recorded skipped because holder held its lease.
func OverlapSkipRun(p store.SlotClaimParams, slot, now time.Time, holder store.Lease) store.Run {
	return skipRun(p, slot, now, store.ClaimHeld, store.OverlapSkipLine(p.LeaseName, holder))
}

// PausedSkipRun is the skip run row of a slot that a claim at now settled
// skipped because its job was paused: overridden says whether by an
// override or by the job's declared value. The row says why nothing ran.
func PausedSkipRun(p store.SlotClaimParams, slot, now time.Time, overridden bool) store.Run {
	return skipRun(p, slot, now, store.ClaimPaused, store.PausedSkipLine(overridden))
}

func skipRun(p store.SlotClaimParams, slot, now time.Time, why store.ClaimRefusal, line string) store.Run {
	return store.Run{
		Job: p.Job, Slot: slot, CatchUp: p.CatchUp, Owner: p.Owner,
		StartedAt: now, FinishedAt: now, Success: true, Skipped: true,
		Reason: string(why), Logs: []string{line},
	}.Bounded()
}

// ClaimWhat names, for an error, the claim of items[at], or of the whole
// batch when at is negative.
func ClaimWhat(items []store.SlotClaimParams, at int) string {
	if at < 0 {
		return fmt.Sprintf("claim %d slot(s), first of job %q", len(items), items[0].Job)
	}
	p := items[at]
	what := fmt.Sprintf("claim slot %s of job %q", Normalize(p.Slot).Format(time.RFC3339Nano), p.Job)
	if len(items) > 1 {
		what += fmt.Sprintf(" (item %d of %d)", at, len(items))
	}
	return what
}
