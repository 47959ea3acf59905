package adminview

import (
	"context"
	"errors"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// Declared is a job as a replica declares it, with its next slot: what a
// job's view shows besides the store's rows. The handlers fill it from
// the scheduler's JobInfo, the binary's direct mode from its config file.
type Declared struct {
	// Name is the job's name.
	Name string
	// Schedule is its cron expression or descriptor.
	Schedule string
	// TimeZone is the zone of its schedule; empty for UTC.
	TimeZone string
	// Overlap is its overlap policy, as cronfence.Overlap spells it.
	Overlap string
	// Disabled says it is declared disabled.
	Disabled bool
	// Next is its next slot by the schedule; zero when unknown.
	Next time.Time
	// Jitter is the bound of its slots' start delay; zero for none.
	Jitter time.Duration
	// Starts is when Next's run starts, after its delay; zero when
	// unknown or the same as Next.
	Starts time.Time
	// Exclude is its exclusion windows; nil for none.
	Exclude []string
}

// JobOf is the view of job d with its override state st (nil when it has
// no override row) at now (an override that ended by then decides no
// more), without its last run and lease.
func JobOf(d Declared, st *store.JobState, now time.Time) client.Job {
	tz := d.TimeZone
	if tz == "" {
		tz = "UTC"
	}
	v := client.Job{
		Name: d.Name, Schedule: d.Schedule, TimeZone: tz, Overlap: d.Overlap,
		DeclaredEnabled: !d.Disabled, Enabled: !d.Disabled,
	}
	if d.Jitter > 0 {
		j := d.Jitter.String()
		v.Jitter = &j
	}
	v.Exclude = d.Exclude
	if st != nil {
		v.Override = &client.Override{Enabled: st.EnabledOverride, By: st.OverrideBy, At: Time(st.OverrideAt), Note: st.Note}
		if !st.Until.IsZero() {
			v.Override.Until = Time(st.Until)
		}
		if o := st.Override(now); o != nil {
			v.Enabled = *o
		}
	}
	// A paused or disabled job runs no slot: it has no next one to show
	// (its slots are settled skipped as they come due).
	if v.Enabled && !d.Next.IsZero() {
		s := d.Next.Format(time.RFC3339)
		v.Next = &s
		if !d.Starts.IsZero() && !d.Starts.Equal(d.Next) {
			st := d.Starts.Format(time.RFC3339Nano)
			v.NextStart = &st
		}
	}
	return v
}

// Jobs builds the views of jobs from st: one Now, one JobStateList, and
// per job one RunList and one LeaseGet. On failure it names the operation
// that failed.
func Jobs(ctx context.Context, st store.Store, jobs []Declared) ([]client.Job, string, error) {
	now, err := st.Now(ctx)
	if err != nil {
		return nil, "read the database clock", err
	}
	return JobsAt(ctx, st, jobs, now)
}

// JobsAt is Jobs judging leases against now, a database clock reading the
// caller already made (the dashboard reads it once per page).
func JobsAt(ctx context.Context, st store.Store, jobs []Declared, now time.Time) ([]client.Job, string, error) {
	states, err := st.JobStateList(ctx)
	if err != nil {
		return nil, "read job states", err
	}
	byJob := make(map[string]*store.JobState, len(states))
	for i := range states {
		byJob[states[i].Job] = &states[i]
	}
	out := make([]client.Job, 0, len(jobs))
	for _, d := range jobs {
		v := JobOf(d, byJob[d.Name], now)
		runs, err := st.RunList(ctx, store.RunListParams{Job: d.Name, Limit: 1})
		if err != nil {
			return nil, "list runs", err
		}
		if len(runs) > 0 {
			rv := RunOf(runs[0])
			v.LastRun = &rv
		}
		l, err := st.LeaseGet(ctx, "job:"+d.Name)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return nil, "read lease", err
		default:
			v.Lease = &client.Lease{
				Holder: l.Owner, Generation: l.Generation, AcquiredAt: Time(l.AcquiredAt),
				ExpiresAt: Time(l.ExpiresAt), Active: l.ExpiresAt.After(now),
			}
		}
		out = append(out, v)
	}
	return out, "", nil
}
