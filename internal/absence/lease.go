package absence

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cronfence/cronfence/store"
)

// checkLease raises lease_stuck when the job's lease, unexpired, looks held
// by an owner that stopped:
//
//   - not renewed for more than 2/3 of its TTL: renewals come every TTL/3,
//     so two in a row were missed (a paused, stopped or partitioned owner).
//     With expiry judged by the database clock a lease cannot stay
//     unrenewed for more than its TTL and still be unexpired, so this is
//     the earliest sure sign, a third of a TTL before a takeover is allowed;
//   - held by one generation for longer than the job's Timeout plus one
//     renewal period (time for a cancelled handler to return and its end to
//     be recorded), or, without a Timeout, longer than twice the longest
//     run known from the job's recent runs, and at least one TTL.
//
// It resolves when the lease is renewed, released or expired.
func checkLease(j *Job, d JobData, now time.Time) (Alert, bool) {
	l := d.Lease
	if j.LeaseName() == "" || l.Generation == 0 || !l.ExpiresAt.After(now) {
		return Alert{}, false
	}
	ttl := l.ExpiresAt.Sub(l.RenewedAt)
	if l.RenewedAt.IsZero() || ttl <= 0 {
		ttl = j.Settings.LeaseTTL
	}
	held, unrenewed := now.Sub(l.AcquiredAt), now.Sub(l.RenewedAt)
	details := map[string]string{
		"lease":       l.Name,
		"owner":       l.Owner,
		"generation":  strconv.FormatInt(l.Generation, 10),
		"acquired_at": ts(l.AcquiredAt),
		"renewed_at":  ts(l.RenewedAt),
		"expires_at":  ts(l.ExpiresAt),
		"held":        dur(held),
		"ttl":         dur(ttl),
	}
	if ttl > 0 && unrenewed > 2*ttl/3 {
		details["reason"] = "not_renewed"
		return Alert{
			Kind: store.AlertLeaseStuck, Subject: j.Name, Details: details,
			Message: fmt.Sprintf("job %q: lease %s held by %s (generation %d) was not renewed for %s of its %s TTL: its owner looks paused or stopped",
				j.Name, l.Name, l.Owner, l.Generation, dur(unrenewed), dur(ttl)),
		}, true
	}
	limit, why := holdLimit(j, d.Runs, ttl)
	if limit <= 0 || held <= limit {
		return Alert{}, false
	}
	details["reason"] = "held_too_long"
	details["limit"] = dur(limit)
	return Alert{
		Kind: store.AlertLeaseStuck, Subject: j.Name, Details: details,
		Message: fmt.Sprintf("job %q: lease %s held by %s (generation %d) for %s, longer than %s",
			j.Name, l.Name, l.Owner, l.Generation, dur(held), why),
	}, true
}

// holdLimit is how long one generation may hold the job's lease, and why;
// zero when nothing bounds it (no timeout, no run known).
func holdLimit(j *Job, runs []store.Run, ttl time.Duration) (time.Duration, string) {
	if t := j.Settings.Timeout; t > 0 {
		return t + ttl/3, fmt.Sprintf("its timeout of %s", dur(t))
	}
	var longest time.Duration
	for _, r := range runs {
		if ranFor(r) {
			longest = max(longest, r.FinishedAt.Sub(r.StartedAt))
		}
	}
	if longest <= 0 {
		return 0, ""
	}
	return max(2*longest, ttl), fmt.Sprintf("twice its longest recent run (%s) and its TTL", dur(longest))
}
