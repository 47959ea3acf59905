package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// BackfillColumns are the columns of the backfills table, in the order the
// Decoder reads them.
const BackfillColumns = `id, job, range_from, range_to, include_failed, rate, total, state, cursor_slot, counts, driver,
	created_by, created_at, updated_at, finished_at, cancelled_by`

// Backfills runs the calls of store.Backfills (and SlotList) on a store's
// tables, inside the store's own transactions (a write) or on its reads'
// pool: the SQL and the checks of a write are the same on MySQL and
// SQLite; the tables' names, the lock and how an instant is written are
// the store's.
//
// One running backfill a job is the database's to keep: a unique index
// on the running backfills' jobs (partial on SQLite; on MySQL, of a
// column that is the job while the backfill runs and NULL after). Create
// reads the running one first and refuses; a create that passed that
// read at the same time as another meets its row at the insert
// (Duplicate), reads it, and refuses the same way. Progress and Cancel
// read the row locked (Lock) and decide before they write, so two of them
// on one backfill take turns.
type Backfills struct {
	// Table and SlotTable are the tables' names: the backfills, and the
	// slots SlotList reads.
	Table, SlotTable string
	// Lock is the clause that locks the row a write reads until its
	// transaction ends: " FOR UPDATE" on MySQL; empty on SQLite, whose
	// immediate transaction holds the file's write lock already.
	Lock string
	// Instant is the value an instant column is written with.
	Instant func(time.Time) any
	// Duplicate reports an insert refused by the running backfills' unique
	// index.
	Duplicate func(error) bool
	// Decoder reads the store's instants.
	Decoder Decoder
}

// createTries bounds how often Create reads and inserts again when its
// insert met a running backfill that ended before it could read it.
const createTries = 5

// Create writes p's backfill, running, in tx, the store's write
// transaction; now reads the clock of the write. A running backfill of
// the job is a *store.ConflictError naming it.
func (st Backfills) Create(ctx context.Context, tx Querier, p store.BackfillCreateParams, now func() (time.Time, error)) (store.Backfill, error) {
	for try := 1; ; try++ {
		var running int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM `+st.Table+` WHERE job = ? AND state = 'running'`, p.Job).Scan(&running)
		switch {
		case err == nil:
			return store.Backfill{}, &store.ConflictError{Name: p.Job, Current: running, Kind: store.ConflictBackfill}
		case !errors.Is(err, sql.ErrNoRows):
			return store.Backfill{}, err
		}
		at, err := now()
		if err != nil {
			return store.Backfill{}, err
		}
		counts, err := countsJSON(store.BackfillCounts{})
		if err != nil {
			return store.Backfill{}, err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO `+st.Table+` (job, range_from, range_to, include_failed, rate, total, state,
			cursor_slot, counts, driver, created_by, created_at, updated_at, finished_at, cancelled_by)
			VALUES (?, ?, ?, ?, ?, ?, 'running', NULL, ?, '', ?, ?, ?, NULL, '')`,
			p.Job, st.Instant(Normalize(p.From)), st.Instant(Normalize(p.To)), p.IncludeFailed, p.Rate, p.Total, counts, p.By,
			st.Instant(at), st.Instant(at))
		if err != nil {
			if st.Duplicate(err) && try < createTries {
				continue // another create won at the same time: read it
			}
			return store.Backfill{}, err
		}
		id, err := res.LastInsertId()
		if err != nil {
			return store.Backfill{}, err
		}
		return st.Get(ctx, tx, id)
	}
}

// Get reads the backfill id on q; sql.ErrNoRows when there is none.
func (st Backfills) Get(ctx context.Context, q Querier, id int64) (store.Backfill, error) {
	return st.get(ctx, q, id, "")
}

func (st Backfills) get(ctx context.Context, q Querier, id int64, lock string) (store.Backfill, error) {
	return st.Decoder.Backfill(q.QueryRowContext(ctx, `SELECT `+BackfillColumns+` FROM `+st.Table+` WHERE id = ?`+lock, id))
}

// List reads a page of backfills, newest first.
func (st Backfills) List(ctx context.Context, q Querier, p store.BackfillListParams) ([]store.Backfill, error) {
	var w where
	if p.Job != "" {
		w.add("job = ?", p.Job)
	}
	if p.Running {
		w.add("state = 'running'")
	}
	if p.Before != 0 {
		w.add("id < ?", p.Before)
	}
	query, args := w.query(`SELECT `+BackfillColumns+` FROM `+st.Table, `id DESC`, p.EffectiveLimit())
	return Query(ctx, q, st.Decoder.Backfill, query, args...)
}

