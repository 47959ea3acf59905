package absence

import (
	"fmt"

	"github.com/cronfence/cronfence/store"
)

// checkSlowRun raises slow_run when the job's latest finished scheduled run
// lasted more than half the schedule's interval at its slot (the gap to the
// next slot): the job is about to outgrow its interval. It resolves when a
// later run is faster. Manual runs have no slot and are not judged.
func checkSlowRun(j *Job, d JobData) (Alert, bool) {
	var run store.Run
	for _, r := range d.Runs {
		if !r.Manual && !r.Skipped && !r.Slot.IsZero() && !r.FinishedAt.IsZero() {
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
