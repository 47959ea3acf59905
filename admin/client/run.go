package client

// Run is one run row: an attempt at a slot, a manual run, or a skip
// recorded in its place.
type Run struct {
	// ID is the row's id.
	ID int64 `json:"id"`
	// JobID is the job's name.
	JobID string `json:"jobId"`
	// Slot is the scheduled time the run is for, null for a manual run.
	Slot *string `json:"slot"`
	// TraceID is the OpenTelemetry trace of the run's slot, 32 hex digits,
	// derived from the job and the slot (package otel's TraceID): every
	// attempt of the slot, on any replica, and the spans of a command
	// handed TRACEPARENT are in it. Absent for a manual run.
	TraceID string `json:"traceId,omitempty"`
	// Manual says it was triggered, not scheduled.
	Manual bool `json:"manual"`
	// CatchUp says its slot was claimed by catch-up: after its time, within
	// the job's catch-up window.
	CatchUp bool `json:"catchUp"`
	// Owner is the replica that ran it.
	Owner string `json:"owner"`
	// Generation is the lease generation it ran under, 0 for a skip.
	Generation int64 `json:"generation"`
	// Attempt is which attempt at its slot it was.
	Attempt int `json:"attempt"`
	// StartedAt is when it started.
	StartedAt *string `json:"startedAt"`
	// FinishedAt is when it ended.
	FinishedAt *string `json:"finishedAt"`
	// Success says it succeeded; a skip counts as one.
	Success bool `json:"success"`
	// Result says whether it was skipped, and why.
	Result RunResult `json:"result"`
	// Error is the handler's error, null for none.
	Error *string `json:"error"`
	// Logs are the lines it logged (the tail of a command's output),
	// never null.
	Logs []string `json:"logs"`
}

// RunResult is a run's "result". It is always an object, also for a run
// that was not skipped ({"skipped": false, "reason": ""}), so clients
// never test for null.
type RunResult struct {
	// Skipped says the row records a skip, not a run.
	Skipped bool `json:"skipped"`
	// Reason is a skip's reason, or "interrupted" for an attempt a replica
	// found dead (not a success; Run.Error says how it was found).
	Reason string `json:"reason"`
}

// Holder is who holds a job's lease, as a 409 CRON_JOB_ALREADY_EXECUTING
// and a running manual run name it. Fields are empty or null when it was
// not seen.
type Holder struct {
	// Owner is the replica running the job.
	Owner string `json:"owner"`
	// Generation is the lease generation it runs under.
	Generation int64 `json:"generation"`
	// AcquiredAt is when it took the lease.
	AcquiredAt *string `json:"acquiredAt"`
	// ExpiresAt is when the lease lapses unless renewed.
	ExpiresAt *string `json:"expiresAt"`
}
