package absence

import (
	"fmt"
	"strconv"
	"time"

	"github.com/cronfence/cronfence/store"
)

// checkDeadline raises deadline_missed when the latest slot whose deadline
// has passed (Job.DeadlineSlot) is not completed: never claimed, still
// running, failed, skipped or buffered. The check is stateless: it resolves
// as soon as that slot, or a newer one once its own deadline passes, is
// found completed.
func checkDeadline(j *Job, d JobData, now time.Time) (Alert, bool) {
	slot := j.DeadlineSlot(now)
	if slot.IsZero() {
		return Alert{}, false
	}
	claim := d.DeadlineSlot
	if claim.Status == store.SlotCompleted {
		return Alert{}, false
	}
	deadline := j.Settings.Deadline
	details := map[string]string{
		"slot":     ts(slot),
		"deadline": dur(deadline),
		"due":      ts(slot.Add(deadline)),
	}
	var what string
	if claim.Slot.IsZero() {
		details["status"] = "missing"
		what = "no replica claimed it"
	} else {
		details["status"] = string(claim.Status)
		details["attempts"] = strconv.Itoa(claim.Attempts)
		details["owner"] = claim.Owner
		what = describeClaim(claim)
	}
	return Alert{
		Kind: store.AlertDeadlineMissed, Subject: j.Name, Details: details,
		Message: fmt.Sprintf("job %q: slot %s was not completed within its deadline of %s: %s",
			j.Name, ts(slot), dur(deadline), what),
	}, true
}

// describeClaim says, for a message, where an unfinished claim stands.
func describeClaim(c store.Slot) string {
	switch c.Status {
	case store.SlotRunning:
		return fmt.Sprintf("it is still running (attempt %d, on %s)", c.Attempts, c.Owner)
	case store.SlotFailed:
		return fmt.Sprintf("it failed (attempt %d, on %s)", c.Attempts, c.Owner)
	case store.SlotSkipped:
		return "it was skipped: a previous run still held the job's lease, or the job was paused when it came due"
	case store.SlotBuffered:
		return "it is buffered behind a previous run that has not ended"
	default:
		return "its claim is " + string(c.Status)
	}
}
