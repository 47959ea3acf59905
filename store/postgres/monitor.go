package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

var _ store.Monitor = (*Store)(nil)

// JSON columns travel as text ($n::text::jsonb in, jobs::text out), so pgx's
// choice of JSON encoding for a Go type never decides what is stored.

const replicaColumns = `owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers, jobs::text`

// replicaHeartbeatSQL keeps started_at from the first heartbeat and
// replaces everything else.
//
// $1 owner, $2 host, $3 pid, $4 version, $5 clock offset in ns, $6 timers,
// $7 jobs as JSON text, $8 pinned now or NULL.
const replicaHeartbeatSQL = `
INSERT INTO {{schema}}.replicas AS r (owner, host, pid, version, started_at, heartbeat_at, clock_offset_ns, timers, jobs)
SELECT $1, $2, $3, $4, c.now, c.now, $5, $6, $7::text::jsonb
  FROM (SELECT coalesce($8::timestamptz, now()) AS now) c
ON CONFLICT (owner) DO UPDATE
   SET host            = EXCLUDED.host,
       pid             = EXCLUDED.pid,
       version         = EXCLUDED.version,
       heartbeat_at    = EXCLUDED.heartbeat_at,
       clock_offset_ns = EXCLUDED.clock_offset_ns,
       timers          = EXCLUDED.timers,
       jobs            = EXCLUDED.jobs
RETURNING ` + replicaColumns

const replicaListSQL = `SELECT ` + replicaColumns + ` FROM {{schema}}.replicas ORDER BY owner COLLATE "C"`

const replicaRemoveSQL = `DELETE FROM {{schema}}.replicas WHERE owner = $1`

const alertColumns = `id, kind, subject, message, details::text, raised_by, raised_at, last_seen_at, resolved_at`

// alertRaiseSQL opens the alert or, when one of (kind, subject) is open,
// refreshes it. The partial unique index is the arbiter: of replicas racing,
// one inserts and the others wait for its commit and then update that row.
// xmax is 0 on a row version this statement inserted and the updating
// transaction's id on one it updated (ON CONFLICT DO UPDATE locks the row
// first), which is how the statement tells the two apart in one round trip.
//
// $1 kind, $2 subject, $3 message, $4 details as JSON text, $5 raised by,
// $6 pinned now or NULL.
const alertRaiseSQL = `
INSERT INTO {{schema}}.alerts AS a (kind, subject, message, details, raised_by, raised_at, last_seen_at)
SELECT $1, $2, $3, $4::text::jsonb, $5, c.now, c.now
  FROM (SELECT coalesce($6::timestamptz, now()) AS now) c
ON CONFLICT (kind, subject) WHERE resolved_at IS NULL DO UPDATE
   SET message      = EXCLUDED.message,
       details      = EXCLUDED.details,
       last_seen_at = EXCLUDED.last_seen_at
RETURNING a.xmax = 0, ` + alertColumns

// alertResolveSQL closes the open alert. A concurrent resolver waits for the
// first's row lock, re-checks resolved_at IS NULL on the committed row, and
// finds nothing to update.
//
// $1 kind, $2 subject, $3 pinned now or NULL.
const alertResolveSQL = `
UPDATE {{schema}}.alerts
   SET resolved_at = coalesce($3::timestamptz, now())
 WHERE kind = $1 AND subject = $2 AND resolved_at IS NULL
RETURNING ` + alertColumns

// alertListSQL: $1 open only, $2 kind or empty for all, $3 subject or empty
// for all, $4 limit.
const alertListSQL = `
SELECT ` + alertColumns + ` FROM {{schema}}.alerts
 WHERE (NOT $1 OR resolved_at IS NULL) AND ($2 = '' OR kind = $2) AND ($3 = '' OR subject = $3)
 ORDER BY id DESC
 LIMIT $4`

// leaseListSQL reads the clock once and the leases unexpired by it whose
// names begin with the prefix. The outer join yields the clock alone, as
// one row of NULLs, when no lease is held.
//
// $1 pinned now or NULL, $2 prefix (empty for all), $3 limit.
const leaseListSQL = `
WITH c AS (SELECT coalesce($1::timestamptz, now()) AS now)
SELECT c.now, l.name, l.owner, l.generation, l.acquired_at, l.renewed_at, l.expires_at
  FROM c LEFT JOIN LATERAL (
       SELECT ` + leaseColumns + ` FROM {{schema}}.leases
        WHERE expires_at > c.now AND starts_with(name, $2)
        ORDER BY name COLLATE "C"
        LIMIT $3) l ON true
 ORDER BY l.name COLLATE "C"`

