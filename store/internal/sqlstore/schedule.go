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

// The columns of the stored schedules' tables, in the order the Decoder
// reads them.
const (
	ScheduleColumns = `id, name, spec, time_zone, kind, args, overlap, catch_up_window_ns, lease_ttl_ns, timeout_ns,
	deadline_ns, max_attempts, retry_backoff_ns, disabled, catch_up, max_catch_up, jitter_ns, exclude, version, created_at, created_by, updated_at, updated_by`
	ScheduleChangeColumns = `seq, action, name, schedule_id, version, changed_by, changed_at, settings_before, settings_after`
)

// Schedules runs the calls of store.Schedules on a store's tables, inside
// the store's own transactions (a write) or on its reads' pool: the SQL,
// the order of a write and its checks are the same on MySQL and SQLite;
// the tables' names, the lock and how an instant is written are the
// store's.
//
// A write reads and locks the one row of SeqTable first, and holds
// it until its transaction ends: schedule writes take turns, so a write
// reads what the writes before it committed, and gives its change the
// next sequence number only once the number before it has committed. A
// reader of the change log never sees n + 1 and then n, as it would with
// AUTO_INCREMENT, which InnoDB hands out to concurrent transactions that
// may commit in the other order; and the log has no gaps, since a
// refused or failed write rolls its number back with the rest. Schedule
// writes are an operator's, rare: waiting in turn costs nothing that
// matters.
type Schedules struct {
	// ScheduleTable, ChangeTable and SeqTable are the tables' names: the
	// schedules, the change log, and the row of the last sequence number
	// given out.
	ScheduleTable, ChangeTable, SeqTable string
	// Lock is the clause that locks the row a write reads from SeqTable until
	// its transaction ends: " FOR UPDATE" on MySQL; empty on SQLite, whose
	// immediate transaction holds the file's write lock already.
	Lock string
	// Instant is the value an instant column is written with.
	Instant func(time.Time) any
	// Decoder reads the store's instants.
	Decoder Decoder
}

// Create writes p's schedule at version 1 and its change, in tx, the
// store's write transaction; now reads the clock of the write, called
// once the write holds its turn. A name taken is a *store.ConflictError.
func (st Schedules) Create(ctx context.Context, tx Querier, p store.ScheduleCreateParams, now func() (time.Time, error)) (store.Schedule, error) {
	seq, cur, err := st.begin(ctx, tx, p.Name)
	if err != nil {
		return store.Schedule{}, err
	}
	if cur != nil {
		return store.Schedule{}, &store.ConflictError{Name: p.Name, Current: cur.Version}
	}
	at, err := now()
	if err != nil {
		return store.Schedule{}, err
	}
	set := settingsAsStored(p.Settings)
	res, err := tx.ExecContext(ctx, `INSERT INTO `+st.ScheduleTable+` (name, spec, time_zone, kind, args, overlap, catch_up_window_ns,
		lease_ttl_ns, timeout_ns, deadline_ns, max_attempts, retry_backoff_ns, disabled, catch_up, max_catch_up, jitter_ns, exclude, version,
		created_at, created_by, updated_at, updated_by)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`,
		append(append([]any{p.Name}, settingArgs(set)...), st.Instant(at), p.By, st.Instant(at), p.By)...)
	if err != nil {
		return store.Schedule{}, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return store.Schedule{}, err
	}
	sch := store.Schedule{ID: id, Name: p.Name, ScheduleSettings: set, Version: 1, CreatedAt: at, CreatedBy: p.By, UpdatedAt: at, UpdatedBy: p.By}
	return sch, st.log(ctx, tx, seq+1, store.ScheduleCreated, sch, p.By, at, nil, &set)
}

