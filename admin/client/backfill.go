package client

import (
	"context"
	"net/http"
	"strconv"
)

// Backfill is one backfill of a job, as the backfills endpoints answer it:
// a request to run the slots of a range that never ran (with
// includeFailed, the failed ones too), driven by a replica that registers
// the job, with its progress.
type Backfill struct {
	// ID identifies it.
	ID int64 `json:"id"`
	// Job is the job it backfills.
	Job string `json:"job"`
	// From and To are its range: the job's slots at or after from and
	// before to.
	From *string `json:"from"`
	To   *string `json:"to"`
	// IncludeFailed runs the failed slots of the range again too.
	IncludeFailed bool `json:"includeFailed"`
	// Rate is at most how many slots it starts a second; 0 for no bound
	// but one run at a time.
	Rate int `json:"rate"`
	// State is "running", "done" or "cancelled".
	State string `json:"state"`
	// Total is how many slots the range holds; Handled how many it has
	// handled (the sum of Counts).
	Total   int `json:"total"`
	Handled int `json:"handled"`
	// Cursor is the last slot handled; null before the first.
	Cursor *string `json:"cursor"`
	// Counts are the slots handled by what happened to them.
	Counts BackfillCounts `json:"counts"`
	// Driver is the replica that last recorded its progress; empty
	// before.
	Driver    string  `json:"driver"`
	CreatedBy string  `json:"createdBy"`
	CreatedAt *string `json:"createdAt"`
	UpdatedAt *string `json:"updatedAt"`
	// FinishedAt is when it was done or cancelled; null while running.
	FinishedAt *string `json:"finishedAt"`
	// CancelledBy names who cancelled it; empty otherwise.
	CancelledBy string `json:"cancelledBy,omitempty"`
}

// BackfillCounts are a backfill's slots by what happened to them.
type BackfillCounts struct {
	Ran          int `json:"ran"`          // run by it, completed
	Failed       int `json:"failed"`       // run by it, failed
	Completed    int `json:"completed"`    // completed before: never run again
	FailedBefore int `json:"failedBefore"` // failed before, left so (without includeFailed)
	Skipped      int `json:"skipped"`      // settled skipped before: final
	Running      int `json:"running"`      // another run had it
	Paused       int `json:"paused"`       // the job was paused: left untouched
	Excluded     int `json:"excluded"`     // inside an exclusion window: left untouched
	Taken        int `json:"taken"`        // claimed meanwhile by another run
}

// BackfillCreate is the body of POST …/{job}/backfills.
type BackfillCreate struct {
	// From and To are the range, RFC 3339: the job's slots at or after
	// from and before to; to not ahead of now.
	From string `json:"from"`
	To   string `json:"to"`
	// IncludeFailed runs the failed slots again too, one attempt more
	// each.
	IncludeFailed bool `json:"includeFailed,omitempty"`
	// Rate is at most how many slots it starts a second; 0 for no bound.
	Rate int `json:"rate,omitempty"`
	// DryRun answers the plan (200, a BackfillPlan) and records nothing.
	DryRun bool `json:"dryRun,omitempty"`
}

// BackfillPlan is what a backfill would do with each slot of its range,
// the answer to a dry run.
type BackfillPlan struct {
	Slots []BackfillSlot `json:"slots"`
}

// BackfillSlot is one slot of a plan, and what the backfill does with it:
// "run", "rerun" (failed; with includeFailed), "completed", "failed",
// "skipped", "running", "paused" or "excluded" (the last six untouched).
type BackfillSlot struct {
	Slot    string `json:"slot"`
	Outcome string `json:"outcome"`
}

// BackfillList is the answer of GET …/{job}/backfills, newest first.
type BackfillList struct {
	Backfills []Backfill `json:"backfills"`
}

// BackfillsPath is the path of a job's backfills: GET lists them, POST
// asks for one.
func BackfillsPath(job string) string { return JobPath(job) + "/backfills" }

// BackfillPath is the path of one backfill: GET it, DELETE cancels it.
func BackfillPath(job string, id int64) string {
	return BackfillsPath(job) + "/" + strconv.FormatInt(id, 10)
}

// CreateBackfill asks for a backfill of job; 201 with it, a 409
// BACKFILL_CONFLICT naming the running one when the job has one.
func (c *Client) CreateBackfill(ctx context.Context, job string, req BackfillCreate) (Backfill, error) {
	req.DryRun = false
	var b Backfill
	err := c.Do(ctx, http.MethodPost, BackfillsPath(job), req, &b)
	return b, err
}

// PlanBackfill answers what a backfill of job would do with each slot,
// recording nothing.
func (c *Client) PlanBackfill(ctx context.Context, job string, req BackfillCreate) (BackfillPlan, error) {
	req.DryRun = true
	var p BackfillPlan
	err := c.Do(ctx, http.MethodPost, BackfillsPath(job), req, &p)
	return p, err
}

// Backfills lists job's backfills, newest first.
func (c *Client) Backfills(ctx context.Context, job string) (BackfillList, error) {
	var l BackfillList
	err := c.Do(ctx, http.MethodGet, BackfillsPath(job), nil, &l)
	return l, err
}

// Backfill returns backfill id of job; a 404 BACKFILL_NOT_FOUND when
// there is none.
func (c *Client) Backfill(ctx context.Context, job string, id int64) (Backfill, error) {
	var b Backfill
	err := c.Do(ctx, http.MethodGet, BackfillPath(job, id), nil, &b)
	return b, err
}

// CancelBackfill cancels backfill id of job; a 409 BACKFILL_ENDED, with
// the backfill in its details, when it had ended.
func (c *Client) CancelBackfill(ctx context.Context, job string, id int64) (Backfill, error) {
	var b Backfill
	err := c.Do(ctx, http.MethodDelete, BackfillPath(job, id), nil, &b)
	return b, err
}
