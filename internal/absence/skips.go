package absence

import (
	"fmt"
	"strconv"

	"github.com/cronfence/cronfence/store"
)

// checkSkipStreak raises skip_streak when the job's newest scheduled runs
// are more than limit skips in a row: slot after slot came due while a run
// still held the lease, so the job outgrew its interval. Manual runs are
// not slots, and the slots skipped while the job was paused are skipped by
// design: neither makes nor breaks a streak. It resolves when the newest
// scheduled run is not a skip. A limit of zero turns it off.
func checkSkipStreak(j *Job, d JobData, limit int) (Alert, bool) {
	if limit <= 0 {
		return Alert{}, false
	}
	var streak []store.Run // newest first
	for _, r := range d.Runs {
		if r.Manual || r.Skipped && r.Reason == string(store.ClaimPaused) {
			continue
		}
		if !r.Skipped {
			break
		}
		streak = append(streak, r)
	}
	if len(streak) <= limit {
		return Alert{}, false
	}
	newest, oldest := streak[0], streak[len(streak)-1]
	count := strconv.Itoa(len(streak))
	if len(streak) == len(d.Runs) {
		count += "+" // every run read was a skip: the streak may be longer
	}
	details := map[string]string{
		"count":       count,
		"threshold":   strconv.Itoa(limit),
		"first_slot":  ts(oldest.Slot),
		"latest_slot": ts(newest.Slot),
		"reason":      newest.Reason,
	}
	if len(newest.Logs) > 0 {
		details["latest_log"] = newest.Logs[0] // names the holder
	}
	return Alert{
		Kind: store.AlertSkipStreak, Subject: j.Name, Details: details,
		Message: fmt.Sprintf("job %q skipped its last %s slots in a row (%s), more than %d: it outgrew its interval",
			j.Name, count, newest.Reason, limit),
	}, true
}
