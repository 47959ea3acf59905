package absence

import (
	"fmt"

	"github.com/cronfence/cronfence/store"
)

// checkSlowRun raises slow_run when the job's latest finished scheduled run
// lasted more than half the schedule's interval at its slot (the gap to the
// next slot): the job is about to outgrow its interval. It resolves when a
// later run is faster. Manual runs have no slot and are not judged, nor is
// an attempt found dead (see ranFor).
func checkSlowRun(j *Job, d JobData) (Alert, bool) {
	var run store.Run
	for _, r := range d.Runs {
		if !r.Manual && ranFor(r) && !r.Slot.IsZero() {
			run = r
			break
		}
	}
	if run.Slot.IsZero() {
		return Alert{}, false
	}
	next := j.Schedule.Next(run.Slot)
	if next.IsZero() {
		return Alert{}, false
	}
	interval := next.Sub(run.Slot)
	took := run.FinishedAt.Sub(run.StartedAt)
	if took <= interval/2 {
		return Alert{}, false
	}
	return Alert{
		Kind: store.AlertSlowRun, Subject: j.Name,
		Details: map[string]string{
			"slot":     ts(run.Slot),
			"duration": dur(took),
			"interval": dur(interval),
			"owner":    run.Owner,
		},
		Message: fmt.Sprintf("job %q: the run of slot %s lasted %s, more than half its interval of %s",
			j.Name, ts(run.Slot), dur(took), dur(interval)),
	}, true
}

// ranFor reports whether a run row's start and end say how long the run
// took: not a skip, ended, and not an attempt another replica found dead
// (store.ReasonInterrupted), whose end is when it was found or its lease
// expired, a TTL after its last renewal.
func ranFor(r store.Run) bool {
	return !r.Skipped && !r.FinishedAt.IsZero() && r.Reason != store.ReasonInterrupted
}
