package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

var _ store.Schedules = (*Store)(nil)

// ScheduleCreate writes a new schedule, its change and a notice of it. See
// store.Schedules and scheduleWrite.
func (s *Store) ScheduleCreate(ctx context.Context, p store.ScheduleCreateParams) (store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if err := s.usable(); err != nil {
		return store.Schedule{}, err
	}
	what := fmt.Sprintf("create schedule %q", p.Name)
	args := append(append([]any{p.Name}, scheduleSettingArgs(p.Settings)...), p.By, s.nowArg(time.Time{}))
	sch, written, found, err := s.scheduleWrite(ctx, s.q.scheduleCreate, args)
	switch {
	case err != nil:
		return store.Schedule{}, s.translate(what, err)
	case !found:
		// Only when the insert met a name the statement's read did not
		// see, which the lock rules out.
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, &store.ConflictError{Name: p.Name})
	case !written:
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, &store.ConflictError{Name: p.Name, Current: sch.Version})
	}
	return sch, nil
}

// ScheduleUpdate replaces a schedule's settings if it is at p.Version. See
// store.Schedules and scheduleWrite.
func (s *Store) ScheduleUpdate(ctx context.Context, p store.ScheduleUpdateParams) (store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if err := s.usable(); err != nil {
		return store.Schedule{}, err
	}
	what := fmt.Sprintf("update schedule %q", p.Name)
	args := append(append([]any{p.Name}, scheduleSettingArgs(p.Settings)...), p.By, s.nowArg(time.Time{}), p.Version)
	sch, written, found, err := s.scheduleWrite(ctx, s.q.scheduleUpdate, args)
	switch {
	case err != nil:
		return store.Schedule{}, s.translate(what, err)
	case !found:
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	case !written:
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, &store.ConflictError{Name: p.Name, Version: p.Version, Current: sch.Version})
	}
	return sch, nil
}

// ScheduleDelete deletes a schedule if it is at p.Version (any, when 0).
// See store.Schedules and scheduleWrite.
func (s *Store) ScheduleDelete(ctx context.Context, p store.ScheduleDeleteParams) (store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return store.Schedule{}, err
	}
	if err := s.usable(); err != nil {
		return store.Schedule{}, err
	}
	what := fmt.Sprintf("delete schedule %q", p.Name)
	sch, written, found, err := s.scheduleWrite(ctx, s.q.scheduleDelete, []any{p.Name, p.Version, p.By, s.nowArg(time.Time{})})
	switch {
	case err != nil:
		return store.Schedule{}, s.translate(what, err)
	case !found:
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	case !written:
		return store.Schedule{}, fmt.Errorf("postgres: %s: %w", what, &store.ConflictError{Name: p.Name, Version: p.Version, Current: sch.Version})
	}
	return sch, nil
}

// scheduleWrite runs a schedule write (scheduleCreate.sql and its
// siblings) behind scheduleLock.sql, in one transaction of three round
// trips: the begin, the two statements pipelined, the commit. A write
// takes turns behind the lock so that its change's sequence number
// commits after every number before it (see migration 012): a sequence
// would let two writers commit n + 1 before n, and a replica that read
// n + 1 would never read n. The transaction is READ COMMITTED, whatever
// the pool's default, so the write's statement, begun once the lock is
// held, reads what the writes before it committed. A refused write (a
// stale version, a name taken) writes nothing and commits.
//
// It returns the row the statement returned: the schedule written
// (written), or the one that refused the write; found is false when the
// statement returned none (no such schedule).
func (s *Store) scheduleWrite(ctx context.Context, sql string, args []any) (sch store.Schedule, written, found bool, err error) {
	err = pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(s.q.scheduleLock)
		b.Queue(sql, args...)
		br := tx.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
		var ss scannedSchedule
		err := br.QueryRow().Scan(append([]any{&written}, ss.dest()...)...)
		if closeErr := br.Close(); err == nil || errors.Is(err, pgx.ErrNoRows) {
			err = errors.Join(noRowsAsNil(err), closeErr)
		}
		if err != nil {
			return err
		}
		sch, found = ss.schedule(), ss.s.ID != 0
		return nil
	})
	return sch, written, found, err
}

func noRowsAsNil(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// ScheduleGet returns the schedule name. See store.Schedules.
func (s *Store) ScheduleGet(ctx context.Context, name string) (store.Schedule, error) {
	if err := store.ValidateScheduleName(name); err != nil {
		return store.Schedule{}, err
	}
	if err := s.usable(); err != nil {
		return store.Schedule{}, err
	}
	var ss scannedSchedule
	if err := s.pool.QueryRow(ctx, s.q.scheduleGet, name).Scan(ss.dest()...); err != nil {
		return store.Schedule{}, s.translate(fmt.Sprintf("get schedule %q", name), err)
	}
	return ss.schedule(), nil
}

// ScheduleList returns a page of schedules in name order. See
// store.Schedules.
func (s *Store) ScheduleList(ctx context.Context, p store.ScheduleListParams) ([]store.Schedule, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.scheduleList, p.After, p.Limit)
	if err != nil {
		return nil, s.translate("list schedules", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Schedule, error) {
		var ss scannedSchedule
		err := row.Scan(ss.dest()...)
		return ss.schedule(), err
	})
	if err != nil {
		return nil, s.translate("list schedules", err)
	}
	return list, nil
}