// Update replaces the settings of the schedule p.Name, in tx, if it is at
// p.Version; see Create. A stale version is a *store.ConflictError, no
// such schedule store.ErrNotFound.
func (st Schedules) Update(ctx context.Context, tx Querier, p store.ScheduleUpdateParams, now func() (time.Time, error)) (store.Schedule, error) {
	seq, cur, err := st.begin(ctx, tx, p.Name)
	switch {
	case err != nil:
		return store.Schedule{}, err
	case cur == nil:
		return store.Schedule{}, store.ErrNotFound
	case cur.Version != p.Version:
		return store.Schedule{}, &store.ConflictError{Name: p.Name, Version: p.Version, Current: cur.Version}
	}
	at, err := now()
	if err != nil {
		return store.Schedule{}, err
	}
	set := settingsAsStored(p.Settings)
	if _, err := tx.ExecContext(ctx, `UPDATE `+st.ScheduleTable+` SET spec = ?, time_zone = ?, kind = ?, args = ?, overlap = ?,
		catch_up_window_ns = ?, lease_ttl_ns = ?, timeout_ns = ?, deadline_ns = ?, max_attempts = ?, retry_backoff_ns = ?, disabled = ?,
		catch_up = ?, max_catch_up = ?, jitter_ns = ?, exclude = ?, version = ?, updated_at = ?, updated_by = ?
		WHERE id = ?`,
		append(settingArgs(set), cur.Version+1, st.Instant(at), p.By, cur.ID)...); err != nil {
		return store.Schedule{}, err
	}
	sch := *cur
	before := sch.ScheduleSettings
	sch.ScheduleSettings, sch.Version, sch.UpdatedAt, sch.UpdatedBy = set, cur.Version+1, at, p.By
	return sch, st.log(ctx, tx, seq+1, store.ScheduleUpdated, sch, p.By, at, &before, &set)
}

