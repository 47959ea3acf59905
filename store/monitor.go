package store

import (
	"context"
	"time"
)

// Monitor is the part of the store boundary that keeps the replica registry
// and the alerts of absence monitoring. Every Store has it (Store embeds
// it), so a wrapper that forwards Store forwards it too, and no caller
// looks for it by type assertion.
//
// Every method is one round trip, validates its arguments first (an error
// wrapping ErrInvalidArgument, nothing written) and returns ErrClosed after
// Close. Store.Prune also deletes resolved alerts resolved before its
// cutoff (open ones stay, however old) and replicas whose last heartbeat is
// before it; PruneResult does not count them.
type Monitor interface {
	// ReplicaHeartbeat records (inserts or updates) this replica in one
	// round trip, setting HeartbeatAt to the database clock, and StartedAt
	// to it on the first heartbeat of an owner (later heartbeats keep it).
	// The r.StartedAt and r.HeartbeatAt passed in are ignored. Every other
	// field, Jobs included, replaces what was stored. It returns the row as
	// stored.
	//
	// With r.JobsUnchanged (and no Jobs) the stored jobs are kept, and the
	// row is returned without them (Jobs nil, JobsUnchanged true): a
	// replica with thousands of jobs neither sends nor reads them back at
	// every heartbeat. Such a heartbeat only updates: when no row of
	// r.Owner is stored (it was removed, or pruned), it writes nothing and
	// returns an error wrapping ErrNotFound, and the caller sends its jobs.
	ReplicaHeartbeat(ctx context.Context, r Replica) (Replica, error)

	// ReplicaList returns every recorded replica, by owner (byte order).
	// Callers judge liveness from HeartbeatAt against the database clock
	// (Store.Now): a replica that crashed stays listed until Prune removes
	// rows whose heartbeat is older than its cutoff.
	ReplicaList(ctx context.Context) ([]Replica, error)

	// ReplicaRemove deletes the replica's row (on a graceful stop). Removing
	// an unknown owner is not an error.
	ReplicaRemove(ctx context.Context, owner string) error

	// AlertRaise opens an alert of (Kind, Subject) unless one is already
	// open, in one atomic statement: Raised is true for exactly one caller
	// however many replicas race. When one is open, its Message, Details,
	// Fingerprint and LastSeenAt are refreshed and Raised is false; if it
	// was acknowledged and p.Fingerprint differs from its Fingerprint, the
	// alert changed: its acknowledgement ends in the same statement, and
	// the one caller that ended it gets it as EndedAck.
	AlertRaise(ctx context.Context, p AlertRaiseParams) (AlertRaiseResult, error)

	// AlertAcknowledge records an operator's acknowledgement of the open
	// alert of (p.Kind, p.Subject), and of that alert only when p.ID is not
	// zero: by p.By, with p.Note, at the database clock. It replaces an
	// earlier acknowledgement of the same alert. The acknowledgement holds
	// until the alert changes (AlertRaise with another Fingerprint) or
	// closes: a raise after the resolve opens a new alert, not
	// acknowledged. With no such open alert it writes nothing and returns an
	// error wrapping ErrNotFound.
	AlertAcknowledge(ctx context.Context, p AlertAcknowledgeParams) (Alert, error)

	// AlertResolve closes the open alert of (kind, subject), setting
	// ResolvedAt to the database clock: resolved is true for exactly one
	// caller, which gets the closed alert; the others, and a call when none
	// was open, get false, a zero Alert and no error. The closed row stays
	// (listed with OpenOnly false) until Prune removes resolved alerts
	// older than its cutoff; a later AlertRaise of the same (kind, subject)
	// opens a new alert with a new ID.
	AlertResolve(ctx context.Context, kind AlertKind, subject string) (alert Alert, resolved bool, err error)

	// AlertList returns alerts, newest (highest ID) first.
	AlertList(ctx context.Context, p AlertListParams) ([]Alert, error)

	// LeaseList returns the leases held now, unexpired by the database
	// clock, whose names begin with p.Prefix (every one when empty), by
	// name (byte order), at most p.Limit of them; with the database clock
	// reading they were judged by, so a caller measures their age on the
	// same clock in the same round trip. Released and expired rows, which
	// stay in the table (generations never go back), are left out: the
	// answer is as small as what is running. Any replica sees every
	// holder's leases, its own or not.
	LeaseList(ctx context.Context, p LeaseListParams) (LeaseListResult, error)

	// MonitorSnapshot reads at once (one round trip) what a pass of the
	// absence checks judges besides each job's own runs: every replica as
	// ReplicaList returns them, every job state as JobStateList, the
	// newest runs of all jobs as RunList with Limit p.RecentRuns, the open
	// alerts as AlertList with OpenOnly and Limit p.OpenAlerts, and the
	// held leases as LeaseList with p.Leases. A store that digests each
	// replica's jobs (Replica.JobsHash) may leave out the jobs of a replica
	// whose digest is p.KnownJobs[owner]: that row's Jobs is nil and its
	// JobsUnchanged true.
	MonitorSnapshot(ctx context.Context, p MonitorSnapshotParams) (MonitorSnapshot, error)
}