// ReplicaHeartbeat records this replica. See store.Monitor.
func (s *Store) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	if err := r.Validate(); err != nil {
		return store.Replica{}, err
	}
	if err := s.usable(); err != nil {
		return store.Replica{}, err
	}
	jobs, err := jobsJSON(r.Jobs)
	if err != nil {
		return store.Replica{}, fmt.Errorf("postgres: heartbeat of replica %q: %w", r.Owner, err)
	}
	stored, err := scanReplica(s.pool.QueryRow(ctx, s.q.replicaHeartbeat,
		r.Owner, r.Host, r.PID, r.Version, int64(r.ClockOffset), r.Timers, jobs, s.nowArg(time.Time{})))
	if err != nil {
		return store.Replica{}, s.translate(fmt.Sprintf("heartbeat of replica %q", r.Owner), err)
	}
	return stored, nil
}

// ReplicaList returns every recorded replica, by owner. See store.Monitor.
func (s *Store) ReplicaList(ctx context.Context) ([]store.Replica, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.replicaList)
	if err != nil {
		return nil, s.translate("list replicas", err)
	}
	replicas, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Replica, error) { return scanReplica(row) })
	if err != nil {
		return nil, s.translate("list replicas", err)
	}
	return replicas, nil
}

// ReplicaRemove deletes the replica's row. See store.Monitor.
func (s *Store) ReplicaRemove(ctx context.Context, owner string) error {
	if err := store.ValidateName("replica owner", owner); err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, s.q.replicaRemove, owner); err != nil {
		return s.translate(fmt.Sprintf("remove replica %q", owner), err)
	}
	return nil
}

