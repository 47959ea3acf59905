package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cronfence/cronfence/store"
)

var _ store.Backfills = (*Store)(nil)

// createTries bounds how often BackfillCreate inserts again: after its
// insert met a running backfill that ended before it could read it, or
// was refused a serialization failure (on a pool whose transactions are
// REPEATABLE READ or SERIALIZABLE, an insert that meets a row its snapshot
// does not show is).
const createTries = 5

// BackfillCreate writes a new backfill, running, unless one of the job
// runs, in one round trip (two when one does). The partial unique index on
// the running backfills' jobs decides between creates at once (see
// sql/backfillCreate.sql). See store.Backfills.
func (s *Store) BackfillCreate(ctx context.Context, p store.BackfillCreateParams) (store.Backfill, error) {
	if err := p.Validate(); err != nil {
		return store.Backfill{}, err
	}
	if err := s.usable(); err != nil {
		return store.Backfill{}, err
	}
	what := fmt.Sprintf("create a backfill of job %q", p.Job)
	counts, err := json.Marshal(store.BackfillCounts{})
	if err != nil {
		return store.Backfill{}, fmt.Errorf("postgres: %s: %w", what, err)
	}
	for try := 1; ; try++ {
		b, err := scanBackfill(s.pool.QueryRow(ctx, s.q.backfillCreate, p.Job, slotTime(p.From), slotTime(p.To), p.IncludeFailed,
			p.Rate, p.Total, string(counts), p.By, s.nowArg(time.Time{})))
		switch {
		case err == nil:
			return b, nil
		case isSerializationFailure(err) && try < createTries:
			continue
		case !errors.Is(err, pgx.ErrNoRows):
			return store.Backfill{}, s.translate(what, err)
		}
		var running int64
		err = s.pool.QueryRow(ctx, s.q.backfillRunning, p.Job).Scan(&running)
		switch {
		case err == nil:
			return store.Backfill{}, fmt.Errorf("postgres: %s: %w", what, &store.ConflictError{Name: p.Job, Current: running, Kind: store.ConflictBackfill})
		case errors.Is(err, pgx.ErrNoRows) && try < createTries:
			continue // it ended meanwhile: insert again
		case errors.Is(err, pgx.ErrNoRows):
			return store.Backfill{}, fmt.Errorf("postgres: %s: the job's running backfill ended each time it was read, %d times", what, try)
		}
		return store.Backfill{}, s.translate(what, err)
	}
}

func isSerializationFailure(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "40001"
}

// BackfillGet returns the backfill id. See store.Backfills.
func (s *Store) BackfillGet(ctx context.Context, id int64) (store.Backfill, error) {
	if err := store.ValidateBackfillID(id); err != nil {
		return store.Backfill{}, err
	}
	if err := s.usable(); err != nil {
		return store.Backfill{}, err
	}
	return s.backfillGet(ctx, id)
}

func (s *Store) backfillGet(ctx context.Context, id int64) (store.Backfill, error) {
	b, err := scanBackfill(s.pool.QueryRow(ctx, s.q.backfillGet, id))
	if err != nil {
		return store.Backfill{}, s.translate(fmt.Sprintf("get backfill %d", id), err)
	}
	return b, nil
}

// BackfillList returns a page of backfills, newest first. See
// store.Backfills.
func (s *Store) BackfillList(ctx context.Context, p store.BackfillListParams) ([]store.Backfill, error) {
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
	if p.Job == "" {
		rows, err = s.pool.Query(ctx, s.q.backfillList, p.Running, before, p.EffectiveLimit())
	} else {
		rows, err = s.pool.Query(ctx, s.q.backfillListJob, p.Job, p.Running, before, p.EffectiveLimit())
	}
	if err != nil {
		return nil, s.translate("list backfills", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Backfill, error) { return scanBackfill(row) })
	if err != nil {
		return nil, s.translate("list backfills", err)
	}
	return list, nil
}

