package mysql

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
// heartbeat; see store.Monitor. The upsert and the read of the row it left,
// in one transaction.
func (s *Store) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	if err := r.Validate(); err != nil {
		return store.Replica{}, err
	}
	if s.closed.Load() {
		return store.Replica{}, closedError("replica heartbeat")
	}
	if r.JobsUnchanged {
		return s.replicaBeat(ctx, r)
	}
	jobs, err := sqlstore.JobsJSON(r.Jobs)
	if err != nil {
		return store.Replica{}, fmt.Errorf("mysql: heartbeat of replica %q: %w", r.Owner, err)
	}
	kinds, err := sqlstore.KindsJSON(r.Kinds)
	if err != nil {
		return store.Replica{}, fmt.Errorf("mysql: heartbeat of replica %q: %w", r.Owner, err)
	}
	var stored store.Replica
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+s.t("replicas")+` (`+sqlstore.ReplicaColumns+`)
			VALUES (?, ?, ?, ?, COALESCE(?, UTC_TIMESTAMP(6)), COALESCE(?, UTC_TIMESTAMP(6)), ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE host = VALUES(host), pid = VALUES(pid), version = VALUES(version),
				heartbeat_at = VALUES(heartbeat_at), clock_offset_ns = VALUES(clock_offset_ns),
				timers = VALUES(timers), jobs = VALUES(jobs), kinds = VALUES(kinds)`,
			r.Owner, r.Host, r.PID, r.Version, s.nowArg(time.Time{}), s.nowArg(time.Time{}), int64(r.ClockOffset), r.Timers, jobs, kinds); err != nil {
			return err
		}
		var err error
		stored, err = decode.Replica(tx.QueryRowContext(ctx, `SELECT `+sqlstore.ReplicaColumns+` FROM `+s.t("replicas")+` WHERE owner = ?`, r.Owner))
		return err
	})
	if err != nil {
		return store.Replica{}, s.errorf(err, "heartbeat of replica %q", r.Owner)
	}
	return stored, nil
}

// replicaBeat is a heartbeat with JobsUnchanged: an update of the row, its
// jobs and kinds kept, and a read of it without the jobs, in one
// transaction. With no
// row of the owner the read finds none (ErrNotFound) and nothing is
// written. (The read, not the update's count of rows: MySQL counts rows
// changed, and a heartbeat at a pinned clock changes none.)
func (s *Store) replicaBeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	var stored store.Replica
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.t("replicas")+`
			SET host = ?, pid = ?, version = ?, heartbeat_at = COALESCE(?, UTC_TIMESTAMP(6)), clock_offset_ns = ?, timers = ?
			WHERE owner = ?`,
			r.Host, r.PID, r.Version, s.nowArg(time.Time{}), int64(r.ClockOffset), r.Timers, r.Owner); err != nil {
			return err
		}
		var err error
		stored, err = decode.Replica(tx.QueryRowContext(ctx, `SELECT `+sqlstore.ReplicaColumnsWithoutJobs+` FROM `+s.t("replicas")+` WHERE owner = ?`, r.Owner))
		return err
	})
	if err != nil {
		return store.Replica{}, s.errorf(err, "heartbeat of replica %q", r.Owner)
	}
	stored.JobsUnchanged = true
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
	replicas, err := s.listReplicas(ctx, s.db)
	if err != nil {
		return nil, s.errorf(err, "list replicas")
	}
	return replicas, nil
}

func (s *Store) listReplicas(ctx context.Context, q sqlstore.Querier) ([]store.Replica, error) {
	return sqlstore.Query(ctx, q, decode.Replica, `SELECT `+sqlstore.ReplicaColumns+` FROM `+s.t("replicas")+` ORDER BY owner`)
}

// ReplicaRemove deletes the replica's row; see store.Monitor.
func (s *Store) ReplicaRemove(ctx context.Context, owner string) error {
	if err := store.ValidateName("replica owner", owner); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("remove replica")
	}
	if err := s.checkSchema(ctx, s.own); err != nil {
		return s.errorf(err, "remove replica %q", owner)
	}
	if _, err := s.own.ExecContext(ctx, `DELETE FROM `+s.t("replicas")+` WHERE owner = ?`, owner); err != nil {
		return s.errorf(err, "remove replica %q", owner)
	}
	return nil
}

