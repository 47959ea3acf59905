package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

var _ store.Monitor = (*Store)(nil)

// ReplicaHeartbeat records this replica, keeping started_at from its first
// heartbeat; see store.Monitor.
func (s *Store) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	if err := r.Validate(); err != nil {
		return store.Replica{}, err
	}
	if s.closed.Load() {
		return store.Replica{}, closedError("replica heartbeat")
	}
	jobs, err := sqlstore.JobsJSON(r.Jobs)
	if err != nil {
		return store.Replica{}, fmt.Errorf("sqlite: heartbeat of replica %q: %w", r.Owner, err)
	}
	kinds, err := sqlstore.KindsJSON(r.Kinds)
	if err != nil {
		return store.Replica{}, fmt.Errorf("sqlite: heartbeat of replica %q: %w", r.Owner, err)
	}
	now := micros(s.now(time.Time{}))
	var stored store.Replica
	if r.JobsUnchanged {
		// An update only, the stored jobs and kinds kept and the jobs not
		// read back: with no row of the owner it writes nothing
		// (ErrNotFound).
		err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
			stored, err = decode.Replica(tx.QueryRowContext(ctx, `
				UPDATE cronfence_replicas SET
					host = ?2, pid = ?3, version = ?4, heartbeat_at = ?5, clock_offset_ns = ?6, timers = ?7
				 WHERE owner = ?1
				RETURNING `+sqlstore.ReplicaColumnsWithoutJobs,
				r.Owner, r.Host, r.PID, r.Version, now, int64(r.ClockOffset), r.Timers,
			))
			return err
		})
		if err != nil {
			return store.Replica{}, s.errorf(err, "heartbeat of replica %q", r.Owner)
		}
		stored.JobsUnchanged = true
		return stored, nil
	}
	err = s.inTx(ctx, func(tx *sql.Tx) (err error) {
		stored, err = decode.Replica(tx.QueryRowContext(ctx, `
			INSERT INTO cronfence_replicas (`+sqlstore.ReplicaColumns+`)
			VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?6, ?7, ?8, ?9)
			ON CONFLICT (owner) DO UPDATE SET
				host            = excluded.host,
				pid             = excluded.pid,
				version         = excluded.version,
				heartbeat_at    = excluded.heartbeat_at,
				clock_offset_ns = excluded.clock_offset_ns,
				timers          = excluded.timers,
				jobs            = excluded.jobs,
				kinds           = excluded.kinds
			RETURNING `+sqlstore.ReplicaColumns,
			r.Owner, r.Host, r.PID, r.Version, now, int64(r.ClockOffset), r.Timers, jobs, kinds,
		))
		return err
	})
	if err != nil {
		return store.Replica{}, s.errorf(err, "heartbeat of replica %q", r.Owner)
	}
	return stored, nil
}

// ReplicaList returns every recorded replica, by owner; see store.Monitor.
func (s *Store) ReplicaList(ctx context.Context) ([]store.Replica, error) {
	if s.closed.Load() {
		return nil, closedError("list replicas")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list replicas")
	}
	replicas, err := sqlstore.Query(ctx, s.db, decode.Replica, `SELECT `+sqlstore.ReplicaColumns+` FROM cronfence_replicas ORDER BY owner`)
	if err != nil {
		return nil, s.errorf(err, "list replicas")
	}
	return replicas, nil
}