// Delete deletes the schedule p.Name, in tx, if it is at p.Version (any
// version when 0), and returns it as it was; see Update.
func (st Schedules) Delete(ctx context.Context, tx Querier, p store.ScheduleDeleteParams, now func() (time.Time, error)) (store.Schedule, error) {
	seq, cur, err := st.begin(ctx, tx, p.Name)
	switch {
	case err != nil:
		return store.Schedule{}, err
	case cur == nil:
		return store.Schedule{}, store.ErrNotFound
	case p.Version != 0 && cur.Version != p.Version:
		return store.Schedule{}, &store.ConflictError{Name: p.Name, Version: p.Version, Current: cur.Version}
	}
	at, err := now()
	if err != nil {
		return store.Schedule{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM `+st.ScheduleTable+` WHERE id = ?`, cur.ID); err != nil {
		return store.Schedule{}, err
	}
	before := cur.ScheduleSettings
	return *cur, st.log(ctx, tx, seq+1, store.ScheduleDeleted, *cur, p.By, at, &before, nil)
}

// begin takes the write's turn (the SeqTable row) and reads the last sequence
// number given out and the schedule name as it is, nil when there is none.
func (st Schedules) begin(ctx context.Context, tx Querier, name string) (seq int64, cur *store.Schedule, err error) {
	if err := tx.QueryRowContext(ctx, `SELECT seq FROM `+st.SeqTable+` WHERE id = 1`+st.Lock).Scan(&seq); err != nil {
		return 0, nil, fmt.Errorf("take the schedules' turn: %w", err)
	}
	sch, err := st.Get(ctx, tx, name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return seq, nil, nil
	case err != nil:
		return 0, nil, err
	}
	return seq, &sch, nil
}

// log writes the change seq of the schedule sch, and seq as the last
// number given out.
func (st Schedules) log(ctx context.Context, tx Querier, seq int64, action store.ScheduleAction, sch store.Schedule, by string, at time.Time,
	before, after *store.ScheduleSettings) error {
	beforeJSON, err := settingsJSON(before)
	if err != nil {
		return err
	}
	afterJSON, err := settingsJSON(after)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+st.ChangeTable+` (`+ScheduleChangeColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		seq, string(action), sch.Name, sch.ID, sch.Version, by, st.Instant(at), beforeJSON, afterJSON); err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `UPDATE `+st.SeqTable+` SET seq = ? WHERE id = 1`, seq)
	return err
}

// Get reads the schedule name on q; sql.ErrNoRows when there is none.
func (st Schedules) Get(ctx context.Context, q Querier, name string) (store.Schedule, error) {
	return st.Decoder.Schedule(q.QueryRowContext(ctx, `SELECT `+ScheduleColumns+` FROM `+st.ScheduleTable+` WHERE name = ?`, name))
}

// List reads a page of schedules in name order (byte order: the names are
// VARBINARY on MySQL, TEXT of the BINARY collation on SQLite).
func (st Schedules) List(ctx context.Context, q Querier, p store.ScheduleListParams) ([]store.Schedule, error) {
	return Query(ctx, q, st.Decoder.Schedule, `SELECT `+ScheduleColumns+` FROM `+st.ScheduleTable+`
		WHERE name > ? ORDER BY name LIMIT ?`, p.After, p.Limit)
}

// Changes reads a page of the change log after p.After, oldest first, then
// the log's bounds: read after the page, the newest is at least the page's
// last. Sequence numbers commit in order (see Schedules), so the page
// holds every change after p.After up to its last.
func (st Schedules) Changes(ctx context.Context, q Querier, p store.ScheduleChangesParams) (store.ScheduleChanges, error) {
	var (
		res store.ScheduleChanges
		err error
	)
	res.Changes, err = Query(ctx, q, st.Decoder.ScheduleChange, `SELECT `+ScheduleChangeColumns+` FROM `+st.ChangeTable+`
		WHERE seq > ? ORDER BY seq LIMIT ?`, p.After, p.Limit)
	if err != nil {
		return store.ScheduleChanges{}, err
	}
	err = q.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0), COALESCE(MIN(seq), 0) FROM `+st.ChangeTable).Scan(&res.Latest, &res.Oldest)
	return res, err
}

// Audit reads the change log newest first, of the schedules named p.Name
// when it is set.
func (st Schedules) Audit(ctx context.Context, q Querier, p store.ScheduleAuditParams) ([]store.ScheduleChange, error) {
	var w where
	if p.Name != "" {
		w.add("name = ?", p.Name)
	}
	if p.Before != 0 {
		w.add("seq < ?", p.Before)
	}
	query, args := w.query(`SELECT `+ScheduleChangeColumns+` FROM `+st.ChangeTable, `seq DESC`, p.Limit)
	return Query(ctx, q, st.Decoder.ScheduleChange, query, args...)
}

// Schedule decodes a schedules row.
func (d Decoder) Schedule(row Row) (store.Schedule, error) {
	var (
		s                                                     store.Schedule
		args, exclude                                         sql.NullString
		catchUp, ttl, timeout, deadline, maxAttempts, backoff int64
		maxCatchUp, jitter                                    int64
	)
	if err := row.Scan(&s.ID, &s.Name, &s.Spec, &s.TimeZone, &s.Kind, &args, &s.Overlap, &catchUp, &ttl, &timeout, &deadline,
		&maxAttempts, &backoff, &s.Disabled, &s.CatchUp, &maxCatchUp, &jitter, &exclude, &s.Version, d.Instant(&s.CreatedAt), &s.CreatedBy, d.Instant(&s.UpdatedAt), &s.UpdatedBy); err != nil {
		return store.Schedule{}, err
	}
	if args.Valid {
		s.Args = json.RawMessage(args.String)
	}
	s.CatchUpWindow, s.LeaseTTL, s.Timeout = time.Duration(catchUp), time.Duration(ttl), time.Duration(timeout)
	s.Deadline, s.MaxAttempts, s.RetryBackoff = time.Duration(deadline), int(maxAttempts), time.Duration(backoff)
	s.MaxCatchUp, s.Jitter = int(maxCatchUp), time.Duration(jitter)
	if exclude.Valid {
		if err := json.Unmarshal([]byte(exclude.String), &s.Exclude); err != nil {
			return store.Schedule{}, fmt.Errorf("schedule %q: exclude: %w", s.Name, err)
		}
	}
	return s, nil
}

// ScheduleChange decodes a schedule_changes row.
func (d Decoder) ScheduleChange(row Row) (store.ScheduleChange, error) {
	var (
		ch            store.ScheduleChange
		action        string
		before, after sql.NullString
	)
	if err := row.Scan(&ch.Seq, &action, &ch.Name, &ch.ScheduleID, &ch.Version, &ch.By, d.Instant(&ch.At), &before, &after); err != nil {
		return store.ScheduleChange{}, err
	}
	ch.Action = store.ScheduleAction(action)
	var err error
	if ch.Before, err = settingsFromJSON(before); err != nil {
		return store.ScheduleChange{}, fmt.Errorf("schedule change %d: before: %w", ch.Seq, err)
	}
	if ch.After, err = settingsFromJSON(after); err != nil {
		return store.ScheduleChange{}, fmt.Errorf("schedule change %d: after: %w", ch.Seq, err)
	}
	return ch, nil
}

// settingsAsStored is set as a read gives it back: no arguments as nil.
func settingsAsStored(set store.ScheduleSettings) store.ScheduleSettings {
	if len(set.Args) == 0 {
		set.Args = nil
	} else {
		set.Args = append(json.RawMessage(nil), set.Args...)
	}
	if len(set.Exclude) == 0 {
		set.Exclude = nil
	}
	return set
}

// settingArgs are the settings columns' values, in ScheduleColumns' order
// from spec to exclude; the arguments and the exclusions NULL when none.
func settingArgs(set store.ScheduleSettings) []any {
	var args sql.NullString
	if len(set.Args) > 0 {
		args = sql.NullString{String: string(set.Args), Valid: true}
	}
	return []any{set.Spec, set.TimeZone, set.Kind, args, set.Overlap, int64(set.CatchUpWindow), int64(set.LeaseTTL), int64(set.Timeout),
		int64(set.Deadline), int64(set.MaxAttempts), int64(set.RetryBackoff), set.Disabled, set.CatchUp, int64(set.MaxCatchUp), int64(set.Jitter),
		ExcludeJSON(set.Exclude)}
}

// ExcludeJSON is a schedule's exclude column: its entries as a JSON
// array, NULL for none.
func ExcludeJSON(entries []string) sql.NullString {
	if len(entries) == 0 {
		return sql.NullString{}
	}
	b, err := json.Marshal(entries)
	if err != nil {
		panic(fmt.Sprintf("sqlstore: encoding exclusions: %v", err)) // strings always encode
	}
	return sql.NullString{String: string(b), Valid: true}
}

// settingsJSON is the change log's column of settings: their JSON, NULL for
// none. The arguments go in as they were given: json.Marshal would compact
// them, and a replica that applies the change would give its handler other
// bytes than one that listed the schedule.
func settingsJSON(set *store.ScheduleSettings) (sql.NullString, error) {
	if set == nil {
		return sql.NullString{}, nil
	}
	rest := *set
	rest.Args = nil
	b, err := json.Marshal(rest)
	if err != nil || len(set.Args) == 0 {
		return sql.NullString{String: string(b), Valid: true}, err
	}
	text := string(b[:len(b)-1]) + `,"args":` + string(set.Args) + `}`
	return sql.NullString{String: text, Valid: true}, nil
}

func settingsFromJSON(text sql.NullString) (*store.ScheduleSettings, error) {
	if !text.Valid {
		return nil, nil
	}
	var set store.ScheduleSettings
	if err := json.Unmarshal([]byte(text.String), &set); err != nil {
		return nil, err
	}
	return &set, nil
}
