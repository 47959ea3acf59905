package adminapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/internal/adminview"
	"github.com/cronfence/cronfence/store"
)

// apiError is the body of every error answer.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details"` // an object, or null
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string, details any) {
	writeJSON(w, status, apiError{Code: code, Message: msg, Details: details})
}

// storeError answers a store failure: 400 for invalid input, 503 otherwise.
func (a *api) storeError(w http.ResponseWriter, r *http.Request, op string, err error) {
	if errors.Is(err, store.ErrInvalidArgument) {
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", err.Error(), nil)
		return
	}
	a.log.Error("adminapi: store unavailable", "op", op, "method", r.Method, "path", r.URL.Path, "error", err)
	writeError(w, http.StatusServiceUnavailable, "STORE_UNAVAILABLE", op+": the store is unavailable: "+err.Error(), nil)
}

// Declared is the jobs of infos as the views read them; the dashboard
// uses it too.
func Declared(infos ...cronfence.JobInfo) []adminview.Declared {
	out := make([]adminview.Declared, len(infos))
	for i, info := range infos {
		j := info.Job
		out[i] = adminview.Declared{
			Name: j.Name, Schedule: j.Schedule, TimeZone: j.TimeZone, Overlap: string(j.Overlap),
			Disabled: j.Disabled, Next: info.Next, Jitter: j.Jitter, Starts: info.Starts, Exclude: info.Exclusions,
		}
	}
	return out
}

// findJob returns the registered job called name.
func (a *api) findJob(name string) (cronfence.JobInfo, bool) {
	for _, info := range a.sched.Jobs() {
		if info.Job.Name == name {
			return info, true
		}
	}
	return cronfence.JobInfo{}, false
}

func (a *api) listJobs(w http.ResponseWriter, r *http.Request) {
	vs, op, err := adminview.Jobs(r.Context(), a.sched.Store(), Declared(a.sched.Jobs()...))
	if err != nil {
		a.storeError(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobs": vs})
}

func unknownJob(w http.ResponseWriter, name string) {
	writeError(w, http.StatusNotFound, "CRON_JOB_NOT_FOUND", fmt.Sprintf("no job named %q is registered", name), map[string]string{"jobId": name})
}

func (a *api) getJob(w http.ResponseWriter, r *http.Request, name string) {
	info, ok := a.findJob(name)
	if !ok {
		unknownJob(w, name)
		return
	}
	vs, op, err := adminview.Jobs(r.Context(), a.sched.Store(), Declared(info))
	if err != nil {
		a.storeError(w, r, op, err)
		return
	}
	writeJSON(w, http.StatusOK, vs[0])
}

// putBody is PUT /api/admin/cron/{job}'s body. Enabled is kept raw so an
// absent key (nil) differs from null ("null").
type putBody struct {
	Enabled json.RawMessage `json:"enabled"`
	Note    string          `json:"note"`
	// Until, with enabled false, ends the pause at that instant (RFC
	// 3339): Scheduler.PauseUntil.
	Until string `json:"until"`
}

// decodeBody decodes exactly one JSON object into v, refusing unknown
// fields, trailing data and a body over the limit; it answers the error
// itself and returns false.
func (a *api) decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	return a.decodeBodyUpTo(w, r, v, a.maxBody)
}

// decodeBodyUpTo is decodeBody with a body of at most limit bytes.
func (a *api) decodeBodyUpTo(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	// A body sent as another type (a form, text) is refused rather than
	// read as JSON; no Content-Type at all is taken for JSON.
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			msg := fmt.Sprintf("the body must be JSON, sent with the header \"Content-Type: application/json\"; got Content-Type %q", ct)
			if mt == "application/x-www-form-urlencoded" {
				// What curl -d sends unless told otherwise: the first
				// request most people try.
				msg += " (what curl -d sends: add -H 'Content-Type: application/json')"
			}
			writeError(w, http.StatusUnsupportedMediaType, "UNSUPPORTED_MEDIA_TYPE", msg, map[string]string{"contentType": "application/json"})
			return false
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if err2 := dec.Decode(&struct{}{}); err2 != io.EOF {
			err = errors.New("trailing data after the JSON object")
			if err2 != nil {
				err = err2
			}
		}
	}
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "BODY_TOO_LARGE",
			fmt.Sprintf("the request body is over %d bytes", limit), map[string]int64{"limit": limit})
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "MALFORMED_BODY", "the request body is empty; expected a JSON object", nil)
	default:
		writeError(w, http.StatusBadRequest, "MALFORMED_BODY", "malformed request body: "+err.Error(), nil)
	}
	return false
}