// ReplicaRemove deletes the replica's row; see store.Monitor.
func (s *Store) ReplicaRemove(ctx context.Context, owner string) error {
	if err := store.ValidateName("replica owner", owner); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("remove replica")
	}
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM cronfence_replicas WHERE owner = ?`, owner)
		return err
	})
	if err != nil {
		return s.errorf(err, "remove replica %q", owner)
	}
	return nil
}

// AlertRaise opens or refreshes the alert of (p.Kind, p.Subject), ending
// its acknowledgement when p.Fingerprint changes it; see store.Monitor. The
// immediate transaction holds the file's write lock, so the probe for an
// open alert and the upsert are one step against every other writer: the
// probe says whether the upsert inserts, and which acknowledgement it ends.
func (s *Store) AlertRaise(ctx context.Context, p store.AlertRaiseParams) (res store.AlertRaiseResult, err error) {
	if err := p.Validate(); err != nil {
		return store.AlertRaiseResult{}, err
	}
	if s.closed.Load() {
		return store.AlertRaiseResult{}, closedError("raise alert")
	}
	details, err := sqlstore.DetailsJSON(p.Details)
	if err != nil {
		return store.AlertRaiseResult{}, fmt.Errorf("sqlite: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	now := micros(s.now(time.Time{}))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res = store.AlertRaiseResult{}
		open, err := decode.Alert(tx.QueryRowContext(ctx,
			`SELECT `+sqlstore.AlertColumns+` FROM cronfence_alerts WHERE kind = ? AND subject = ? AND resolved_at IS NULL`,
			string(p.Kind), p.Subject))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			res.Raised = true
		case err != nil:
			return err
		case !open.Ack.IsZero() && open.Fingerprint != p.Fingerprint:
			res.EndedAck = open.Ack
		}
		res.Alert, err = decode.Alert(tx.QueryRowContext(ctx, `
			INSERT INTO cronfence_alerts (kind, subject, message, details, raised_by, raised_at, last_seen_at, fingerprint)
			VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)
			ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE SET
				message           = excluded.message,
				details           = excluded.details,
				last_seen_at      = excluded.last_seen_at,
				fingerprint       = excluded.fingerprint,
				acknowledged_by   = CASE WHEN fingerprint = excluded.fingerprint THEN acknowledged_by END,
				acknowledged_at   = CASE WHEN fingerprint = excluded.fingerprint THEN acknowledged_at END,
				acknowledged_note = CASE WHEN fingerprint = excluded.fingerprint THEN acknowledged_note ELSE '' END
			RETURNING `+sqlstore.AlertColumns,
			string(p.Kind), p.Subject, p.Message, details, p.RaisedBy, now, p.Fingerprint,
		))
		return err
	})
	if err != nil {
		return store.AlertRaiseResult{}, s.errorf(err, "raise alert %s %q", p.Kind, p.Subject)
	}
	return res, nil
}

// AlertAcknowledge records an acknowledgement of the open alert of
// (p.Kind, p.Subject); see store.Monitor.
func (s *Store) AlertAcknowledge(ctx context.Context, p store.AlertAcknowledgeParams) (alert store.Alert, err error) {
	if err := p.Validate(); err != nil {
		return store.Alert{}, err
	}
	if s.closed.Load() {
		return store.Alert{}, closedError("acknowledge alert")
	}
	now := micros(s.now(time.Time{}))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		alert, err = decode.Alert(tx.QueryRowContext(ctx, `
			UPDATE cronfence_alerts SET acknowledged_by = ?, acknowledged_at = ?, acknowledged_note = ?
			WHERE kind = ? AND subject = ? AND resolved_at IS NULL AND (? = 0 OR id = ?)
			RETURNING `+sqlstore.AlertColumns,
			p.By, now, p.Note, string(p.Kind), p.Subject, p.ID, p.ID,
		))
		return err // none open: sql.ErrNoRows, ErrNotFound to the caller
	})
	if err != nil {
		return store.Alert{}, s.errorf(err, "acknowledge alert %s %q", p.Kind, p.Subject)
	}
	return alert, nil
}

// AlertResolve closes the open alert of (kind, subject); see store.Monitor.
func (s *Store) AlertResolve(ctx context.Context, kind store.AlertKind, subject string) (alert store.Alert, resolved bool, err error) {
	if err := store.ValidateAlertRef(kind, subject); err != nil {
		return store.Alert{}, false, err
	}
	if s.closed.Load() {
		return store.Alert{}, false, closedError("resolve alert")
	}
	now := micros(s.now(time.Time{}))
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		alert, err = decode.Alert(tx.QueryRowContext(ctx, `
			UPDATE cronfence_alerts SET resolved_at = ?
			WHERE kind = ? AND subject = ? AND resolved_at IS NULL
			RETURNING `+sqlstore.AlertColumns,
			now, string(kind), subject,
		))
		if errors.Is(err, sql.ErrNoRows) {
			return nil // none open: nothing to resolve
		}
		resolved = err == nil
		return err
	})
	if err != nil {
		return store.Alert{}, false, s.errorf(err, "resolve alert %s %q", kind, subject)
	}
	return alert, resolved, nil
}

// AlertList returns alerts newest (highest id) first; see store.Monitor.
// Like RunList, the query holds only the conditions in use.
func (s *Store) AlertList(ctx context.Context, p store.AlertListParams) ([]store.Alert, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("list alerts")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return nil, s.errorf(err, "list alerts")
	}
	query, args := sqlstore.AlertListQuery("cronfence_alerts", p)
	alerts, err := sqlstore.Query(ctx, s.db, decode.Alert, query, args...)
	if err != nil {
		return nil, s.errorf(err, "list alerts")
	}
	return alerts, nil
}

// LeaseList returns the leases held now, unexpired by the store's clock,
// whose names begin with p.Prefix, by name; see store.Monitor. On SQLite
// every process is on one host, so the process clock is the database
// clock. substr and length count characters on both sides, which for
// valid UTF-8 is a byte-for-byte prefix.
func (s *Store) LeaseList(ctx context.Context, p store.LeaseListParams) (store.LeaseListResult, error) {
	if err := p.Validate(); err != nil {
		return store.LeaseListResult{}, err
	}
	if s.closed.Load() {
		return store.LeaseListResult{}, closedError("list leases")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.LeaseListResult{}, s.errorf(err, "list leases")
	}
	res := store.LeaseListResult{Now: s.now(p.Now)}
	var err error
	res.Leases, err = sqlstore.Query(ctx, s.db, decode.Lease, `
		SELECT `+sqlstore.LeaseColumns+` FROM cronfence_leases
		WHERE expires_at > ?1 AND substr(name, 1, length(?2)) = ?2
		ORDER BY name LIMIT ?3`,
		micros(res.Now), p.Prefix, p.EffectiveLimit())
	if err != nil {
		return store.LeaseListResult{}, s.errorf(err, "list leases")
	}
	return res, nil
}

// MonitorSnapshot reads the replicas, job states, recent runs, open alerts
// and held leases, each by its own list method: in the process, no round
// trip to save. See store.Monitor.
func (s *Store) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	if err := p.Validate(); err != nil {
		return store.MonitorSnapshot{}, err
	}
	var snap store.MonitorSnapshot
	var err error
	if snap.Replicas, err = s.ReplicaList(ctx); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if snap.JobStates, err = s.JobStateList(ctx); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if snap.RecentRuns, err = s.RunList(ctx, store.RunListParams{Limit: p.RecentRuns}); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if snap.OpenAlerts, err = s.AlertList(ctx, store.AlertListParams{OpenOnly: true, Limit: p.OpenAlerts}); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if snap.Leases, err = s.LeaseList(ctx, p.Leases); err != nil {
		return store.MonitorSnapshot{}, err
	}
	return snap, nil
}
