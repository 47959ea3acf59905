package mysql

import (
	"context"
	"database/sql"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

var _ store.Schedules = (*Store)(nil)

// schedules runs the stored schedules' statements on this store's tables.
// A write locks the one row of schedule_seq first (FOR UPDATE), so writes
// take turns and their changes' numbers commit in order; see
// sqlstore.Schedules and migration 004.
func (s *Store) schedules() sqlstore.Schedules {
	return sqlstore.Schedules{
		ScheduleTable: s.t("schedules"), ChangeTable: s.t("schedule_changes"), SeqTable: s.t("schedule_seq"),
		Lock: " FOR UPDATE", Instant: func(t time.Time) any { return sqlstore.Normalize(t) }, Decoder: decode,
	}
}

// ScheduleCreate writes a new schedule and its change in one transaction.
// See store.Schedules.
func (s *Store) ScheduleCreate(ctx context.Context, p store.ScheduleCreateParams) (sch store.Schedule, err error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if s.closed.Load() {
		return store.Schedule{}, closedError("write a schedule")
	}
	err = s.scheduleWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		sch, err = s.schedules().Create(ctx, tx, p, now)
		return err
	})
	if err != nil {
		return store.Schedule{}, s.errorf(err, "create schedule %q", p.Name)
	}
	return sch, nil
}

// ScheduleUpdate replaces a schedule's settings if it is at p.Version, in
// one transaction. See store.Schedules.
func (s *Store) ScheduleUpdate(ctx context.Context, p store.ScheduleUpdateParams) (sch store.Schedule, err error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if s.closed.Load() {
		return store.Schedule{}, closedError("write a schedule")
	}
	err = s.scheduleWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		sch, err = s.schedules().Update(ctx, tx, p, now)
		return err
	})
	if err != nil {
		return store.Schedule{}, s.errorf(err, "update schedule %q", p.Name)
	}
	return sch, nil
}

// ScheduleDelete deletes a schedule if it is at p.Version (any, when 0),
// in one transaction. See store.Schedules.
func (s *Store) ScheduleDelete(ctx context.Context, p store.ScheduleDeleteParams) (sch store.Schedule, err error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if s.closed.Load() {
		return store.Schedule{}, closedError("write a schedule")
	}
	err = s.scheduleWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		sch, err = s.schedules().Delete(ctx, tx, p, now)
		return err
	})
	if err != nil {
		return store.Schedule{}, s.errorf(err, "delete schedule %q", p.Name)
	}
	return sch, nil
}

// scheduleWrite runs a schedule write in one of the store's transactions,
// with the write's clock: the database's, read inside the transaction once
// it holds its turn (or Config.NowFunc's).
func (s *Store) scheduleWrite(ctx context.Context, fn func(tx *sql.Tx, now func() (time.Time, error)) error) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		return fn(tx, func() (time.Time, error) { return s.now(ctx, tx, time.Time{}) })
	})
}

// ScheduleGet returns the schedule name. See store.Schedules.
func (s *Store) ScheduleGet(ctx context.Context, name string) (sch store.Schedule, err error) {
	if err := store.ValidateScheduleName(name); err != nil {
		return store.Schedule{}, err
	}
	if s.closed.Load() {
		return store.Schedule{}, closedError("get schedule")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		sch, err = s.schedules().Get(ctx, s.db, name)
		return err
	})
	if err != nil {
		return store.Schedule{}, s.errorf(err, "get schedule %q", name)
	}
	return sch, nil
}

// ScheduleList returns a page of schedules in name order. See
// store.Schedules.
func (s *Store) ScheduleList(ctx context.Context, p store.ScheduleListParams) (list []store.Schedule, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list schedules")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		list, err = s.schedules().List(ctx, s.db, p)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "list schedules")
	}
	return list, nil
}

// ScheduleChanges returns a page of the change log and its bounds. See
// store.Schedules.
func (s *Store) ScheduleChanges(ctx context.Context, p store.ScheduleChangesParams) (res store.ScheduleChanges, err error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleChanges{}, err
	}
	if s.closed.Load() {
		return store.ScheduleChanges{}, closedError("read the schedules' changes")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		res, err = s.schedules().Changes(ctx, s.db, p)
		return err
	})
	if err != nil {
		return store.ScheduleChanges{}, s.errorf(err, "read the schedules' changes")
	}
	return res, nil
}

// ScheduleAudit returns the change log newest first. See store.Schedules.
func (s *Store) ScheduleAudit(ctx context.Context, p store.ScheduleAuditParams) (changes []store.ScheduleChange, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("read the schedules' audit")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		changes, err = s.schedules().Audit(ctx, s.db, p)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "read the schedules' audit")
	}
	return changes, nil
}

// scheduleRead runs a read of the stored schedules on DB(), once the
// schema is known to be migrated.
func (s *Store) scheduleRead(ctx context.Context, read func() error) error {
	if err := s.checkSchema(ctx, s.db); err != nil {
		return err
	}
	return read()
}