// putJob sets or removes the job's override. It answers the job's whole
// state, as GET does, read after the change was saved; should that read
// fail, the change stands all the same, so it answers 200 with the state
// it knows (lastRun and lease null) rather than a 503, which must mean
// nothing changed.
func (a *api) putJob(w http.ResponseWriter, r *http.Request, by, name string) {
	info, ok := a.findJob(name)
	if !ok {
		unknownJob(w, name)
		return
	}
	var body putBody
	if !a.decodeBody(w, r, &body) {
		return
	}
	var enabled *bool
	switch string(body.Enabled) {
	case "":
		writeError(w, http.StatusBadRequest, "MALFORMED_BODY", `"enabled" is required: true, false, or null to remove the override`, nil)
		return
	case "null":
	case "true", "false":
		b := string(body.Enabled) == "true"
		enabled = &b
	default:
		writeError(w, http.StatusBadRequest, "MALFORMED_BODY", `"enabled" must be true, false or null, got `+string(body.Enabled), nil)
		return
	}
	var st store.JobState
	var err error
	if body.Until != "" {
		until, perr := time.Parse(time.RFC3339Nano, body.Until)
		switch {
		case perr != nil:
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf(`"until" must be an RFC 3339 instant such as 2026-12-24T08:00:00Z, got %q`, body.Until), nil)
			return
		case enabled == nil || *enabled:
			writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", `"until" ends a pause: send it with "enabled": false`, nil)
			return
		}
		st, err = a.sched.PauseUntil(r.Context(), name, until, by, body.Note)
	} else {
		st, err = a.sched.SetEnabled(r.Context(), name, enabled, by, body.Note)
	}
	switch {
	case errors.Is(err, cronfence.ErrUnknownJob):
		unknownJob(w, name)
		return
	case errors.Is(err, store.ErrInvalidArgument):
		writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", strings.TrimPrefix(err.Error(), "cronfence: "), nil)
		return
	case err != nil:
		a.storeError(w, r, "save the override", err)
		return
	}
	vs, _, err := adminview.Jobs(r.Context(), a.sched.Store(), Declared(info))
	if err != nil {
		a.log.Warn("cronfence: admin API: the override is saved, but the job's state could not be read back", "job", name, "error", err)
		writeJSON(w, http.StatusOK, adminview.JobOf(Declared(info)[0], &st, st.OverrideAt))
		return
	}
	writeJSON(w, http.StatusOK, vs[0])
}

// runJob starts a manual run: 202 with the run, 409 when a run holds the
// job's lease (details.log is the skip row recorded for the refusal).
func (a *api) runJob(w http.ResponseWriter, r *http.Request, name string) {
	run, err := a.sched.Trigger(r.Context(), name)
	var busy *cronfence.AlreadyExecutingError
	switch {
	case err == nil:
		id := RunID(run.Lease, run.Generation)
		// Relative to this request's path (…/{job}/run), so it holds
		// under whatever prefix the API is mounted at.
		w.Header().Set("Location", "runs/"+id)
		writeJSON(w, http.StatusAccepted, map[string]any{
			"jobId": run.Job, "runId": id, "generation": run.Generation, "owner": run.Owner, "startedAt": adminview.Time(run.StartedAt),
		})
	case errors.As(err, &busy):
		skip := busy.Skip
		if skip.ID == 0 { // the skip row could not be recorded: answer its shape all the same
			skip.Job, skip.Manual, skip.Success, skip.Skipped = name, true, true, true
			skip.Reason = string(store.ClaimHeld)
			skip.Logs = []string{"Skipped: the previous run has not finished"}
		}
		writeError(w, http.StatusConflict, "CRON_JOB_ALREADY_EXECUTING",
			fmt.Sprintf("job %q is already executing (lease held by %s at generation %d)", name, busy.Holder.Owner, busy.Holder.Generation),
			map[string]any{"log": adminview.RunOf(skip), "holder": adminview.HolderOf(busy.Holder)})
	case errors.Is(err, cronfence.ErrUnknownJob):
		unknownJob(w, name)
	case errors.Is(err, cronfence.ErrNotStarted):
		writeError(w, http.StatusServiceUnavailable, "SCHEDULER_NOT_RUNNING", "the scheduler is not running", nil)
	default:
		a.storeError(w, r, "trigger", err)
	}
}

