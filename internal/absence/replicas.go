package absence

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cronfence/cronfence/store"
)

// checkDrift raises config_drift when the live replicas register the job
// with different settings (hashes), as during a rolling deploy that changed
// it or a replica left on an old configuration. Details name each live
// replica's hash and schedule. It resolves when they agree again.
func checkDrift(j *Job) (Alert, bool) {
	var hashes []string
	details := map[string]string{}
	for _, r := range j.Registrations {
		if !slices.Contains(hashes, r.Job.Hash) {
			hashes = append(hashes, r.Job.Hash)
		}
		sched := r.Job.Schedule
		if r.Job.TimeZone != "" {
			sched += " (" + r.Job.TimeZone + ")"
		}
		details[r.Owner] = fmt.Sprintf("hash=%s schedule=%q", r.Job.Hash, sched)
	}
	if len(hashes) < 2 {
		return Alert{}, false
	}
	var fields []string
	for _, r := range j.Registrations[1:] {
		for _, f := range differences(j.Registrations[0].Job, r.Job) {
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
	}
	what := strings.Join(fields, ", ")
	if what == "" {
		what = "settings this binary does not know (only their hashes differ)"
	}
	details["differences"] = what
	return Alert{
		Kind: store.AlertConfigDrift, Subject: j.Name, Details: details,
		Message: fmt.Sprintf("job %q is registered with %d different settings by %d live replicas: they differ in %s",
			j.Name, len(hashes), len(j.Registrations), what),
	}, true
}

// checkOrphans raises orphan_job for each job the database knows but no
// live replica registers: one whose pause override is set (an operator
// steers a job nobody runs), or whose latest run among recent started
// within window (a job that ran lately and stopped being registered). Run
// history alone stops counting after window, so a job removed on purpose
// stops alerting on its own; an override must be unset.
func checkOrphans(reg *Registry, states []store.JobState, recent []store.Run, window time.Duration) []Alert {
	type seen struct {
		run      store.Run
		override string
	}
	found := map[string]*seen{}
	get := func(job string) *seen {
		if found[job] == nil {
			found[job] = &seen{}
		}
		return found[job]
	}
	for _, st := range states {
		if st.EnabledOverride != nil && reg.Jobs[st.Job] == nil {
			get(st.Job).override = fmt.Sprintf("enabled=%t by %s at %s", *st.EnabledOverride, st.OverrideBy, ts(st.OverrideAt))
		}
	}
	for _, r := range recent { // newest first: the first row of a job is its latest
		if reg.Jobs[r.Job] != nil || window <= 0 || reg.Now.Sub(r.StartedAt) > window {
			continue
		}
		if s := get(r.Job); s.run.ID == 0 {
			s.run = r
		}
	}
	var out []Alert
	for job, s := range found {
		details := map[string]string{}
		var why []string
		if s.override != "" {
			details["override"] = s.override
			why = append(why, "its pause override is set ("+s.override+")")
		}
		if s.run.ID != 0 {
			details["last_run"] = ts(s.run.StartedAt)
			details["last_run_owner"] = s.run.Owner
			why = append(why, fmt.Sprintf("it last ran at %s on %s", ts(s.run.StartedAt), s.run.Owner))
		}
		out = append(out, Alert{
			Kind: store.AlertOrphanJob, Subject: job, Details: details,
			Message: fmt.Sprintf("job %q is in the database but no live replica registers it: %s",
				job, strings.Join(why, "; ")),
		})
	}
	return out
}

// checkClockOffsets raises clock_offset for each live replica whose clock
// was last measured further than limit from the database clock. The
// database clock decides every lease, so this is a warning about the
// replica's logs and metrics, and about a host to fix. A limit of zero
// turns it off.
func checkClockOffsets(reg *Registry, limit time.Duration) []Alert {
	if limit <= 0 {
		return nil
	}
	var out []Alert
	for _, r := range reg.Live {
		off := r.ClockOffset
		if off.Abs() <= limit {
			continue
		}
		dir := "ahead of"
		if off < 0 {
			dir = "behind"
		}
		out = append(out, Alert{
			Kind: store.AlertClockOffset, Subject: r.Owner,
			Details: map[string]string{
				"offset":    off.String(),
				"threshold": limit.String(),
				"host":      r.Host,
			},
			Message: fmt.Sprintf("replica %s's clock is %s %s the database clock (threshold %s)",
				r.Owner, dur(off.Abs()), dir, limit),
		})
	}
	return out
}

// differences names the settings in which a and b differ.
func differences(a, b store.ReplicaJob) []string {
	var out []string
	diff := func(name string, differ bool) {
		if differ {
			out = append(out, name)
		}
	}
	diff("schedule", a.Schedule != b.Schedule)
	diff("time zone", a.TimeZone != b.TimeZone)
	diff("timeout", a.Timeout != b.Timeout)
	diff("lease TTL", a.LeaseTTL != b.LeaseTTL)
	diff("catch-up window", a.CatchUpWindow != b.CatchUpWindow)
	diff("overlap", a.Overlap != b.Overlap)
	diff("deadline", a.Deadline != b.Deadline)
	diff("max attempts", a.MaxAttempts != b.MaxAttempts)
	diff("disabled", a.Disabled != b.Disabled)
	return out
}
