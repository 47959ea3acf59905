package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

var _ store.Monitor = (*Store)(nil)

// ReplicaHeartbeat records this replica. See store.Monitor.
func (s *Store) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	if err := r.Validate(); err != nil {
		return store.Replica{}, err
	}
	if err := s.usable(); err != nil {
		return store.Replica{}, err
	}
	if r.JobsUnchanged {
		stored, err := scanReplica(s.pool.QueryRow(ctx, s.q.replicaBeat,
			r.Owner, r.Host, r.PID, r.Version, int64(r.ClockOffset), r.Timers, s.nowArg(time.Time{})))
		if err != nil {
			return store.Replica{}, s.translate(fmt.Sprintf("heartbeat of replica %q", r.Owner), err)
		}
		stored.JobsUnchanged = true
		return stored, nil
	}
	jobs, err := jobsJSON(r.Jobs)
	if err != nil {
		return store.Replica{}, fmt.Errorf("postgres: heartbeat of replica %q: %w", r.Owner, err)
	}
	kinds, err := kindsJSON(r.Kinds)
	if err != nil {
		return store.Replica{}, fmt.Errorf("postgres: heartbeat of replica %q: %w", r.Owner, err)
	}
	stored, err := scanReplica(s.pool.QueryRow(ctx, s.q.replicaHeartbeat,
		r.Owner, r.Host, r.PID, r.Version, int64(r.ClockOffset), r.Timers, jobs, s.nowArg(time.Time{}), kinds))
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

// AlertRaise opens or refreshes the alert of (p.Kind, p.Subject), ending
// its acknowledgement when p.Fingerprint changes it. See store.Monitor.
func (s *Store) AlertRaise(ctx context.Context, p store.AlertRaiseParams) (store.AlertRaiseResult, error) {
	if err := p.Validate(); err != nil {
		return store.AlertRaiseResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.AlertRaiseResult{}, err
	}
	details, err := detailsJSON(p.Details)
	if err != nil {
		return store.AlertRaiseResult{}, fmt.Errorf("postgres: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	var (
		res   store.AlertRaiseResult
		sa    scannedAlert
		ended scannedAck
	)
	dest := append(append([]any{&res.Raised}, sa.dest()...), ended.dest()...)
	err = s.pool.QueryRow(ctx, s.q.alertRaise, string(p.Kind), p.Subject, p.Message, details, p.RaisedBy, p.Fingerprint,
		s.nowArg(time.Time{})).Scan(dest...)
	if err != nil {
		return store.AlertRaiseResult{}, s.translate(fmt.Sprintf("raise alert %s %q", p.Kind, p.Subject), err)
	}
	if res.Alert, err = sa.alert(); err != nil {
		return store.AlertRaiseResult{}, fmt.Errorf("postgres: raise alert %s %q: %w", p.Kind, p.Subject, err)
	}
	res.EndedAck = ended.ack()
	return res, nil
}

// AlertAcknowledge records an acknowledgement of the open alert of
// (p.Kind, p.Subject). See store.Monitor.
func (s *Store) AlertAcknowledge(ctx context.Context, p store.AlertAcknowledgeParams) (store.Alert, error) {
	if err := p.Validate(); err != nil {
		return store.Alert{}, err
	}
	if err := s.usable(); err != nil {
		return store.Alert{}, err
	}
	what := fmt.Sprintf("acknowledge alert %s %q", p.Kind, p.Subject)
	rows, err := s.pool.Query(ctx, s.q.alertAcknowledge, string(p.Kind), p.Subject, p.ID, p.By, p.Note, s.nowArg(time.Time{}))
	if err != nil {
		return store.Alert{}, s.translate(what, err)
	}
	alerts, err := collectAlerts(rows)
	if err != nil {
		return store.Alert{}, s.translate(what, err)
	}
	if len(alerts) == 0 {
		return store.Alert{}, fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	}
	return alerts[0], nil
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
	var rows pgx.Rows
	var err error
	if p.OpenOnly && p.Kind == "" && p.Subject == "" {
		rows, err = s.pool.Query(ctx, s.q.alertListOpen, p.EffectiveLimit())
	} else {
		rows, err = s.pool.Query(ctx, s.q.alertList, p.OpenOnly, string(p.Kind), p.Subject, p.EffectiveLimit())
	}
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
		r           store.Replica
		offsetNS    int64
		jobs, kinds string
	)
	if err := row.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, &r.StartedAt, &r.HeartbeatAt, &offsetNS, &r.Timers, &jobs, &kinds); err != nil {
		return store.Replica{}, err
	}
	return replicaWith(r, offsetNS, &jobs, kinds)
}

