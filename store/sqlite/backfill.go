package sqlite

import (
	"context"
	"database/sql"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

var _ store.Backfills = (*Store)(nil)

// backfills runs the backfills' statements on this store's tables. A write
// runs in an immediate transaction, which holds the file's write lock: it
// reads, decides and writes alone; the partial unique index on the running
// backfills' jobs (migration 010) keeps one running a job whatever writes
// the file. See sqlstore.Backfills.
var backfills = sqlstore.Backfills{
	Table: "cronfence_backfills", SlotTable: "cronfence_slots",
	Instant:   func(t time.Time) any { return micros(t) },
	Duplicate: func(err error) bool { return sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE },
	Decoder:   decode,
}

// BackfillCreate writes a new backfill, running, unless one of the job
// runs. See store.Backfills.
func (s *Store) BackfillCreate(ctx context.Context, p store.BackfillCreateParams) (b store.Backfill, err error) {
	if err := p.Validate(); err != nil {
		return store.Backfill{}, err
	}
	if s.closed.Load() {
		return store.Backfill{}, closedError("create a backfill")
	}
	err = s.backfillWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		b, err = backfills.Create(ctx, tx, p, now)
		return err
	})
	if err != nil {
		return store.Backfill{}, s.errorf(err, "create a backfill of job %q", p.Job)
	}
	return b, nil
}

// BackfillGet returns the backfill id. See store.Backfills.
func (s *Store) BackfillGet(ctx context.Context, id int64) (b store.Backfill, err error) {
	if err := store.ValidateBackfillID(id); err != nil {
		return store.Backfill{}, err
	}
	if s.closed.Load() {
		return store.Backfill{}, closedError("get backfill")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		b, err = backfills.Get(ctx, s.db, id)
		return err
	})
	if err != nil {
		return store.Backfill{}, s.errorf(err, "get backfill %d", id)
	}
	return b, nil
}

// BackfillList returns a page of backfills, newest first. See
// store.Backfills.
func (s *Store) BackfillList(ctx context.Context, p store.BackfillListParams) (list []store.Backfill, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list backfills")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		list, err = backfills.List(ctx, s.db, p)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "list backfills")
	}
	return list, nil
}

// BackfillProgress records a running backfill's progress. See
// store.Backfills.
func (s *Store) BackfillProgress(ctx context.Context, p store.BackfillProgressParams) (b store.Backfill, written bool, err error) {
	if err := p.Validate(); err != nil {
		return store.Backfill{}, false, err
	}
	if s.closed.Load() {
		return store.Backfill{}, false, closedError("record a backfill's progress")
	}
	err = s.backfillWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		b, written, err = backfills.Progress(ctx, tx, p, now)
		return err
	})
	if err != nil {
		return store.Backfill{}, false, s.errorf(err, "record the progress of backfill %d", p.ID)
	}
	return b, written, nil
}

// BackfillCancel ends a running backfill, cancelled. See store.Backfills.
func (s *Store) BackfillCancel(ctx context.Context, id int64, by string) (b store.Backfill, cancelled bool, err error) {
	if err := store.ValidateBackfillCancel(id, by); err != nil {
		return store.Backfill{}, false, err
	}
	if s.closed.Load() {
		return store.Backfill{}, false, closedError("cancel a backfill")
	}
	err = s.backfillWrite(ctx, func(tx *sql.Tx, now func() (time.Time, error)) (err error) {
		b, cancelled, err = backfills.Cancel(ctx, tx, id, by, now)
		return err
	})
	if err != nil {
		return store.Backfill{}, false, s.errorf(err, "cancel backfill %d", id)
	}
	return b, cancelled, nil
}

// SlotList returns a page of a job's slot rows in a range, oldest first.
// See store.Backfills.
func (s *Store) SlotList(ctx context.Context, p store.SlotListParams) (slots []store.Slot, err error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list slots")
	}
	err = s.scheduleRead(ctx, func() (err error) {
		slots, err = backfills.SlotList(ctx, s.db, p)
		return err
	})
	if err != nil {
		return nil, s.errorf(err, "list the slots of job %q", p.Job)
	}
	return slots, nil
}

// backfillWrite runs a backfill write in one of the store's immediate
// transactions, with the write's clock (see scheduleWrite).
func (s *Store) backfillWrite(ctx context.Context, fn func(tx *sql.Tx, now func() (time.Time, error)) error) error {
	return s.scheduleWrite(ctx, fn)
}