// ScheduleChanges returns a page of the change log and its bounds, in one
// statement (sql/scheduleChanges.sql). See store.Schedules.
func (s *Store) ScheduleChanges(ctx context.Context, p store.ScheduleChangesParams) (store.ScheduleChanges, error) {
	if err := p.Validate(); err != nil {
		return store.ScheduleChanges{}, err
	}
	if err := s.usable(); err != nil {
		return store.ScheduleChanges{}, err
	}
	var (
		res  store.ScheduleChanges
		page string
	)
	if err := s.pool.QueryRow(ctx, s.q.scheduleChanges, p.After, p.Limit).Scan(&res.Latest, &res.Oldest, &page); err != nil {
		return store.ScheduleChanges{}, s.translate("read the schedules' changes", err)
	}
	err := eachJSONRow(page, func(row jsonRow) error {
		ch, err := scanScheduleChange(row)
		res.Changes = append(res.Changes, ch)
		return err
	})
	if err != nil {
		return store.ScheduleChanges{}, fmt.Errorf("postgres: read the schedules' changes: %w", err)
	}
	return res, nil
}

// ScheduleAudit returns the change log newest first. See store.Schedules.
func (s *Store) ScheduleAudit(ctx context.Context, p store.ScheduleAuditParams) ([]store.ScheduleChange, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	before := p.Before
	if before == 0 {
		before = math.MaxInt64
	}
	var (
		rows pgx.Rows
		err  error
	)
	if p.Name == "" {
		rows, err = s.pool.Query(ctx, s.q.scheduleAudit, before, p.Limit)
	} else {
		rows, err = s.pool.Query(ctx, s.q.scheduleAuditName, p.Name, before, p.Limit)
	}
	if err != nil {
		return nil, s.translate("read the schedules' audit", err)
	}
	changes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.ScheduleChange, error) { return scanScheduleChange(row) })
	if err != nil {
		return nil, s.translate("read the schedules' audit", err)
	}
	return changes, nil
}

// scheduleSettingArgs are the parameters $2 to $17 of scheduleCreate.sql
// and scheduleUpdate.sql: the settings in the columns' order, durations in
// nanoseconds (pgx would send a time.Duration as an interval), the
// arguments and the exclusions as JSON text or NULL.
func scheduleSettingArgs(set store.ScheduleSettings) []any {
	var args any
	if len(set.Args) > 0 {
		args = string(set.Args)
	}
	return []any{set.Spec, set.TimeZone, set.Kind, args, set.Overlap, int64(set.CatchUpWindow), int64(set.LeaseTTL),
		int64(set.Timeout), int64(set.Deadline), int64(set.MaxAttempts), int64(set.RetryBackoff), set.Disabled,
		set.CatchUp, int32(set.MaxCatchUp), int64(set.Jitter), excludeArg(set.Exclude)}
}

// excludeArg is the exclude column's value: a JSON array, NULL for none.
func excludeArg(entries []string) any {
	if len(entries) == 0 {
		return nil
	}
	b, err := json.Marshal(entries)
	if err != nil {
		panic(fmt.Sprintf("postgres: encoding exclusions: %v", err)) // strings always encode
	}
	return string(b)
}

// scannedSchedule receives the scheduleColumns of one row.
type scannedSchedule struct {
	s                                        store.Schedule
	args                                     *string
	catchUp, ttl, timeout, deadline, backoff int64
	maxAttempts                              int64
	maxCatchUp                               int32
	jitter                                   int64
}

func (ss *scannedSchedule) dest() []any {
	s := &ss.s
	return []any{&s.ID, &s.Name, &s.Spec, &s.TimeZone, &s.Kind, &ss.args, &s.Overlap, &ss.catchUp, &ss.ttl, &ss.timeout,
		&ss.deadline, &ss.maxAttempts, &ss.backoff, &s.Disabled, &s.CatchUp, &ss.maxCatchUp, &ss.jitter, &s.Exclude, &s.Version, &s.CreatedAt, &s.CreatedBy, &s.UpdatedAt, &s.UpdatedBy}
}

func (ss *scannedSchedule) schedule() store.Schedule {
	s := ss.s
	if ss.args != nil {
		s.Args = json.RawMessage(*ss.args)
	}
	s.CatchUpWindow, s.LeaseTTL, s.Timeout = time.Duration(ss.catchUp), time.Duration(ss.ttl), time.Duration(ss.timeout)
	s.Deadline, s.RetryBackoff, s.MaxAttempts = time.Duration(ss.deadline), time.Duration(ss.backoff), int(ss.maxAttempts)
	s.MaxCatchUp, s.Jitter = int(ss.maxCatchUp), time.Duration(ss.jitter)
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s
}

// scanScheduleChange scans the scheduleChangeColumns of one row, or of a
// row of scheduleChanges.sql's page (a jsonRow).
func scanScheduleChange(row pgx.Row) (store.ScheduleChange, error) {
	var (
		ch            store.ScheduleChange
		action        string
		before, after *string
	)
	if err := row.Scan(&ch.Seq, &action, &ch.Name, &ch.ScheduleID, &ch.Version, &ch.By, &ch.At, &before, &after); err != nil {
		return store.ScheduleChange{}, err
	}
	ch.Action, ch.At = store.ScheduleAction(action), ch.At.UTC()
	var err error
	if ch.Before, err = settingsFromJSON(before); err != nil {
		return store.ScheduleChange{}, fmt.Errorf("schedule change %d: before: %w", ch.Seq, err)
	}
	if ch.After, err = settingsFromJSON(after); err != nil {
		return store.ScheduleChange{}, fmt.Errorf("schedule change %d: after: %w", ch.Seq, err)
	}
	return ch, nil
}

// settingsFromJSON reads settings as sql/fragments/scheduleSettings.sql
// wrote them; nil for NULL.
func settingsFromJSON(text *string) (*store.ScheduleSettings, error) {
	if text == nil {
		return nil, nil
	}
	var set store.ScheduleSettings
	if err := json.Unmarshal([]byte(*text), &set); err != nil {
		return nil, err
	}
	return &set, nil
}