// BackfillProgress records a running backfill's progress in one round
// trip (two when it writes nothing: the second reads the backfill). See
// store.Backfills and sql/backfillProgress.sql.
func (s *Store) BackfillProgress(ctx context.Context, p store.BackfillProgressParams) (store.Backfill, bool, error) {
	if err := p.Validate(); err != nil {
		return store.Backfill{}, false, err
	}
	if err := s.usable(); err != nil {
		return store.Backfill{}, false, err
	}
	what := fmt.Sprintf("record the progress of backfill %d", p.ID)
	counts, err := json.Marshal(p.Counts)
	if err != nil {
		return store.Backfill{}, false, fmt.Errorf("postgres: %s: %w", what, err)
	}
	var cursor any
	if !p.Cursor.IsZero() {
		cursor = slotTime(p.Cursor)
	}
	b, err := scanBackfill(s.pool.QueryRow(ctx, s.q.backfillProgress, p.ID, cursor, string(counts), p.Driver, p.Done, s.nowArg(time.Time{})))
	switch {
	case err == nil:
		return b, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return store.Backfill{}, false, s.translate(what, err)
	}
	b, err = s.backfillGet(ctx, p.ID)
	return b, false, err
}

// BackfillCancel ends a running backfill, cancelled, in one round trip
// (two when it had ended). See store.Backfills.
func (s *Store) BackfillCancel(ctx context.Context, id int64, by string) (store.Backfill, bool, error) {
	if err := store.ValidateBackfillCancel(id, by); err != nil {
		return store.Backfill{}, false, err
	}
	if err := s.usable(); err != nil {
		return store.Backfill{}, false, err
	}
	b, err := scanBackfill(s.pool.QueryRow(ctx, s.q.backfillCancel, id, by, s.nowArg(time.Time{})))
	switch {
	case err == nil:
		return b, true, nil
	case !errors.Is(err, pgx.ErrNoRows):
		return store.Backfill{}, false, s.translate(fmt.Sprintf("cancel backfill %d", id), err)
	}
	b, err = s.backfillGet(ctx, id)
	return b, false, err
}

// SlotList returns a page of a job's slot rows in a range, oldest first.
// See store.Backfills.
func (s *Store) SlotList(ctx context.Context, p store.SlotListParams) ([]store.Slot, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	what := fmt.Sprintf("list the slots of job %q", p.Job)
	rows, err := s.pool.Query(ctx, s.q.slotList, p.Job, slotTime(p.From), slotTime(p.To), p.EffectiveLimit())
	if err != nil {
		return nil, s.translate(what, err)
	}
	slots, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Slot, error) { return scanSlot(row) })
	if err != nil {
		return nil, s.translate(what, err)
	}
	return slots, nil
}

// scanBackfill scans the backfillColumns of one row.
func scanBackfill(row pgx.Row) (store.Backfill, error) {
	var (
		b                store.Backfill
		state, counts    string
		cursor, finished *time.Time
	)
	if err := row.Scan(&b.ID, &b.Job, &b.From, &b.To, &b.IncludeFailed, &b.Rate, &b.Total, &state, &cursor, &counts, &b.Driver,
		&b.CreatedBy, &b.CreatedAt, &b.UpdatedAt, &finished, &b.CancelledBy); err != nil {
		return store.Backfill{}, err
	}
	b.State = store.BackfillState(state)
	if err := json.Unmarshal([]byte(counts), &b.Counts); err != nil {
		return store.Backfill{}, fmt.Errorf("backfill %d: counts: %w", b.ID, err)
	}
	b.From, b.To, b.CreatedAt, b.UpdatedAt = b.From.UTC(), b.To.UTC(), b.CreatedAt.UTC(), b.UpdatedAt.UTC()
	if cursor != nil {
		b.Cursor = cursor.UTC()
	}
	if finished != nil {
		b.FinishedAt = finished.UTC()
	}
	return b, nil
}