// scanSnapshotReplica scans a replica row of monitorSnapshot.sql: its jobs
// NULL when the caller holds them (JobsUnchanged), then their digest, then
// its kinds.
func scanSnapshotReplica(row pgx.Row) (store.Replica, error) {
	var (
		r        store.Replica
		offsetNS int64
		jobs     *string
		kinds    string
	)
	if err := row.Scan(&r.Owner, &r.Host, &r.PID, &r.Version, &r.StartedAt, &r.HeartbeatAt, &offsetNS, &r.Timers, &jobs, &r.JobsHash, &kinds); err != nil {
		return store.Replica{}, err
	}
	r.JobsUnchanged = jobs == nil
	return replicaWith(r, offsetNS, jobs, kinds)
}

// replicaWith completes a scanned replica row: its times in UTC, its
// clock offset, its jobs parsed (none when jobs is nil) and its kinds.
func replicaWith(r store.Replica, offsetNS int64, jobs *string, kinds string) (store.Replica, error) {
	r.StartedAt, r.HeartbeatAt, r.ClockOffset = r.StartedAt.UTC(), r.HeartbeatAt.UTC(), time.Duration(offsetNS)
	if jobs != nil {
		if err := json.Unmarshal([]byte(*jobs), &r.Jobs); err != nil {
			return store.Replica{}, fmt.Errorf("replica %q: jobs: %w", r.Owner, err)
		}
	}
	if len(r.Jobs) == 0 {
		r.Jobs = nil
	}
	if err := json.Unmarshal([]byte(kinds), &r.Kinds); err != nil {
		return store.Replica{}, fmt.Errorf("replica %q: kinds: %w", r.Owner, err)
	}
	if len(r.Kinds) == 0 {
		r.Kinds = nil
	}
	return r, nil
}

// scannedAlert receives the alertColumns of one row.
type scannedAlert struct {
	a        store.Alert
	kind     string
	details  string
	resolved *time.Time
	ack      scannedAck
}

func (sa *scannedAlert) dest() []any {
	a := &sa.a
	return append([]any{&a.ID, &sa.kind, &a.Subject, &a.Message, &sa.details, &a.RaisedBy, &a.RaisedAt, &a.LastSeenAt, &sa.resolved,
		&a.Fingerprint}, sa.ack.dest()...)
}

func (sa *scannedAlert) alert() (store.Alert, error) {
	a := sa.a
	a.Kind = store.AlertKind(sa.kind)
	a.RaisedAt, a.LastSeenAt = a.RaisedAt.UTC(), a.LastSeenAt.UTC()
	if sa.resolved != nil {
		a.ResolvedAt = sa.resolved.UTC()
	}
	a.Ack = sa.ack.ack()
	if err := json.Unmarshal([]byte(sa.details), &a.Details); err != nil {
		return store.Alert{}, fmt.Errorf("alert %d: details: %w", a.ID, err)
	}
	if len(a.Details) == 0 {
		a.Details = nil
	}
	return a, nil
}

// scannedAck receives an acknowledgement: by, at and note, the first two
// NULL when there is none.
type scannedAck struct {
	by   *string
	at   *time.Time
	note *string
}

func (sa *scannedAck) dest() []any { return []any{&sa.by, &sa.at, &sa.note} }