// Progress records p on a running backfill whose cursor is not after
// p.Cursor, in tx, and returns the backfill as it is after, with whether
// it wrote. No such backfill is sql.ErrNoRows.
func (st Backfills) Progress(ctx context.Context, tx Querier, p store.BackfillProgressParams, now func() (time.Time, error)) (store.Backfill, bool, error) {
	cur, err := st.get(ctx, tx, p.ID, st.Lock)
	if err != nil {
		return store.Backfill{}, false, err
	}
	cursor := Normalize(p.Cursor)
	if cur.State != store.BackfillRunning || !cur.Cursor.IsZero() && cursor.Before(cur.Cursor) {
		return cur, false, nil
	}
	at, err := now()
	if err != nil {
		return store.Backfill{}, false, err
	}
	counts, err := countsJSON(p.Counts)
	if err != nil {
		return store.Backfill{}, false, err
	}
	state, finished := store.BackfillRunning, any(nil)
	if p.Done {
		state, finished = store.BackfillDone, st.Instant(at)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+st.Table+` SET cursor_slot = ?, counts = ?, driver = ?, updated_at = ?, state = ?, finished_at = ?
		WHERE id = ?`, st.nullInstant(cursor), counts, p.Driver, st.Instant(at), string(state), finished, p.ID); err != nil {
		return store.Backfill{}, false, err
	}
	b, err := st.Get(ctx, tx, p.ID)
	return b, err == nil, err
}

// Cancel ends the running backfill id, in tx, and returns it with true;
// one that ended already is returned as it is, with false. No such
// backfill is sql.ErrNoRows.
func (st Backfills) Cancel(ctx context.Context, tx Querier, id int64, by string, now func() (time.Time, error)) (store.Backfill, bool, error) {
	cur, err := st.get(ctx, tx, id, st.Lock)
	if err != nil || cur.State != store.BackfillRunning {
		return cur, false, err
	}
	at, err := now()
	if err != nil {
		return store.Backfill{}, false, err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE `+st.Table+` SET state = 'cancelled', finished_at = ?, updated_at = ?, cancelled_by = ?
		WHERE id = ?`, st.Instant(at), st.Instant(at), by, id); err != nil {
		return store.Backfill{}, false, err
	}
	b, err := st.Get(ctx, tx, id)
	return b, err == nil, err
}

// SlotList reads the slot rows of p.Job in [p.From, p.To), oldest first.
func (st Backfills) SlotList(ctx context.Context, q Querier, p store.SlotListParams) ([]store.Slot, error) {
	return Query(ctx, q, st.Decoder.Slot, `SELECT `+SlotColumns+` FROM `+st.SlotTable+`
		WHERE job = ? AND slot >= ? AND slot < ? ORDER BY slot LIMIT ?`,
		p.Job, st.Instant(Normalize(p.From)), st.Instant(Normalize(p.To)), p.EffectiveLimit())
}

// nullInstant is Instant, or NULL for the zero time.
func (st Backfills) nullInstant(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return st.Instant(t)
}

// Backfill decodes a backfills row.
func (d Decoder) Backfill(row Row) (store.Backfill, error) {
	var (
		b             store.Backfill
		state, counts string
	)
	if err := row.Scan(&b.ID, &b.Job, d.Instant(&b.From), d.Instant(&b.To), &b.IncludeFailed, &b.Rate, &b.Total, &state,
		d.Instant(&b.Cursor), &counts, &b.Driver, &b.CreatedBy, d.Instant(&b.CreatedAt), d.Instant(&b.UpdatedAt),
		d.Instant(&b.FinishedAt), &b.CancelledBy); err != nil {
		return store.Backfill{}, err
	}
	b.State = store.BackfillState(state)
	if err := json.Unmarshal([]byte(counts), &b.Counts); err != nil {
		return store.Backfill{}, fmt.Errorf("backfill %d: counts: %w", b.ID, err)
	}
	return b, nil
}

// countsJSON is the counts column: the counts as a JSON object.
func countsJSON(c store.BackfillCounts) (string, error) {
	b, err := json.Marshal(c)
	return string(b), err
}
