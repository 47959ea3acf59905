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

// checkOrphans raises orphan_job for each job that a replica which died
// registered and no live replica registers. A replica that stops cleanly
// removes its registry row, so the rows that stay behind, their heartbeat
// older than the staleness threshold, are of replicas that died (killed,
// host lost), froze or lost the database: their jobs run nowhere now. A job
// that no recorded replica registers is retired (dropped or renamed by a
// deploy whose replicas stopped cleanly), or was never a replica's (a
// cronfence lock line, another application's job): it raises nothing,
// whatever its runs or pause override. A dead replica's row counts for
// window after its last heartbeat (zero: orphan_job is off).
func checkOrphans(reg *Registry, states []store.JobState, recent []store.Run, window time.Duration) []Alert {
	if window <= 0 {
		return nil
	}
	type dead struct {
		owner     string
		heartbeat time.Time
	}
	found := map[string][]dead{}
	for _, rep := range reg.Replicas {
		if reg.IsLive(rep.Owner) || reg.Now.Sub(rep.HeartbeatAt) > window {
			continue
		}
		for _, j := range rep.Jobs {
			if reg.Jobs[j.Name] == nil {
				found[j.Name] = append(found[j.Name], dead{rep.Owner, rep.HeartbeatAt})
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	lastRun := map[string]store.Run{}
	for _, r := range recent { // newest first: the first row of a job is its latest
		if _, ok := lastRun[r.Job]; !ok && found[r.Job] != nil {
			lastRun[r.Job] = r
		}
	}
	override := map[string]string{}
	for _, st := range states {
		if st.EnabledOverride != nil && found[st.Job] != nil {
			override[st.Job] = fmt.Sprintf("enabled=%t by %s at %s", *st.EnabledOverride, st.OverrideBy, ts(st.OverrideAt))
		}
	}
	var out []Alert
	for job, reps := range found {
		slices.SortFunc(reps, func(a, b dead) int { return strings.Compare(a.owner, b.owner) })
		var names []string
		latest := reps[0].heartbeat
		for _, r := range reps {
			names = append(names, fmt.Sprintf("%s (last heartbeat %s)", r.owner, ts(r.heartbeat)))
			if r.heartbeat.After(latest) {
				latest = r.heartbeat
			}
		}
		details := map[string]string{"replicas": strings.Join(names, ", "), "last_heartbeat": ts(latest)}
		msg := fmt.Sprintf("job %q is registered by no live replica: %s registered it and stopped without a clean stop (its heartbeat lapsed)",
			job, strings.Join(names, ", "))
		if r, ok := lastRun[job]; ok {
			details["last_run"], details["last_run_owner"] = ts(r.StartedAt), r.Owner
			msg += fmt.Sprintf("; it last ran at %s on %s", ts(r.StartedAt), r.Owner)
		}
		if o, ok := override[job]; ok {
			details["override"] = o
		}
		out = append(out, Alert{Kind: store.AlertOrphanJob, Subject: job, Details: details, Message: msg})
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
	diff("catch-up", a.CatchUp != b.CatchUp || a.MaxCatchUp != b.MaxCatchUp)
	diff("jitter", a.Jitter != b.Jitter)
	diff("overlap", a.Overlap != b.Overlap)
	diff("deadline", a.Deadline != b.Deadline)
	diff("max attempts", a.MaxAttempts != b.MaxAttempts)
	diff("disabled", a.Disabled != b.Disabled)
	return out
}
