package client

import "encoding/json"

// ScheduleSettings are what a stored schedule's owner sets, as the
// schedules endpoints take and answer them: the settings of a job, with
// the handler's kind and its arguments. Durations are Go duration strings
// ("90s", "1h30m"); in a request, an empty one (or one left out) takes
// the job default, as does a zero MaxAttempts.
type ScheduleSettings struct {
	// Spec is the cron spec, as a job's schedule ("0 3 * * *", "@every 5m").
	Spec string `json:"spec"`
	// TimeZone is the IANA zone the spec is read in; empty for UTC.
	TimeZone string `json:"timeZone"`
	// Kind names the handler that runs it (RegisterKind, or the binary's
	// kinds:).
	Kind string `json:"kind"`
	// Args are the handler's arguments: any JSON value, at most 64 KiB;
	// null for none.
	Args json.RawMessage `json:"args"`
	// Overlap is "skip", "allow" or "buffer-one"; empty for skip.
	Overlap string `json:"overlap"`
	// CatchUpWindow is how late a missed slot is still run.
	CatchUpWindow string `json:"catchUpWindow"`
	// LeaseTTL is its lease's time to live.
	LeaseTTL string `json:"leaseTTL"`
	// Timeout bounds one run.
	Timeout string `json:"timeout"`
	// Deadline is how long after its slot a run should have completed.
	// Refused for now (400): the absence checks do not watch stored
	// schedules, so it would raise nothing.
	Deadline string `json:"deadline"`
	// MaxAttempts is how many attempts a slot gets.
	MaxAttempts int `json:"maxAttempts"`
	// RetryBackoff is the wait before the first retry.
	RetryBackoff string `json:"retryBackoff"`
	// Disabled keeps it stored but not run.
	Disabled bool `json:"disabled"`
	// CatchUp is which missed slots run: "none", "latest" or "all"; empty
	// for the default (latest with a catchUpWindow, none without).
	CatchUp string `json:"catchUp"`
	// MaxCatchUp is, with catchUp all, how many slots back catch-up
	// looks; 0 for the default (100).
	MaxCatchUp int `json:"maxCatchUp"`
	// Jitter bounds each slot's start delay, the same on every replica;
	// "0s" (or empty) for none.
	Jitter string `json:"jitter"`
	// Exclude is its exclusion windows: ranges "FROM/TO" and calendar
	// entries of five cron fields (cronfence.Job.Exclude); absent or empty
	// for none.
	Exclude []string `json:"exclude,omitempty"`
}

// Schedule is one stored schedule, as the schedules endpoints answer it.
type Schedule struct {
	// Name is its name, unique among stored schedules and declared jobs.
	Name string `json:"name"`
	// ID is never reused: a schedule deleted and created again under its
	// name has another.
	ID int64 `json:"id"`
	// Version is 1 when created and one more at every update: send it
	// back with an update or a delete.
	Version int64 `json:"version"`
	ScheduleSettings
	// CreatedAt and CreatedBy say when and by whom it was created,
	// UpdatedAt and UpdatedBy its last change (its creation until then).
	CreatedAt *string `json:"createdAt"`
	CreatedBy string  `json:"createdBy"`
	UpdatedAt *string `json:"updatedAt"`
	UpdatedBy string  `json:"updatedBy"`
}

// ScheduleCreate is the body of POST /api/admin/cron/schedules.
type ScheduleCreate struct {
	Name string `json:"name"`
	ScheduleSettings
}

// ScheduleUpdate is the body of PUT /api/admin/cron/schedules/{name}:
// the settings replace the schedule's if its version is still Version.
type ScheduleUpdate struct {
	// Version is the version read; a newer one is a 409 SCHEDULE_CONFLICT.
	Version int64 `json:"version"`
	ScheduleSettings
}

// SchedulePage is the answer of GET /api/admin/cron/schedules: a page
// of schedules in name order.
type SchedulePage struct {
	Schedules []Schedule `json:"schedules"`
	// Next is the ?after= of the next page; null on the last one.
	Next *string `json:"next"`
}

// ScheduleChange is one entry of the stored schedules' audit: who changed
// which schedule when, and its settings before and after.
type ScheduleChange struct {
	// Seq orders the changes: a later change has a larger one.
	Seq int64 `json:"seq"`
	// Action is "create", "update" or "delete".
	Action string `json:"action"`
	// Name and ScheduleID say which schedule.
	Name       string `json:"name"`
	ScheduleID int64  `json:"scheduleId"`
	// Version is the version the change wrote (a delete: the last one).
	Version int64 `json:"version"`
	// By is who: the admin token's name, or the CLI's --by.
	By string `json:"by"`
	// At is when, by the database clock.
	At *string `json:"at"`
	// Before is the settings before the change, null for a create; After
	// those after it, null for a delete.
	Before *ScheduleSettings `json:"before"`
	After  *ScheduleSettings `json:"after"`
}

// ScheduleAudit is the answer of the audit endpoints, newest first.
type ScheduleAudit struct {
	Changes []ScheduleChange `json:"changes"`
	// Next is the ?before= of the next (older) page; null on the last one.
	Next *int64 `json:"next"`
}

// ScheduleConflict is the details of a 409 SCHEDULE_CONFLICT: the
// version sent (0 for a create) and the schedule's current one.
type ScheduleConflict struct {
	Name           string `json:"name"`
	Version        int64  `json:"version"`
	CurrentVersion int64  `json:"currentVersion"`
}
