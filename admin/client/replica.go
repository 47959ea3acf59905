package client

// ReplicaList is GET /api/admin/cron/replicas's answer: the replica
// registry, judged against the database clock.
type ReplicaList struct {
	// Now is the database clock the replicas were judged by.
	Now *string `json:"now"`
	// LiveFor is the bound used: a replica whose last heartbeat is older
	// is not live (a Go duration, "30s").
	LiveFor string `json:"liveFor"`
	// Replicas are the registered replicas.
	Replicas []Replica `json:"replicas"`
	// Monitor is the replica running the absence checks, null when none
	// ever has.
	Monitor *MonitorState `json:"monitor"`
}

// Live counts the live replicas.
func (l ReplicaList) Live() int {
	n := 0
	for _, r := range l.Replicas {
		if r.Live {
			n++
		}
	}
	return n
}

// Replica is one row of the replica registry. Durations are Go duration
// strings ("1m30s").
type Replica struct {
	// Owner is the replica's owner id.
	Owner string `json:"owner"`
	// Host is the host it runs on.
	Host string `json:"host"`
	// PID is its process id.
	PID int `json:"pid"`
	// Version is its cronfence version.
	Version string `json:"version"`
	// StartedAt is when it started.
	StartedAt *string `json:"startedAt"`
	// HeartbeatAt is its last heartbeat, by the database clock.
	HeartbeatAt *string `json:"heartbeatAt"`
	// HeartbeatAge is how old that heartbeat is.
	HeartbeatAge string `json:"heartbeatAge"`
	// Live says the heartbeat is within ReplicaList.LiveFor.
	Live bool `json:"live"`
	// ClockOffset is the replica's clock minus the database clock, as it
	// last measured it (positive: ahead).
	ClockOffset string `json:"clockOffset"`
	// Timers says it runs the schedules (false: an API-only replica).
	Timers bool `json:"timers"`
	// Jobs are the jobs it registered.
	Jobs []ReplicaJob `json:"jobs"`
}

// ReplicaJob is one job as a replica registered it. Durations are Go
// duration strings ("1m30s"), as in the config file.
type ReplicaJob struct {
	// Name is the job's name.
	Name string `json:"name"`
	// Schedule is its cron expression or descriptor.
	Schedule string `json:"schedule"`
	// TimeZone is the zone its schedule is read in.
	TimeZone string `json:"timeZone"`
	// Timeout bounds one run.
	Timeout string `json:"timeout"`
	// LeaseTTL is its lease's time to live.
	LeaseTTL string `json:"leaseTTL"`
	// CatchUpWindow is how late a missed slot is still run.
	CatchUpWindow string `json:"catchUpWindow"`
	// CatchUp is which missed slots run: none, latest or all.
	CatchUp string `json:"catchUp"`
	// MaxCatchUp is, with CatchUp all, how many slots back catch-up looks;
	// 0 otherwise.
	MaxCatchUp int `json:"maxCatchUp,omitempty"`
	// Jitter bounds the delay of each slot's start; "0s" for none.
	Jitter string `json:"jitter"`
	// Exclude is its exclusion windows; absent for none.
	Exclude []string `json:"exclude,omitempty"`
	// Overlap is its overlap policy.
	Overlap string `json:"overlap"`
	// Deadline is how long after its slot a run should have completed,
	// for the absence checks; "0s" for none.
	Deadline string `json:"deadline"`
	// MaxAttempts is how many attempts a slot gets.
	MaxAttempts int `json:"maxAttempts"`
	// Disabled says the replica declares it disabled.
	Disabled bool `json:"disabled"`
	// Hash is a digest of the settings above: two replicas registering
	// the same job differently show different hashes.
	Hash string `json:"hash"`
}

// MonitorState is the lease of the absence checks: who runs them, and
// when they last ran (the lease's last renewal).
type MonitorState struct {
	// Holder is the replica that runs or last ran them.
	Holder string `json:"holder"`
	// Generation is the lease's generation.
	Generation int64 `json:"generation"`
	// LastPassAt is the lease's last renewal, or its taking.
	LastPassAt *string `json:"lastPassAt"`
	// ExpiresAt is when the lease lapses unless renewed.
	ExpiresAt *string `json:"expiresAt"`
	// Active is false when the lease expired: no replica runs the checks
	// now.
	Active bool `json:"active"`
}