// AlertRaise opens or refreshes the alert of (p.Kind, p.Subject), ending
// its acknowledgement when p.Fingerprint changes it; see store.Monitor. The
// open alert's row is locked and refreshed, or, when there is none, a row
// inserted: of raisers racing to insert one, the first commits and the
// others find its row a duplicate (the unique key of open alerts) and run
// again, refreshing it. The lock also makes one raiser the one that ends an
// acknowledgement: the next reads the row it left.
func (s *Store) AlertRaise(ctx context.Context, p store.AlertRaiseParams) (res store.AlertRaiseResult, err error) {
	if err := p.Validate(); err != nil {
		return store.AlertRaiseResult{}, err
	}
	if s.closed.Load() {
		return store.AlertRaiseResult{}, closedError("raise alert")
	}
	details, err := sqlstore.DetailsJSON(p.Details)
	if err != nil {
		return store.AlertRaiseResult{}, fmt.Errorf("mysql: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		res = store.AlertRaiseResult{}
		open, err := decode.Alert(tx.QueryRowContext(ctx, `SELECT `+sqlstore.AlertColumns+` FROM `+s.t("alerts")+`
			WHERE kind = ? AND subject = ? AND open_key = 1 FOR UPDATE`, string(p.Kind), p.Subject))
		found := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now, err := s.now(ctx, tx, time.Time{})
		if err != nil {
			return err
		}
		if found {
			if open.Fingerprint != p.Fingerprint {
				res.EndedAck, open.Ack = open.Ack, store.AlertAck{}
			}
			if _, err := tx.ExecContext(ctx, `UPDATE `+s.t("alerts")+` SET message = ?, details = ?, last_seen_at = ?, fingerprint = ?,
				acknowledged_by = ?, acknowledged_at = ?, acknowledged_note = ? WHERE id = ?`,
				p.Message, details, now, p.Fingerprint, nullString(open.Ack.By), nullTime(open.Ack.At), open.Ack.Note, open.ID); err != nil {
				return err
			}
			open.Message, open.Details, open.LastSeenAt, open.Fingerprint = p.Message, p.Details, now, p.Fingerprint
			if len(open.Details) == 0 {
				open.Details = nil
			}
			res.Alert = open
			return nil
		}
		ins, err := tx.ExecContext(ctx, `INSERT INTO `+s.t("alerts")+` (kind, subject, message, details, raised_by, raised_at, last_seen_at, fingerprint)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			string(p.Kind), p.Subject, p.Message, details, p.RaisedBy, now, now, p.Fingerprint)
		if mysqlCode(err) == errDupKey {
			return errRaced
		}
		if err != nil {
			return err
		}
		id, err := ins.LastInsertId()
		if err != nil {
			return err
		}
		res.Alert = store.Alert{ID: id, Kind: p.Kind, Subject: p.Subject, Message: p.Message, Details: p.Details,
			RaisedBy: p.RaisedBy, RaisedAt: now, LastSeenAt: now, Fingerprint: p.Fingerprint}
		if len(res.Alert.Details) == 0 {
			res.Alert.Details = nil
		}
		res.Raised = true
		return nil
	})
	if err != nil {
		return store.AlertRaiseResult{}, s.errorf(err, "raise alert %s %q", p.Kind, p.Subject)
	}
	return res, nil
}

// AlertAcknowledge records an acknowledgement of the open alert of
// (p.Kind, p.Subject); see store.Monitor. The open row is locked, so a
// raise racing it either ends the acknowledgement after it or refreshes
// the alert before it.
func (s *Store) AlertAcknowledge(ctx context.Context, p store.AlertAcknowledgeParams) (alert store.Alert, err error) {
	if err := p.Validate(); err != nil {
		return store.Alert{}, err
	}
	if s.closed.Load() {
		return store.Alert{}, closedError("acknowledge alert")
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		alert = store.Alert{}
		open, err := decode.Alert(tx.QueryRowContext(ctx, `SELECT `+sqlstore.AlertColumns+` FROM `+s.t("alerts")+`
			WHERE kind = ? AND subject = ? AND open_key = 1 AND (? = 0 OR id = ?) FOR UPDATE`, string(p.Kind), p.Subject, p.ID, p.ID))
		if err != nil {
			return err // none open: sql.ErrNoRows, ErrNotFound to the caller
		}
		now, err := s.now(ctx, tx, time.Time{})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.t("alerts")+` SET acknowledged_by = ?, acknowledged_at = ?, acknowledged_note = ? WHERE id = ?`,
			p.By, now, p.Note, open.ID); err != nil {
			return err
		}
		open.Ack = store.AlertAck{By: p.By, At: now, Note: p.Note}
		alert = open
		return nil
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
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		alert, resolved = store.Alert{}, false
		open, err := decode.Alert(tx.QueryRowContext(ctx, `SELECT `+sqlstore.AlertColumns+` FROM `+s.t("alerts")+`
			WHERE kind = ? AND subject = ? AND open_key = 1 FOR UPDATE`, string(kind), subject))
		if errors.Is(err, sql.ErrNoRows) {
			return nil // none open: nothing to resolve
		}
		if err != nil {
			return err
		}
		now, err := s.now(ctx, tx, time.Time{})
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE `+s.t("alerts")+` SET resolved_at = ? WHERE id = ?`, now, open.ID); err != nil {
			return err
		}
		open.ResolvedAt = now
		alert, resolved = open, true
		return nil
	})
	if err != nil {
		return store.Alert{}, false, s.errorf(err, "resolve alert %s %q", kind, subject)
	}
	return alert, resolved, nil
}

