package cronfence

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cronfence/cronfence/store"
)

// A Schedule is a stored schedule: a job kept in the store rather than
// declared in code or a config file, created, changed and deleted while
// the replicas run (Scheduler.Schedules), and run by every replica that
// registers its kind (RegisterKind).
type Schedule = store.Schedule

// ScheduleSettings are what a stored schedule's owner sets: its spec and
// zone, its handler's kind and arguments, and the settings a Job has, with
// the same meaning and defaults.
type ScheduleSettings = store.ScheduleSettings

// ScheduleChange is one entry of the stored schedules' audit: who changed
// which schedule when, and its settings before and after.
type ScheduleChange = store.ScheduleChange

// ErrUnknownSchedule is returned for a stored schedule that does not exist.
var ErrUnknownSchedule = errors.New("cronfence: unknown schedule")

// ErrScheduleConflict is wrapped by the error of a write that would lose
// another: a name that exists, or a version that is no longer the current
// one (a *store.ConflictError says which): read it again and retry.
var ErrScheduleConflict = store.ErrConflict

// Schedules creates, changes, deletes and lists the stored schedules
// (Scheduler.Schedules). Every change reaches every replica's timers
// without a restart: at once on PostgreSQL, which tells them, and within
// Config.SchedulePollEvery on the other stores.
type Schedules struct {
	s *Scheduler
}

// Schedules returns the stored schedules' API. It works before Start and
// on an API-only replica (Config.DisableTimers) too.
func (s *Scheduler) Schedules() *Schedules { return &Schedules{s: s} }

// Create stores a new schedule at version 1. The name must not be taken
// by a stored schedule (ErrScheduleConflict) nor by a declared job; the
// spec, zone and settings are checked as Register checks a Job's, and the
// kind must be registered by this replica or a live one. by says who.
func (ss *Schedules) Create(ctx context.Context, name string, set ScheduleSettings, by string) (Schedule, error) {
	if err := ss.check(ctx, name, set); err != nil {
		return Schedule{}, err
	}
	sc, err := ss.s.e.Store.ScheduleCreate(ctx, store.ScheduleCreateParams{Name: name, Settings: set, By: by})
	return sc, ss.failed("create", name, err)
}

// Update replaces the settings of the schedule name, if its version is
// still version (the one read): else it changes nothing and returns an
// error wrapping ErrScheduleConflict. A spec changed takes effect at the
// next slot of the new spec; a run in progress finishes as it started.
func (ss *Schedules) Update(ctx context.Context, name string, version int64, set ScheduleSettings, by string) (Schedule, error) {
	if err := ss.check(ctx, name, set); err != nil {
		return Schedule{}, err
	}
	sc, err := ss.s.e.Store.ScheduleUpdate(ctx, store.ScheduleUpdateParams{Name: name, Version: version, Settings: set, By: by})
	return sc, ss.failed("update", name, err)
}

// Delete removes the schedule name if its version is still version (any
// version when 0), and returns it as it was. It stops on every replica;
// a run in progress finishes; its history stays.
func (ss *Schedules) Delete(ctx context.Context, name string, version int64, by string) (Schedule, error) {
	sc, err := ss.s.e.Store.ScheduleDelete(ctx, store.ScheduleDeleteParams{Name: name, Version: version, By: by})
	return sc, ss.failed("delete", name, err)
}

// Get returns the schedule name, or an error wrapping ErrUnknownSchedule.
func (ss *Schedules) Get(ctx context.Context, name string) (Schedule, error) {
	sc, err := ss.s.e.Store.ScheduleGet(ctx, name)
	return sc, ss.failed("get", name, err)
}

// List returns a page of schedules in name order: those after the name
// after (empty for the first page), at most limit (0: 100, at most
// 10,000).
func (ss *Schedules) List(ctx context.Context, after string, limit int) ([]Schedule, error) {
	page, err := ss.s.e.Store.ScheduleList(ctx, store.ScheduleListParams{After: after, Limit: limit})
	return page, ss.failed("list", "", err)
}

// Audit returns the changes of the schedule name (of every schedule when
// empty), newest first: those before the sequence number before (0 for the
// newest), at most limit.
func (ss *Schedules) Audit(ctx context.Context, name string, before int64, limit int) ([]ScheduleChange, error) {
	page, err := ss.s.e.Store.ScheduleAudit(ctx, store.ScheduleAuditParams{Name: name, Before: before, Limit: limit})
	return page, ss.failed("audit", name, err)
}

// check refuses, naming the field, what the store cannot judge: the spec,
// zone and job settings (as Register), a declared job's name, and a kind
// that no replica runs.
func (ss *Schedules) check(ctx context.Context, name string, set ScheduleSettings) error {
	if err := set.Validate(); err != nil {
		return fmt.Errorf("cronfence: schedule %q: %w", name, err)
	}
	r, err := scheduleJob(name, set, func(context.Context, *Run) error { return nil }).prepare()
	if err != nil {
		return err
	}
	if r.Deadline != 0 {
		// A deadline is only read by the absence checks, which watch the
		// jobs in the replica registry, where stored schedules are not:
		// accepted, it would promise an alert that never comes.
		return errInvalid(fmt.Sprintf("schedule %q: deadline %s: the absence checks do not watch stored schedules yet, so it would raise nothing; leave it out", name, r.Deadline))
	}
	if err := r.catchUpKept(ss.s.e.cfg.Retention); err != nil {
		return err
	}
	if cur := ss.s.jobs.get(name); cur != nil && cur.stored == nil {
		return errInvalid(fmt.Sprintf("schedule name %q is a declared job's (Register or the config file); choose another", name))
	}
	known := slices.Contains(ss.s.stored.handlerKinds(), set.Kind)
	if known {
		return nil
	}
	replicas, err := ss.s.e.Store.ReplicaList(ctx)
	if err != nil {
		return fmt.Errorf("cronfence: schedule %q: read the replicas that run kinds: %w", name, err)
	}
	stale := ss.s.e.cfg.Alerts.ReplicaStale
	now, _ := ss.s.e.Store.Now(ctx)
	for _, rep := range replicas {
		if !now.IsZero() && now.Sub(rep.HeartbeatAt) > stale {
			continue
		}
		if slices.ContainsFunc(rep.Jobs, func(j store.ReplicaJob) bool { return j.Name == name }) {
			return errInvalid(fmt.Sprintf("schedule name %q is a declared job's on replica %s; choose another", name, rep.Owner))
		}
		known = known || slices.Contains(rep.Kinds, set.Kind)
	}
	if !known {
		return errInvalid(fmt.Sprintf("schedule %q: kind %q: no live replica registers it (RegisterKind, or kinds: in the config)", name, set.Kind))
	}
	return nil
}

// failed words a store's error for the caller: an unknown schedule, a
// conflict and bad input keep their sentinels.
func (ss *Schedules) failed(op, name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %q", ErrUnknownSchedule, name)
	case name == "":
		return fmt.Errorf("cronfence: %s schedules: %w", op, err)
	}
	return fmt.Errorf("cronfence: %s schedule %q: %w", op, name, err)
}