// logs answers a job's runs. A job no longer registered (a deleted
// stored schedule, a job taken out of the code) keeps its history: its
// runs are answered while any is kept; 404 only when there is none. A
// name no store accepts never had a run: 404 too, as for any unknown job.
func (a *api) logs(w http.ResponseWriter, r *http.Request, name string) {
	_, registered := a.findJob(name)
	if !registered && store.ValidateName("job", name) != nil {
		unknownJob(w, name)
		return
	}
	limit, ok := queryLimit(w, r, client.DefaultLogsLimit, client.MaxLogsLimit)
	if !ok {
		return
	}
	runs, err := a.sched.Store().RunList(r.Context(), store.RunListParams{Job: name, Limit: limit})
	if err != nil {
		a.storeError(w, r, "list runs", err)
		return
	}
	if !registered && len(runs) == 0 {
		unknownJob(w, name)
		return
	}
	out := make([]client.Run, 0, len(runs))
	for _, run := range runs {
		out = append(out, adminview.RunOf(run))
	}
	writeJSON(w, http.StatusOK, map[string]any{"jobId": name, "logs": out})
}

// readyz answers 200 when the store answers and its schema is the one this
// binary knows, else 503 with the reason.
func (a *api) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	db, bin, err := a.sched.Store().SchemaVersion(ctx)
	switch {
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "STORE_UNAVAILABLE", "the store does not answer: "+err.Error(), nil)
	case db != bin:
		writeError(w, http.StatusServiceUnavailable, "SCHEMA_MISMATCH", (&store.SchemaVersionError{Database: db, Binary: bin}).Error(),
			map[string]int{"database": db, "binary": bin})
	default:
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "schemaVersion": db})
	}
}

// RunID names a run by its holding (lease name and generation), which its
// run row keeps, so a run can be asked for before its row exists: the
// lease name in unpadded URL-safe base64, a dot, the generation.
func RunID(lease string, generation int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lease)) + "." + strconv.FormatInt(generation, 10)
}

// parseRunID reads a RunID back.
func parseRunID(id string) (lease string, generation int64, ok bool) {
	enc, gen, found := strings.Cut(id, ".")
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	g, err2 := strconv.ParseInt(gen, 10, 64)
	if !found || err != nil || err2 != nil || g < 1 {
		return "", 0, false
	}
	return string(raw), g, true
}

// getRun answers one run by the id POST …/run gave: "finished" with its
// row once its end is recorded, "running" until then (its lease is held
// at its generation, or this replica, which started it, has not ended it
// yet), else 404: it never was, its replica stopped before recording its
// end, or its row was pruned.
//
// The lease is read before the row: a run's row is written together with
// the release of its lease, so a run whose end lands between the two reads
// is seen held and then finished; read the other way round, it would be
// seen neither as a row nor as a held lease.
func (a *api) getRun(w http.ResponseWriter, r *http.Request, name, id string) {
	if _, ok := a.findJob(name); !ok {
		unknownJob(w, name)
		return
	}
	lease, gen, ok := parseRunID(id)
	if !ok || (lease != "job:"+name && !strings.HasPrefix(lease, "job:"+name+"@")) {
		writeError(w, http.StatusNotFound, "RUN_NOT_FOUND", fmt.Sprintf("%q is not the id of a run of job %q", id, name), map[string]string{"jobId": name, "runId": id})
		return
	}
	st := a.sched.Store()
	// Before any read: a run that ends after this still has its row
	// written before the row is read below.
	mine, ending := a.sched.ManualRunning(lease, gen)
	l, err := st.LeaseGet(r.Context(), lease)
	switch {
	case errors.Is(err, store.ErrNotFound):
		l = store.Lease{}
	case err != nil:
		a.storeError(w, r, "read lease", err)
		return
	}
	held := false
	if l.Generation == gen {
		now, err := st.Now(r.Context())
		if err != nil {
			a.storeError(w, r, "read the database clock", err)
			return
		}
		held = l.ExpiresAt.After(now)
	}
	run, err := st.RunGet(r.Context(), lease, gen)
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, map[string]any{"jobId": name, "runId": id, "state": "finished", "run": adminview.RunOf(run)})
	case !errors.Is(err, store.ErrNotFound):
		a.storeError(w, r, "read the run", err)
	case held:
		writeJSON(w, http.StatusOK, map[string]any{"jobId": name, "runId": id, "state": "running", "run": nil, "holder": adminview.HolderOf(l)})
	case ending:
		// Its end is being recorded, its lease lapsed meanwhile or taken
		// at a newer generation: the holder is still this run.
		h := client.Holder{Owner: mine.Owner, Generation: mine.Generation, AcquiredAt: adminview.Time(mine.StartedAt)}
		if l.Generation == gen {
			h.ExpiresAt = adminview.Time(l.ExpiresAt)
		}
		writeJSON(w, http.StatusOK, map[string]any{"jobId": name, "runId": id, "state": "running", "run": nil, "holder": h})
	default:
		writeError(w, http.StatusNotFound, "RUN_NOT_FOUND",
			fmt.Sprintf("no run %s of job %q: it never started, its replica stopped before recording its end, or its row was pruned", id, name),
			map[string]string{"jobId": name, "runId": id})
	}
}