// AlertRaise opens or refreshes the alert of (p.Kind, p.Subject). See
// store.Monitor.
func (s *Store) AlertRaise(ctx context.Context, p store.AlertRaiseParams) (store.Alert, bool, error) {
	if err := p.Validate(); err != nil {
		return store.Alert{}, false, err
	}
	if err := s.usable(); err != nil {
		return store.Alert{}, false, err
	}
	details, err := detailsJSON(p.Details)
	if err != nil {
		return store.Alert{}, false, fmt.Errorf("postgres: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	var (
		raised bool
		sa     scannedAlert
	)
	err = s.pool.QueryRow(ctx, s.q.alertRaise, string(p.Kind), p.Subject, p.Message, details, p.RaisedBy, s.nowArg(time.Time{})).
		Scan(append([]any{&raised}, sa.dest()...)...)
	if err != nil {
		return store.Alert{}, false, s.translate(fmt.Sprintf("raise alert %s %q", p.Kind, p.Subject), err)
	}
	a, err := sa.alert()
	if err != nil {
		return store.Alert{}, false, fmt.Errorf("postgres: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	return a, raised, nil
}

// AlertResolve closes the open alert of (kind, subject). See store.Monitor.
func (s *Store) AlertResolve(ctx context.Context, kind store.AlertKind, subject string) (store.Alert, bool, error) {
	if err := store.ValidateAlertRef(kind, subject); err != nil {
		return store.Alert{}, false, err
	}
	if err := s.usable(); err != nil {
		return store.Alert{}, false, err
	}
	rows, err := s.pool.Query(ctx, s.q.alertResolve, string(kind), subject, s.nowArg(time.Time{}))
	if err != nil {
		return store.Alert{}, false, s.translate(fmt.Sprintf("resolve alert %s %q", kind, subject), err)
	}
	alerts, err := collectAlerts(rows)
	if err != nil {
		return store.Alert{}, false, s.translate(fmt.Sprintf("resolve alert %s %q", kind, subject), err)
	}
	if len(alerts) == 0 {
		return store.Alert{}, false, nil
	}
	return alerts[0], true, nil
}

// AlertList returns alerts, newest first. See store.Monitor.
func (s *Store) AlertList(ctx context.Context, p store.AlertListParams) ([]store.Alert, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q.alertList, p.OpenOnly, string(p.Kind), p.Subject, p.EffectiveLimit())
	if err != nil {
		return nil, s.translate("list alerts", err)
	}
	alerts, err := collectAlerts(rows)
	if err != nil {
		return nil, s.translate("list alerts", err)
	}
	return alerts, nil
}

// LeaseList returns the leases held now whose names begin with p.Prefix,
// and the clock that judged them. See store.Monitor.
func (s *Store) LeaseList(ctx context.Context, p store.LeaseListParams) (store.LeaseListResult, error) {
	if err := p.Validate(); err != nil {
		return store.LeaseListResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.LeaseListResult{}, err
	}
	rows, err := s.pool.Query(ctx, s.q.leaseList, s.nowArg(p.Now), p.Prefix, p.EffectiveLimit())
	if err != nil {
		return store.LeaseListResult{}, s.translate("list leases", err)
	}
	defer rows.Close()
	var res store.LeaseListResult
	for rows.Next() {
		var (
			now                        time.Time
			name, owner                *string
			generation                 *int64
			acquired, renewed, expires *time.Time
		)
		if err := rows.Scan(&now, &name, &owner, &generation, &acquired, &renewed, &expires); err != nil {
			return store.LeaseListResult{}, s.translate("list leases", err)
		}
		res.Now = now.UTC()
		if name == nil {
			continue // no lease held: the clock alone
		}
		res.Leases = append(res.Leases, utcLease(store.Lease{
			Name: *name, Owner: *owner, Generation: *generation, AcquiredAt: *acquired, RenewedAt: *renewed, ExpiresAt: *expires,
		}))
	}
	if err := rows.Err(); err != nil {
		return store.LeaseListResult{}, s.translate("list leases", err)
	}
	return res, nil
}

func scanReplica(row pgx.Row) (store.Replica, error) {
	var (
		r        store.Replica
		offsetNS int64
		jobs     string
	)
	if err := row.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, &r.StartedAt, &r.HeartbeatAt, &offsetNS, &r.Timers, &jobs); err != nil {
		return store.Replica{}, err
	}
	r.StartedAt, r.HeartbeatAt, r.ClockOffset = r.StartedAt.UTC(), r.HeartbeatAt.UTC(), time.Duration(offsetNS)
	if err := json.Unmarshal([]byte(jobs), &r.Jobs); err != nil {
		return store.Replica{}, fmt.Errorf("replica %q: jobs: %w", r.Owner, err)
	}
	if len(r.Jobs) == 0 {
		r.Jobs = nil
	}
	return r, nil
}

// scannedAlert receives the alertColumns of one row.
type scannedAlert struct {
	a        store.Alert
	kind     string
	details  string
	resolved *time.Time
}

func (sa *scannedAlert) dest() []any {
	a := &sa.a
	return []any{&a.ID, &sa.kind, &a.Subject, &a.Message, &sa.details, &a.RaisedBy, &a.RaisedAt, &a.LastSeenAt, &sa.resolved}
}

func (sa *scannedAlert) alert() (store.Alert, error) {
	a := sa.a
	a.Kind = store.AlertKind(sa.kind)
	a.RaisedAt, a.LastSeenAt = a.RaisedAt.UTC(), a.LastSeenAt.UTC()
	if sa.resolved != nil {
		a.ResolvedAt = sa.resolved.UTC()
	}
	if err := json.Unmarshal([]byte(sa.details), &a.Details); err != nil {
		return store.Alert{}, fmt.Errorf("alert %d: details: %w", a.ID, err)
	}
	if len(a.Details) == 0 {
		a.Details = nil
	}
	return a, nil
}

func collectAlerts(rows pgx.Rows) ([]store.Alert, error) {
	defer rows.Close()
	var alerts []store.Alert
	for rows.Next() {
		var sa scannedAlert
		if err := rows.Scan(sa.dest()...); err != nil {
			return nil, err
		}
		a, err := sa.alert()
		if err != nil {
			return nil, err
		}
		alerts = append(alerts, a)
	}
	return alerts, rows.Err()
}

// jobsJSON encodes a replica's jobs, never as null.
func jobsJSON(jobs []store.ReplicaJob) (string, error) {
	if len(jobs) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(jobs)
	return string(b), err
}

// detailsJSON encodes alert details, never as null.
func detailsJSON(details map[string]string) (string, error) {
	if len(details) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(details)
	return string(b), err
}
