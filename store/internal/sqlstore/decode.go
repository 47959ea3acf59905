package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Row is a row to decode: a *sql.Row, or *sql.Rows at a row.
type Row interface{ Scan(dest ...any) error }

// Querier is what *sql.DB, *sql.Conn and *sql.Tx have in common that the
// stores use.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// The columns of the tables both stores have, in the order the Decoder
// reads them.
const (
	LeaseColumns    = `name, owner, generation, acquired_at, renewed_at, expires_at`
	SlotColumns     = `job, slot, status, owner, lease_name, generation, attempts, started_at, finished_at`
	JobStateColumns = `job, enabled_override, override_by, override_at, note, override_until`
	RunColumns      = `id, job, slot, manual, catch_up, owner, generation, lease_name, attempt,
	started_at, finished_at, success, skipped, reason, error, logs`
	AlertColumns = `id, kind, subject, message, details, raised_by, raised_at, last_seen_at, resolved_at,
	fingerprint, acknowledged_by, acknowledged_at, acknowledged_note`

	// ReplicaColumns are a replica row's columns; ReplicaColumnsWithoutJobs
	// the same with an empty list of jobs in place of the stored one, for
	// a heartbeat that kept them (the kinds, few, are read back).
	ReplicaColumns            = replicaColumnsBeforeJobs + `, jobs, kinds`
	ReplicaColumnsWithoutJobs = replicaColumnsBeforeJobs + `, '[]', kinds`
	replicaColumnsBeforeJobs  = `owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers`
)

// Decoder decodes the rows of the tables both stores have, read by the
// column lists above, and their instants as the store keeps them.
type Decoder struct {
	instant func(t *time.Time) any
}

// NewDecoder returns the Decoder of a store whose driver reads an instant
// column as a V (a time.Time from a DATETIME, an int64 of microseconds),
// which at turns into the instant in UTC.
func NewDecoder[V any](at func(V) time.Time) Decoder {
	return Decoder{instant: func(t *time.Time) any { return instantColumn[V]{t, at} }}
}

// Instant returns what Scan fills from an instant column: it sets *t to
// the instant, or to the zero time for NULL.
func (d Decoder) Instant(t *time.Time) any { return d.instant(t) }

type instantColumn[V any] struct {
	t  *time.Time
	at func(V) time.Time
}

func (c instantColumn[V]) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*c.t = time.Time{}
	case V:
		*c.t = c.at(v)
	default:
		var want V
		return fmt.Errorf("an instant column holds %T, want %T", v, want)
	}
	return nil
}

// Lease decodes a lease row.
func (d Decoder) Lease(row Row) (store.Lease, error) { return d.LeaseAnd(row) }

// LeaseAnd decodes a lease row followed by more columns, into extra.
func (d Decoder) LeaseAnd(row Row, extra ...any) (store.Lease, error) {
	var l store.Lease
	dest := append([]any{&l.Name, &l.Owner, &l.Generation, d.Instant(&l.AcquiredAt), d.Instant(&l.RenewedAt), d.Instant(&l.ExpiresAt)}, extra...)
	if err := row.Scan(dest...); err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

// Slot decodes a slot row.
func (d Decoder) Slot(row Row) (store.Slot, error) {
	var (
		sl     store.Slot
		status string
	)
	if err := row.Scan(&sl.Job, d.Instant(&sl.Slot), &status, &sl.Owner, &sl.LeaseName, &sl.Generation, &sl.Attempts,
		d.Instant(&sl.StartedAt), d.Instant(&sl.FinishedAt)); err != nil {
		return store.Slot{}, err
	}
	sl.Status = store.SlotStatus(status)
	return sl, nil
}

// JobState decodes a job's pause override.
func (d Decoder) JobState(row Row) (store.JobState, error) {
	var (
		js       store.JobState
		override sql.NullBool
	)
	if err := row.Scan(&js.Job, &override, &js.OverrideBy, d.Instant(&js.OverrideAt), &js.Note, d.Instant(&js.Until)); err != nil {
		return store.JobState{}, err
	}
	if override.Valid {
		js.EnabledOverride = &override.Bool
	}
	return js, nil
}

// Run decodes a run row.
func (d Decoder) Run(row Row) (store.Run, error) {
	var (
		r    store.Run
		logs string
	)
	if err := row.Scan(&r.ID, &r.Job, d.Instant(&r.Slot), &r.Manual, &r.CatchUp, &r.Owner, &r.Generation, &r.LeaseName, &r.Attempt,
		d.Instant(&r.StartedAt), d.Instant(&r.FinishedAt), &r.Success, &r.Skipped, &r.Reason, &r.Error, &logs); err != nil {
		return store.Run{}, err
	}
	if err := decodeJSON(logs, &r.Logs); err != nil {
		return store.Run{}, fmt.Errorf("run %d: logs: %w", r.ID, err)
	}
	return r, nil
}

// Alert decodes an alert row. Its acknowledgement is zero unless it has
// both who and when.
func (d Decoder) Alert(row Row) (store.Alert, error) {
	var (
		a              store.Alert
		kind, details  string
		ackAt          time.Time
		ackBy, ackNote sql.NullString
	)
	if err := row.Scan(&a.ID, &kind, &a.Subject, &a.Message, &details, &a.RaisedBy, d.Instant(&a.RaisedAt), d.Instant(&a.LastSeenAt),
		d.Instant(&a.ResolvedAt), &a.Fingerprint, &ackBy, d.Instant(&ackAt), &ackNote); err != nil {
		return store.Alert{}, err
	}
	a.Kind = store.AlertKind(kind)
	if ackBy.Valid && !ackAt.IsZero() {
		a.Ack = store.AlertAck{By: ackBy.String, At: ackAt, Note: ackNote.String}
	}
	if err := decodeJSON(details, &a.Details); err != nil {
		return store.Alert{}, fmt.Errorf("alert %d: details: %w", a.ID, err)
	}
	return a, nil
}

// Replica decodes a replica row.
func (d Decoder) Replica(row Row) (store.Replica, error) {
	var (
		r           store.Replica
		offsetNS    int64
		jobs, kinds string
	)
	if err := row.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, d.Instant(&r.StartedAt), d.Instant(&r.HeartbeatAt), &offsetNS, &r.Timers,
		&jobs, &kinds); err != nil {
		return store.Replica{}, err
	}
	r.ClockOffset = time.Duration(offsetNS)
	if err := decodeJSON(jobs, &r.Jobs); err != nil {
		return store.Replica{}, fmt.Errorf("replica %q: jobs: %w", r.Owner, err)
	}
	if err := decodeJSON(kinds, &r.Kinds); err != nil {
		return store.Replica{}, fmt.Errorf("replica %q: kinds: %w", r.Owner, err)
	}
	return r, nil
}

// Query runs query on q and decodes its rows with decode, in order: nil
// when there is none.
func Query[T any](ctx context.Context, q Querier, decode func(Row) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := decode(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