func (sa *scannedAck) ack() store.AlertAck {
	if sa.by == nil || sa.at == nil {
		return store.AlertAck{}
	}
	a := store.AlertAck{By: *sa.by, At: sa.at.UTC()}
	if sa.note != nil {
		a.Note = *sa.note
	}
	return a
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

// kindsJSON encodes a replica's handler kinds, never as null.
func kindsJSON(kinds []string) (string, error) {
	if len(kinds) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(kinds)
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

// MonitorSnapshot reads the replicas, job states, recent runs, open alerts
// and held leases in one statement (sql/monitorSnapshot.sql). See
// store.Monitor.
func (s *Store) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	if err := p.Validate(); err != nil {
		return store.MonitorSnapshot{}, err
	}
	if err := s.usable(); err != nil {
		return store.MonitorSnapshot{}, err
	}
	var (
		snap                                   store.MonitorSnapshot
		replicas, states, runs, alerts, leases string
	)
	knownOwners, knownHashes := make([]string, 0, len(p.KnownJobs)), make([]string, 0, len(p.KnownJobs))
	for owner, hash := range p.KnownJobs {
		knownOwners, knownHashes = append(knownOwners, owner), append(knownHashes, hash)
	}
	err := s.pool.QueryRow(ctx, s.q.monitorSnapshot, s.nowArg(p.Leases.Now),
		store.RunListParams{Limit: p.RecentRuns}.EffectiveLimit(), store.AlertListParams{Limit: p.OpenAlerts}.EffectiveLimit(),
		p.Leases.Prefix, p.Leases.EffectiveLimit(), knownOwners, knownHashes).Scan(&snap.Leases.Now, &replicas, &states, &runs, &alerts, &leases)
	if err != nil {
		return store.MonitorSnapshot{}, s.translate("read the monitor snapshot", err)
	}
	snap.Leases.Now = snap.Leases.Now.UTC()
	err = errors.Join(
		eachJSONRow(replicas, func(row jsonRow) error {
			r, err := scanSnapshotReplica(row)
			snap.Replicas = append(snap.Replicas, r)
			return err
		}),
		eachJSONRow(states, func(row jsonRow) error {
			js, err := scanJobState(row)
			snap.JobStates = append(snap.JobStates, js)
			return err
		}),
		eachJSONRow(runs, func(row jsonRow) error {
			var sr scannedRun
			err := row.Scan(sr.dest()...)
			snap.RecentRuns = append(snap.RecentRuns, sr.run())
			return err
		}),
		eachJSONRow(alerts, func(row jsonRow) error {
			var sa scannedAlert
			if err := row.Scan(sa.dest()...); err != nil {
				return err
			}
			a, err := sa.alert()
			snap.OpenAlerts = append(snap.OpenAlerts, a)
			return err
		}),
		eachJSONRow(leases, func(row jsonRow) error {
			var l store.Lease
			err := row.Scan(&l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
			snap.Leases.Leases = append(snap.Leases.Leases, utcLease(l))
			return err
		}),
	)
	if err != nil {
		return store.MonitorSnapshot{}, fmt.Errorf("postgres: read the monitor snapshot: %w", err)
	}
	return snap, nil
}

// jsonRow is one row of a part of monitorSnapshot.sql: a JSON array of
// its columns, scanned in order into the same destinations a row of the
// part's own list statement is (so the same scan code reads both).
type jsonRow json.RawMessage

func (r jsonRow) Scan(dest ...any) error { return json.Unmarshal(r, &dest) }

// eachJSONRow calls fn for each row of rows, a JSON array of rows.
func eachJSONRow(rows string, fn func(jsonRow) error) error {
	var all []json.RawMessage
	if err := json.Unmarshal([]byte(rows), &all); err != nil {
		return err
	}
	for _, r := range all {
		if err := fn(jsonRow(r)); err != nil {
			return err
		}
	}
	return nil
}
