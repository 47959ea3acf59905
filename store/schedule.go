package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Schedules keeps the schedules that live in the database (stored
// schedules, created and changed while replicas run), beside the jobs
// declared in code or a config file. Every change writes the schedule and
// one row of its change log in one transaction, so a replica that read
// the log up to a sequence number knows every schedule as it was then
// (ScheduleChanges), and the log is the audit (who, when, before → after).
//
// Writes are checked against the version a caller read: a stale version is
// refused with a *ConflictError, never a lost update. The store checks what
// it can see (names, lengths, JSON, numbers); the spec, zone and kind are
// checked by the scheduler before a write.
//
// Writes take turns (each locks one row first): that is what lets change
// numbers commit in order, where a sequence or an auto-increment lets n + 1
// commit before n. They are an operator's, rare, and may take a few round
// trips (three on PostgreSQL): the one exception to a round trip a call.
type Schedules interface {
	// ScheduleCreate writes a new schedule at version 1, with a new ID
	// never used before (a schedule deleted and created again under its
	// name is a new schedule). A name taken by a schedule is a
	// *ConflictError.
	ScheduleCreate(ctx context.Context, p ScheduleCreateParams) (Schedule, error)

	// ScheduleUpdate replaces the settings of the schedule p.Name if its
	// version is still p.Version, and returns it at version + 1. A stale
	// version is a *ConflictError naming the current one; a schedule that
	// does not exist is ErrNotFound.
	ScheduleUpdate(ctx context.Context, p ScheduleUpdateParams) (Schedule, error)

	// ScheduleDelete removes the schedule p.Name if its version is still
	// p.Version (any version when p.Version is 0) and returns it as it was.
	// Its runs and slots stay. A stale version is a *ConflictError; a
	// schedule that does not exist is ErrNotFound.
	ScheduleDelete(ctx context.Context, p ScheduleDeleteParams) (Schedule, error)

	// ScheduleGet returns the schedule name, or ErrNotFound.
	ScheduleGet(ctx context.Context, name string) (Schedule, error)

	// ScheduleList returns schedules in name order, after p.After, at most
	// p.Limit of them: a page. The next page starts after the last name.
	ScheduleList(ctx context.Context, p ScheduleListParams) ([]Schedule, error)

	// ScheduleChanges returns the change log after sequence p.After, oldest
	// first, at most p.Limit entries, and the newest and oldest sequence
	// numbers the log holds. A replica applies them in order to what it
	// loaded; when p.After is older than the oldest entry kept, entries
	// are missing and it loads every schedule again (ScheduleList).
	// Sequence numbers commit in order: a reader never sees seq n+1
	// before seq n.
	ScheduleChanges(ctx context.Context, p ScheduleChangesParams) (ScheduleChanges, error)

	// ScheduleAudit returns the change log newest first: of the schedule
	// named p.Name (every one's when empty), before sequence p.Before (from
	// the newest when 0), at most p.Limit entries.
	ScheduleAudit(ctx context.Context, p ScheduleAuditParams) ([]ScheduleChange, error)
}

const (
	// MaxScheduleArgsBytes bounds a stored schedule's arguments.
	MaxScheduleArgsBytes = 64 << 10
	// MaxScheduleSpecLength bounds a stored schedule's spec.
	MaxScheduleSpecLength = 200
	// DefaultScheduleListLimit and MaxScheduleListLimit bound a page of
	// ScheduleList, ScheduleChanges and ScheduleAudit.
	DefaultScheduleListLimit = 100
	MaxScheduleListLimit     = 10_000
)

// ScheduleSettings are what a schedule's owner sets: the schedule, the
// handler's kind and arguments, and the job settings of Job in package
// cronfence, with the same meaning and defaults (zero: the default).
type ScheduleSettings struct {
	Spec     string `json:"spec"`               // a cron spec, as Job.Schedule
	TimeZone string `json:"timeZone,omitempty"` // an IANA zone; empty for UTC
	Kind     string `json:"kind"`               // the handler's kind (RegisterKind)
	// Args are the handler's arguments: JSON, at most MaxScheduleArgsBytes.
	// A store gives them back as they were given, byte for byte, in the
	// schedule and in its changes' settings; empty is none (nil).
	Args json.RawMessage `json:"args,omitempty"`

	Overlap       string        `json:"overlap,omitempty"` // "skip", "allow" or "buffer-one"; empty for skip
	CatchUpWindow time.Duration `json:"catchUpWindow,omitempty"`
	LeaseTTL      time.Duration `json:"leaseTTL,omitempty"`
	Timeout       time.Duration `json:"timeout,omitempty"`
	Deadline      time.Duration `json:"deadline,omitempty"`
	MaxAttempts   int           `json:"maxAttempts,omitempty"`
	RetryBackoff  time.Duration `json:"retryBackoff,omitempty"`
	Disabled      bool          `json:"disabled,omitempty"`
	CatchUp       string        `json:"catchUp,omitempty"`    // "none", "latest" or "all"; empty for the default
	MaxCatchUp    int           `json:"maxCatchUp,omitempty"` // with CatchUp all; 0 for the default
	Jitter        time.Duration `json:"jitter,omitempty"`     // the start delay's bound; 0 for none
	// Exclude is the exclusion windows (cronfence.Job.Exclude); nil for
	// none. At most MaxExclusions entries, each at most
	// MaxExclusionLength bytes.
	Exclude []string `json:"exclude,omitempty"`
}

// Schedule is a stored schedule as the store holds it.
type Schedule struct {
	ID   int64 // never reused: a schedule created again under a name has a new one
	Name string
	ScheduleSettings
	Version   int64 // 1 when created, one more at every update
	CreatedAt time.Time
	CreatedBy string
	UpdatedAt time.Time // CreatedAt until the first update
	UpdatedBy string
}

// ScheduleCreateParams are the arguments of ScheduleCreate.
type ScheduleCreateParams struct {
	Name     string // a job name (ValidateName), at most MaxScheduleNameLength bytes
	Settings ScheduleSettings
	By       string // who; a name
}

// MaxCatchUp bounds how many slots back a catch-up of policy all looks
// (cronfence.MaxCatchUpLimit): each slot looked at costs a claim at every
// start-up.
const MaxCatchUp = 10000

// MaxExclusions bounds a schedule's exclusion entries, as
// schedule.MaxExclusions bounds a job's.
const MaxExclusions = 100

// MaxExclusionLength bounds one exclusion entry: a range of two RFC 3339
// instants is under 60 bytes, five cron fields rarely over 100.
const MaxExclusionLength = 200

// MaxScheduleNameLength is the job name limit of package cronfence
// (MaxJobNameLength), which leaves room in lease names for the slot.
const MaxScheduleNameLength = 150

// ScheduleUpdateParams are the arguments of ScheduleUpdate.
type ScheduleUpdateParams struct {
	Name     string
	Version  int64 // the version read; at least 1
	Settings ScheduleSettings
	By       string
}

// ScheduleDeleteParams are the arguments of ScheduleDelete.
type ScheduleDeleteParams struct {
	Name    string
	Version int64 // the version read; 0 for any
	By      string
}

// ScheduleListParams are the arguments of ScheduleList.
type ScheduleListParams struct {
	After string // the last name of the previous page; empty for the first
	Limit int    // at most MaxScheduleListLimit; 0 means DefaultScheduleListLimit
}

// ScheduleChangesParams are the arguments of ScheduleChanges.
type ScheduleChangesParams struct {
	After int64 // the last sequence number applied; 0 for the whole log
	Limit int   // at most MaxScheduleListLimit; 0 means DefaultScheduleListLimit
}

// ScheduleAuditParams are the arguments of ScheduleAudit.
type ScheduleAuditParams struct {
	Name   string // one schedule's changes; empty for every schedule's
	Before int64  // only changes with a smaller sequence number; 0 for the newest
	Limit  int    // at most MaxScheduleListLimit; 0 means DefaultScheduleListLimit
}

// ScheduleChanges is a part of the change log.
type ScheduleChanges struct {
	Changes []ScheduleChange
	Latest  int64 // the newest sequence number in the log (0 when empty)
	Oldest  int64 // the oldest kept (0 when empty)
}

// ScheduleAction is what a change did.
type ScheduleAction string

const (
	ScheduleCreated ScheduleAction = "create"
	ScheduleUpdated ScheduleAction = "update"
	ScheduleDeleted ScheduleAction = "delete"
)

// ScheduleChange is one entry of the change log: the schedule as it was
// before the change and after it (nil before a create, nil after a delete).
type ScheduleChange struct {
	Seq        int64
	Action     ScheduleAction
	Name       string
	ScheduleID int64
	Version    int64 // the version the change wrote (a delete: the last one)
	By         string
	At         time.Time // the database clock
	Before     *ScheduleSettings
	After      *ScheduleSettings
}

// ErrConflict is wrapped by *ConflictError.
var ErrConflict = errors.New("store: conflict")

// ConflictError is a write that would lose another: a create of a name
// that exists, or an update or delete of a version that is not the
// current one; or, of Kind ConflictBackfill, a backfill of a job that has
// a running one.
type ConflictError struct {
	Name    string // the schedule's; a backfill's job
	Version int64  // the version the caller gave; 0 for a create
	Current int64  // the schedule's version now; the running backfill's ID
	// Kind is empty for a stored schedule's conflict, ConflictBackfill for
	// a backfill's.
	Kind string
}

// ConflictBackfill is the Kind of a ConflictError refusing a backfill: its
// job has a running one, whose ID is Current.
const ConflictBackfill = "backfill"

func (e *ConflictError) Error() string {
	if e.Kind == ConflictBackfill {
		return fmt.Sprintf("store: job %q has a running backfill (%d)", e.Name, e.Current)
	}
	if e.Version == 0 {
		return fmt.Sprintf("store: schedule %q exists (version %d)", e.Name, e.Current)
	}
	return fmt.Sprintf("store: schedule %q is at version %d, not %d: read it again", e.Name, e.Current, e.Version)
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// Validate checks the settings as a store can: lengths, the arguments'
// JSON, the overlap policy and the numbers.
func (s ScheduleSettings) Validate() error {
	if s.Spec == "" {
		return invalid("spec must not be empty")
	}
	if err := validText("spec", s.Spec, MaxScheduleSpecLength); err != nil {
		return err
	}
	if err := validText("time zone", s.TimeZone, MaxNameLength); err != nil {
		return err
	}
	switch {
	case len(s.Args) > MaxScheduleArgsBytes:
		return invalid("args must be at most %d bytes, got %d", MaxScheduleArgsBytes, len(s.Args))
	case len(s.Args) > 0 && !json.Valid(s.Args):
		return invalid("args must be JSON")
	case !utf8.Valid(s.Args):
		return invalid("args must be valid UTF-8")
	case bytes.Contains(s.Args, []byte(`\u0000`)):
		// PostgreSQL's jsonb cannot hold it; refused on every store alike.
		return invalid("args must not contain \\u0000")
	case s.Overlap != "" && s.Overlap != "skip" && s.Overlap != "allow" && s.Overlap != "buffer-one":
		return invalid("overlap must be skip, allow or buffer-one, got %q", s.Overlap)
	case s.CatchUpWindow < 0, s.LeaseTTL < 0, s.Timeout < 0, s.Deadline < 0, s.RetryBackoff < 0, s.Jitter < 0:
		return invalid("durations must not be negative")
	case s.MaxAttempts < 0:
		return invalid("max attempts must not be negative, got %d", s.MaxAttempts)
	case s.CatchUp != "" && s.CatchUp != "none" && s.CatchUp != "latest" && s.CatchUp != "all":
		return invalid("catch-up must be none, latest or all, got %q", s.CatchUp)
	case s.MaxCatchUp < 0 || s.MaxCatchUp > MaxCatchUp:
		return invalid("max catch-up must be from 0 to %d, got %d", MaxCatchUp, s.MaxCatchUp)
	}
	if err := ValidateName("kind", s.Kind); err != nil {
		return err
	}
	if len(s.Exclude) > MaxExclusions {
		return invalid("exclude must have at most %d entries, got %d", MaxExclusions, len(s.Exclude))
	}
	for _, x := range s.Exclude {
		if err := validText("an exclude entry", x, MaxExclusionLength); err != nil {
			return err
		}
	}
	if s.LeaseTTL != 0 {
		return ValidateTTL(s.LeaseTTL)
	}
	return nil
}

// Validate checks the arguments of ScheduleCreate.
func (p ScheduleCreateParams) Validate() error {
	if err := ValidateScheduleName(p.Name); err != nil {
		return err
	}
	if err := ValidateName("by", p.By); err != nil {
		return err
	}
	return p.Settings.Validate()
}

// Validate checks the arguments of ScheduleUpdate.
func (p ScheduleUpdateParams) Validate() error {
	if err := ValidateScheduleName(p.Name); err != nil {
		return err
	}
	if p.Version < 1 {
		return invalid("version must be the version read, at least 1, got %d", p.Version)
	}
	if err := ValidateName("by", p.By); err != nil {
		return err
	}
	return p.Settings.Validate()
}

// Validate checks the arguments of ScheduleDelete.
func (p ScheduleDeleteParams) Validate() error {
	if err := ValidateScheduleName(p.Name); err != nil {
		return err
	}
	if p.Version < 0 {
		return invalid("version must not be negative, got %d", p.Version)
	}
	return ValidateName("by", p.By)
}

// Validate checks the arguments of ScheduleList and fills in the default limit.
func (p *ScheduleListParams) Validate() error {
	if err := validText("after", p.After, MaxNameLength); err != nil {
		return err
	}
	return validateScheduleLimit(&p.Limit)
}

// Validate checks the arguments of ScheduleChanges and fills in the default limit.
func (p *ScheduleChangesParams) Validate() error {
	if p.After < 0 {
		return invalid("after must not be negative, got %d", p.After)
	}
	return validateScheduleLimit(&p.Limit)
}

// Validate checks the arguments of ScheduleAudit and fills in the default limit.
func (p *ScheduleAuditParams) Validate() error {
	if p.Before < 0 {
		return invalid("before must not be negative, got %d", p.Before)
	}
	if err := validText("name", p.Name, MaxNameLength); err != nil {
		return err
	}
	return validateScheduleLimit(&p.Limit)
}

// ValidateScheduleName checks a stored schedule's name: a job name
// (ValidateName) of at most MaxScheduleNameLength bytes.
func ValidateScheduleName(name string) error {
	if len(name) > MaxScheduleNameLength {
		return invalid("name must be at most %d bytes, got %d", MaxScheduleNameLength, len(name))
	}
	return ValidateName("name", name)
}

func validateScheduleLimit(limit *int) error {
	switch {
	case *limit == 0:
		*limit = DefaultScheduleListLimit
	case *limit < 0 || *limit > MaxScheduleListLimit:
		return invalid("limit must be between 1 and %d, got %d", MaxScheduleListLimit, *limit)
	}
	return nil
}