// MonitorSnapshotParams are the arguments of Monitor.MonitorSnapshot.
type MonitorSnapshotParams struct {
	RecentRuns int             // how many of the newest runs, as RunListParams.Limit
	OpenAlerts int             // how many of the open alerts, as AlertListParams.Limit
	Leases     LeaseListParams // which held leases
	// KnownJobs are the replicas' jobs the caller holds from an earlier
	// snapshot, as owner → Replica.JobsHash: those need not be sent again
	// (thousands of jobs a replica, every pass of the checks). Nil: send
	// every replica's.
	KnownJobs map[string]string
}

// MonitorSnapshot is what Monitor.MonitorSnapshot returns: each part as
// its own list method would return it.
type MonitorSnapshot struct {
	Replicas   []Replica
	JobStates  []JobState
	RecentRuns []Run
	OpenAlerts []Alert
	Leases     LeaseListResult
}

// LeaseListParams are the arguments of Monitor.LeaseList.
type LeaseListParams struct {
	// Prefix keeps the leases whose names begin with it, byte for byte
	// ("job:" for the job leases); empty for all. At most MaxNameLength
	// bytes of UTF-8, without NUL.
	Prefix string
	Limit  int       // at most MaxRunListLimit; 0 means DefaultRunListLimit
	Now    time.Time // pins the clock for this call; zero means the database clock
}

// LeaseListResult is what Monitor.LeaseList returns.
type LeaseListResult struct {
	// Now is the database clock the leases were judged unexpired by.
	Now time.Time
	// Leases are the held leases, by name.
	Leases []Lease
}

// Replica is one row of the replica registry.
type Replica struct {
	Owner       string // the scheduler's Config.Owner
	Host        string
	PID         int
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	// ClockOffset is this replica's clock minus the database clock, as last
	// measured (positive: ahead).
	ClockOffset time.Duration
	// Timers is false for a replica that serves manual runs and pauses
	// only (Config.DisableTimers).
	Timers bool
	// Jobs are the jobs this replica registers, by name (the caller
	// sorts them; the store keeps the order). Nil when none. Stored
	// schedules are not among them: they are the store's (Schedules).
	Jobs []ReplicaJob
	// Kinds are the handler kinds this replica runs stored schedules of
	// (RegisterKind), sorted (the store keeps the order). Nil when none.
	// Sent and kept with Jobs: a heartbeat with JobsUnchanged carries none
	// and keeps the stored ones. Unlike Jobs they are few, and always read
	// back: on every row a heartbeat, ReplicaList or MonitorSnapshot
	// returns, JobsUnchanged or not.
	Kinds []string
	// JobsUnchanged, on a heartbeat, says the jobs are those this owner's
	// last recorded heartbeat sent: the store keeps them (Jobs must be
	// empty). On the row a heartbeat returns, it says Jobs were not read
	// back. On a row MonitorSnapshot returns, it says Jobs were left out:
	// they are those whose digest the caller named (KnownJobs). Always
	// false on rows ReplicaList returns.
	JobsUnchanged bool
	// JobsHash is a digest of Jobs, set by MonitorSnapshot on a store that
	// keeps one (PostgreSQL), else empty: the key of KnownJobs.
	JobsHash string
}

