package cronfence

import (
	"fmt"
	"time"

	"github.com/cronfence/cronfence/internal/schedcache"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// A slot inside one of its job's exclusions (Job.Exclude, Config.Exclude)
// is not claimed: its timer fires as for any slot, and the slot is
// recorded skipped with the reason excluded (Store.SlotSkip, once across
// replicas), so the history shows each one and the absence checks do not
// count it missing. Catch-up passes over excluded slots the same way.

// maxExcludedSteps bounds the slots and jumps JobInfo.Next takes past
// exclusions: a range is jumped whole, a calendar entry a minute at a
// time (a day of a secondly job is 1,440 steps).
const maxExcludedSteps = 100_000

// parseExclusions parses a job's entries in its zone; nil for none.
func parseExclusions(entries []string, loc *time.Location) (*schedule.Exclusions, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	return schedule.ParseExclusions(entries, loc)
}

// excludeAlso adds the exclusions for every job (Config.Exclude, checked
// by Config.validate), read in r's zone.
func (r *registered) excludeAlso(all []string) error {
	if len(all) == 0 {
		return nil
	}
	loc := time.UTC
	if r.TimeZone != "" {
		var err error
		if loc, err = schedcache.Location(r.TimeZone); err != nil {
			return errInvalid(fmt.Sprintf("job %q: time zone %q: %v", r.Name, r.TimeZone, err))
		}
	}
	x, err := schedule.ParseExclusions(all, loc)
	if err != nil {
		return errInvalid(fmt.Sprintf("Config.Exclude: %v", err))
	}
	r.exclude = r.exclude.With(x)
	return nil
}

// excluded reports whether slot falls in one of r's exclusions, and which.
func (r *registered) excluded(slot time.Time) (string, bool) {
	return r.exclude.Match(slot)
}

// nextSlot is r's first slot after t that no exclusion holds; zero when
// none comes within maxExcludedSteps.
func (r *registered) nextSlot(t time.Time) time.Time {
	if r.exclude == nil {
		return r.sched.Next(t)
	}
	return r.exclude.Next(r.sched, t, maxExcludedSteps)
}

// excludedSkip is the skip of e's slot, held by the exclusion entry.
func excludedSkip(owner string, e *entry, entry string) store.SlotSkipParams {
	return store.SlotSkipParams{
		Job: e.job.Name, Slot: e.slot, LeaseName: e.job.leaseName(e.slot), Owner: owner, After: e.slot,
		CatchUp: e.origin == OriginCatchUp, Reason: store.SkipExcluded,
		Log: fmt.Sprintf("Skipped: excluded, the slot falls in the job's exclusion %q", entry),
	}
}