// AlertList returns alerts newest (highest id) first; see store.Monitor.
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
	alerts, err := s.listAlerts(ctx, s.db, p)
	if err != nil {
		return nil, s.errorf(err, "list alerts")
	}
	return alerts, nil
}

func (s *Store) listAlerts(ctx context.Context, q sqlstore.Querier, p store.AlertListParams) ([]store.Alert, error) {
	query, args := sqlstore.AlertListQuery(s.t("alerts"), p)
	return sqlstore.Query(ctx, q, decode.Alert, query, args...)
}

// LeaseList returns the leases held now, unexpired by the database clock,
// whose names begin with p.Prefix, by name; see store.Monitor. The names
// are VARBINARY, so LEFT compares bytes.
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
	res, err := s.listLeases(ctx, s.db, p)
	if err != nil {
		return store.LeaseListResult{}, s.errorf(err, "list leases")
	}
	return res, nil
}

func (s *Store) listLeases(ctx context.Context, q sqlstore.Querier, p store.LeaseListParams) (store.LeaseListResult, error) {
	var res store.LeaseListResult
	var err error
	if res.Now, err = s.now(ctx, q, p.Now); err != nil {
		return res, err
	}
	res.Leases, err = sqlstore.Query(ctx, q, decode.Lease, `SELECT `+sqlstore.LeaseColumns+` FROM `+s.t("leases")+`
		WHERE expires_at > ? AND LEFT(name, LENGTH(?)) = ?
		ORDER BY name LIMIT ?`, res.Now, p.Prefix, p.Prefix, p.EffectiveLimit())
	return res, err
}

// MonitorSnapshot reads the replicas, job states, recent runs, open alerts
// and held leases in one read-only transaction (a consistent snapshot, at
// the cost of a statement each rather than PostgreSQL's one). See
// store.Monitor.
func (s *Store) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	if err := p.Validate(); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if s.closed.Load() {
		return store.MonitorSnapshot{}, closedError("monitor snapshot")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot")
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot")
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var snap store.MonitorSnapshot
	if snap.Replicas, err = s.listReplicas(ctx, tx); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot: replicas")
	}
	if snap.JobStates, err = s.listJobStates(ctx, tx); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot: job states")
	}
	if snap.RecentRuns, err = s.listRuns(ctx, tx, store.RunListParams{Limit: p.RecentRuns}); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot: runs")
	}
	if snap.OpenAlerts, err = s.listAlerts(ctx, tx, store.AlertListParams{OpenOnly: true, Limit: p.OpenAlerts}); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot: alerts")
	}
	if snap.Leases, err = s.listLeases(ctx, tx, p.Leases); err != nil {
		return store.MonitorSnapshot{}, s.errorf(err, "monitor snapshot: leases")
	}
	return snap, nil
}

// nullString is s, NULL when empty.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }
