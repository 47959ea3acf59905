package dashboard

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// jobBackfills is how many of a job's backfills its page lists, newest
// first.
const jobBackfills = 20

// backfillView is one backfill as a job's page shows it.
type backfillView struct {
	ID            int64
	State         string // "running", "done" or "cancelled"
	From, To      stamp
	IncludeFailed bool
	Rate          int // 0: no bound
	Total         int
	Handled       int
	Pct           int // Handled of Total, in percent, rounded down
	Ran, Failed   int
	// Others are the other counts that are not zero, in the API's order.
	Others      []backfillCount
	Cursor      stamp // the last slot handled
	Driver      string
	CreatedBy   string
	Created     stamp
	Finished    stamp
	CancelledBy string
	// CanCancel: the page's token may act and the backfill runs: show
	// the Cancel button.
	CanCancel bool
}

type backfillCount struct {
	Name string
	N    int
}

// backfillOf is the view of b in the job's zone loc, relative to now;
// admin: the page's token may act.
func backfillOf(b client.Backfill, loc *time.Location, now time.Time, admin bool) backfillView {
	c := b.Counts
	v := backfillView{
		ID: b.ID, State: b.State, From: parseAt(b.From, loc, time.Time{}), To: parseAt(b.To, loc, time.Time{}),
		IncludeFailed: b.IncludeFailed, Rate: b.Rate, Total: b.Total, Handled: b.Handled, Ran: c.Ran, Failed: c.Failed,
		Cursor: parseAt(b.Cursor, loc, time.Time{}), Driver: b.Driver, CreatedBy: b.CreatedBy,
		Created: parseAt(b.CreatedAt, loc, now), Finished: parseAt(b.FinishedAt, loc, now), CancelledBy: b.CancelledBy,
		CanCancel: admin && b.State == string(store.BackfillRunning),
	}
	if b.Total > 0 {
		v.Pct = min(100, b.Handled*100/b.Total)
	}
	for _, o := range []backfillCount{
		{"completed before", c.Completed}, {"failed before", c.FailedBefore}, {"skipped", c.Skipped},
		{"running elsewhere", c.Running}, {"paused", c.Paused}, {"excluded", c.Excluded}, {"taken", c.Taken},
	} {
		if o.N != 0 {
			v.Others = append(v.Others, o)
		}
	}
	return v
}

// backfills reads the newest backfills of job for its page.
func (d *dashboard) backfills(r *http.Request, job string, loc *time.Location, now time.Time, admin bool) ([]backfillView, error) {
	list, err := d.sched.Backfills(r.Context(), store.BackfillListParams{Job: job, Limit: jobBackfills})
	if err != nil {
		return nil, err
	}
	out := make([]backfillView, 0, len(list))
	for _, b := range list {
		out = append(out, backfillOf(adminview.BackfillOf(b), loc, now, admin))
	}
	return out, nil
}

// ProgressLabel is a backfill's progress as text: "12 of 40 slots (30%)".
func (v backfillView) ProgressLabel() string {
	return strconv.Itoa(v.Handled) + " of " + strconv.Itoa(v.Total) + " slots (" + strconv.Itoa(v.Pct) + "%)"
}