// ReplicaJob is one job as a replica registered it: the settings that must
// agree across replicas, and their hash.
type ReplicaJob struct {
	Name          string        `json:"name"`
	Schedule      string        `json:"schedule"`
	TimeZone      string        `json:"timeZone,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	LeaseTTL      time.Duration `json:"leaseTTL"`
	CatchUpWindow time.Duration `json:"catchUpWindow,omitempty"`
	Overlap       string        `json:"overlap"`
	Deadline      time.Duration `json:"deadline,omitempty"`
	MaxAttempts   int           `json:"maxAttempts"`
	RetryBackoff  time.Duration `json:"retryBackoff,omitempty"`
	Disabled      bool          `json:"disabled,omitempty"`
	// CatchUp is the catch-up policy when it is "all", with MaxCatchUp;
	// empty for the others, which the window implies (latest with one,
	// none without), so that the hash of a job registered before the
	// policy existed is unchanged.
	CatchUp    string `json:"catchUp,omitempty"`
	MaxCatchUp int    `json:"maxCatchUp,omitempty"`
	// Jitter is the job's start delay bound (cronfence.Job.Jitter); zero,
	// and so left out of the hash, for none.
	Jitter time.Duration `json:"jitter,omitempty"`
	// Exclude is the job's exclusion entries, its own and those for all
	// jobs; empty, and so left out of the hash, for none.
	Exclude []string `json:"exclude,omitempty"`
	// Hash is a digest of the settings above: two replicas registering
	// the same job differently show different hashes.
	Hash string `json:"hash"`
}

// AlertKind names one absence check.
type AlertKind string

const (
	// AlertDeadlineMissed: a slot was not completed by the job's deadline
	// after the slot instant. Subject: the job.
	AlertDeadlineMissed AlertKind = "deadline_missed"
	// AlertLeaseStuck: a lease held by one generation for longer than the
	// job's timeout or longest known run, or not renewed for more than its
	// TTL while not expired. Subject: the job.
	AlertLeaseStuck AlertKind = "lease_stuck"
	// AlertSkipStreak: more than the threshold of consecutive skips: the
	// job outgrew its interval. Subject: the job.
	AlertSkipStreak AlertKind = "skip_streak"
	// AlertFailing: the job's last slots (the threshold, 3 by default)
	// ended failed, each after its last attempt. Resolved when a slot of
	// the job succeeds. Subject: the job.
	AlertFailing AlertKind = "failing"
	// AlertSlowRun: a run lasted more than half the schedule's interval.
	// Subject: the job.
	AlertSlowRun AlertKind = "slow_run"
	// AlertConfigDrift: live replicas register one job with different
	// settings. Subject: the job.
	AlertConfigDrift AlertKind = "config_drift"
	// AlertOrphanJob: a job in the database that no live replica
	// registers. Subject: the job.
	AlertOrphanJob AlertKind = "orphan_job"
	// AlertClockOffset: a replica's clock is further from the database
	// clock than the threshold. Subject: the replica's owner.
	AlertClockOffset AlertKind = "clock_offset"
	// AlertDeposedWriter: a replica whose lease expired (deposed: frozen,
	// cut off) is still inside a transaction fenced under it, so the
	// job's slots cannot be taken over: each waits, and is given up once a
	// later slot is due. Raised by the scheduler that meets it, not by the
	// absence checks; resolved when a claim of the job finds the lease
	// takeable again. Subject: the job.
	AlertDeposedWriter AlertKind = "deposed_writer"
	// AlertKindUnknown: stored schedules name a handler kind that no
	// live replica registers (RegisterKind), so none of them runs. Subject:
	// the kind.
	AlertKindUnknown AlertKind = "kind_unknown"
)

// Alert is one row of the alerts table: an absence noticed, open until
// ResolvedAt is set.
type Alert struct {
	ID         int64
	Kind       AlertKind
	Subject    string // a job name or a replica owner, per Kind
	Message    string
	Details    map[string]string
	RaisedBy   string // the owner whose check raised it
	RaisedAt   time.Time
	LastSeenAt time.Time
	ResolvedAt time.Time // zero while open
	// Fingerprint is what the alert reports without its measures (see
	// AlertRaiseParams.Fingerprint); empty from a raiser that gives none.
	Fingerprint string
	// Ack is the operator's acknowledgement in force: zero when none, or
	// when the alert changed since. A resolved alert keeps the one it had.
	Ack AlertAck
}

// Open reports whether the alert is still open.
func (a Alert) Open() bool { return a.ResolvedAt.IsZero() }

// Acknowledged reports whether the alert is open and acknowledged: an
// operator knows of it, and until it changes it is not counted as
// alerting nor notified again.
func (a Alert) Acknowledged() bool { return a.Open() && !a.Ack.IsZero() }

// AlertAck is an operator's acknowledgement of an alert.
type AlertAck struct {
	By   string    // who acknowledged it
	At   time.Time // when, by the database clock
	Note string    // why, or what is being done; may be empty
}

// IsZero reports whether there is no acknowledgement.
func (a AlertAck) IsZero() bool { return a.At.IsZero() }

// AlertRaiseResult is what Monitor.AlertRaise returns.
type AlertRaiseResult struct {
	// Alert is the open alert as stored after the call.
	Alert Alert
	// Raised: this call opened the alert.
	Raised bool
	// EndedAck is the acknowledgement this call ended, because the alert
	// changed (its Fingerprint); zero when it ended none.
	EndedAck AlertAck
}

// AlertAcknowledgeParams are the arguments of Monitor.AlertAcknowledge.
type AlertAcknowledgeParams struct {
	Kind    AlertKind // required
	Subject string    // required
	// ID, when not zero, is the open alert the caller saw: an alert of
	// (Kind, Subject) raised since then (the first resolved, the cause
	// back) is not acknowledged in its place.
	ID   int64
	By   string // who; required, a name (see ValidateName)
	Note string // at most MaxNoteLength bytes
}

// AlertRaiseParams are the arguments of Monitor.AlertRaise. See
// AlertRaiseParams.Validate for the bounds.
type AlertRaiseParams struct {
	// Kind is one of the Alert* constants or another lower-case
	// identifier (see ValidateAlertKind). Required.
	Kind AlertKind
	// Subject is what the alert is about: a job or a replica's owner, per
	// Kind. Required; a name (see ValidateName).
	Subject string
	// Message says what is wrong, for people: at most
	// MaxAlertMessageBytes of UTF-8. It replaces the open alert's.
	Message string
	// Details are the facts behind the message, for machines and the
	// dashboard: at most MaxAlertDetails entries and MaxAlertDetailsBytes
	// of keys and values. They replace the open alert's.
	Details map[string]string
	// RaisedBy is the owner whose check raised it. Required. A refresh
	// keeps the first raiser's.
	RaisedBy string
	// Fingerprint is what the alert reports without its measures: the
	// facts whose change makes it another problem for an operator who
	// acknowledged it (a new holder of a stuck lease, a drift to yet other
	// settings), not those that move while it stays the same (how long,
	// how many). A refresh with another Fingerprint ends the alert's
	// acknowledgement. At most MaxNameLength bytes of UTF-8; empty is a
	// fingerprint like any other.
	Fingerprint string
}

// AlertListParams are the arguments of Monitor.AlertList.
type AlertListParams struct {
	OpenOnly bool      // only alerts not resolved
	Kind     AlertKind // only this kind; empty for all
	Subject  string    // only this subject; empty for all
	Limit    int       // at most MaxRunListLimit; 0 means DefaultRunListLimit
}
