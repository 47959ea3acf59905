package adminapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// A job's backfills (see doc.go):
//
//	GET    /api/admin/cron/{job}/backfills        its backfills, newest first
//	POST   /api/admin/cron/{job}/backfills        ask for one: 201 with it; with "dryRun", 200 with the plan
//	GET    /api/admin/cron/{job}/backfills/{id}   one, with its progress
//	DELETE /api/admin/cron/{job}/backfills/{id}   cancel it
const backfillsSegment = "backfills"

// matchBackfills routes a job's path whose second segment is
// "backfills": parts are the path's segments, name the job's.
func matchBackfills(parts []string, name string) (route, bool) {
	switch {
	case len(parts) == 2:
		return route{kind: "backfills", job: name, allow: "GET, HEAD, POST"}, true
	case len(parts) == 3 && parts[2] != "":
		return route{kind: "backfill", job: name, runID: parts[2], allow: "GET, HEAD, DELETE"}, true
	}
	return route{}, false
}

// serveBackfills answers a job's backfills routes; writes are by tok.
func (a *api) serveBackfills(w http.ResponseWriter, r *http.Request, tok Identity, rt route) {
	if _, ok := a.findJob(rt.job); !ok {
		unknownJob(w, rt.job)
		return
	}
	switch {
	case rt.kind == "backfills" && r.Method == http.MethodPost:
		a.createBackfill(w, r, tok, rt.job)
	case rt.kind == "backfills":
		list, err := a.sched.Backfills(r.Context(), store.BackfillListParams{Job: rt.job})
		if err != nil {
			a.storeError(w, r, "list the backfills", err)
			return
		}
		out := client.BackfillList{Backfills: make([]client.Backfill, len(list))}
		for i, b := range list {
			out.Backfills[i] = adminview.BackfillOf(b)
		}
		writeJSON(w, http.StatusOK, out)
	default:
		id, err := strconv.ParseInt(rt.runID, 10, 64)
		if err != nil || id < 1 {
			writeError(w, http.StatusNotFound, "BACKFILL_NOT_FOUND", fmt.Sprintf("no backfill %q of job %q", rt.runID, rt.job), nil)
			return
		}
		a.backfill(w, r, tok, rt.job, id)
	}
}

// backfill answers GET and DELETE of one backfill of job.
func (a *api) backfill(w http.ResponseWriter, r *http.Request, tok Identity, job string, id int64) {
	b, err := a.sched.GetBackfill(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && b.Job != job):
		writeError(w, http.StatusNotFound, "BACKFILL_NOT_FOUND", fmt.Sprintf("no backfill %d of job %q", id, job), nil)
		return
	case err != nil:
		a.storeError(w, r, "read the backfill", err)
		return
	case r.Method != http.MethodDelete:
		writeJSON(w, http.StatusOK, adminview.BackfillOf(b))
		return
	}
	b, err = a.sched.CancelBackfill(r.Context(), id, tok.Name)
	switch {
	case errors.Is(err, cronfence.ErrBackfillEnded):
		writeError(w, http.StatusConflict, "BACKFILL_ENDED", fmt.Sprintf("backfill %d of job %q is %s already", id, job, b.State), adminview.BackfillOf(b))
	case err != nil:
		a.storeError(w, r, "cancel the backfill", err)
	default:
		writeJSON(w, http.StatusOK, adminview.BackfillOf(b))
	}
}

// createBackfill asks for a backfill of job, or answers its plan.
func (a *api) createBackfill(w http.ResponseWriter, r *http.Request, tok Identity, job string) {
	var body client.BackfillCreate
	if !a.decodeBody(w, r, &body) {
		return
	}
	p := cronfence.BackfillParams{IncludeFailed: body.IncludeFailed, Rate: body.Rate, By: tok.Name}
	for _, f := range []struct {
		field, text string
		to          *time.Time
	}{{"from", body.From, &p.From}, {"to", body.To, &p.To}} {
		t, err := time.Parse(time.RFC3339, f.text)
		if err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT",
				fmt.Sprintf("%s: %q is not an RFC 3339 instant such as 2026-12-01T00:00:00Z", f.field, f.text), map[string]string{"field": f.field})
			return
		}
		*f.to = t
	}
	if body.DryRun {
		plan, err := a.sched.BackfillPlan(r.Context(), job, p)
		if err != nil {
			a.backfillError(w, r, job, err)
			return
		}
		writeJSON(w, http.StatusOK, adminview.BackfillPlanOf(plan))
		return
	}
	b, err := a.sched.Backfill(r.Context(), job, p)
	if err != nil {
		a.backfillError(w, r, job, err)
		return
	}
	// Relative to this request's path (…/{job}/backfills).
	w.Header().Set("Location", backfillsSegment+"/"+strconv.FormatInt(b.ID, 10))
	writeJSON(w, http.StatusCreated, adminview.BackfillOf(b))
}

// backfillError answers a refused backfill: 409 naming the running one,
// 400 naming the field, 503 otherwise.
func (a *api) backfillError(w http.ResponseWriter, r *http.Request, job string, err error) {
	var conflict *store.ConflictError
	switch {
	case errors.As(err, &conflict):
		writeError(w, http.StatusConflict, "BACKFILL_CONFLICT",
			fmt.Sprintf("job %q has a running backfill (%d): wait for it, or cancel it", job, conflict.Current),
			map[string]int64{"running": conflict.Current})
	case errors.Is(err, cronfence.ErrUnknownJob):
		unknownJob(w, job)
	case errors.Is(err, store.ErrInvalidArgument):
		msg := strings.ReplaceAll(strings.TrimSuffix(err.Error(), "\n"+store.ErrInvalidArgument.Error()), "\n", ": ")
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", msg, nil)
	default:
		a.storeError(w, r, "backfill", err)
	}
}
