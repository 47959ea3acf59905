package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/store/sqlite"
)

const (
	adminSecret = "admin-s3cret"
	readSecret  = "read-s3cret"
)

var silent = slog.New(slog.NewTextHandler(io.Discard, nil))

type bundle struct {
	srv     *httptest.Server
	sched   *cronfence.Scheduler
	store   *sqlite.Store
	path    string        // the database file
	release chan struct{} // closing it lets the "slow" job's runs end
	started chan struct{} // receives when a run of "slow" starts
}

// setup starts a real scheduler (timers off: only manual runs) on a
// migrated SQLite file of the test's own, with jobs "slow" (blocks until
// release is closed) and "quiet" (declared disabled), behind the API.
func setup(t *testing.T, opts *adminapi.Options) *bundle {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cronfence.db")
	st, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b := &bundle{store: st, path: path, release: make(chan struct{}), started: make(chan struct{}, 10)}
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "replica-1", ShutdownGrace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b.sched = sched
	must(t, sched.Register(cronfence.Job{
		Name: "slow", Schedule: "0 6 * * *", TimeZone: "Europe/Lisbon",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			run.Logger.Info("slow started")
			b.started <- struct{}{}
			select {
			case <-b.release:
			case <-ctx.Done():
			}
			return nil
		},
	}))
	must(t, sched.Register(cronfence.Job{
		Name: "quiet", Schedule: "@hourly", Disabled: true,
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil },
	}))
	must(t, sched.Start(ctx))
	b.srv = httptest.NewServer(adminapi.New(sched, []adminapi.Token{
		{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
		{Name: "dash", Role: adminapi.RoleRead, Secret: readSecret},
	}, opts))
	t.Cleanup(func() {
		b.srv.Close()
		select {
		case <-b.release:
		default:
			close(b.release)
		}
		if err := sched.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
		_ = st.Close()
	})
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// do sends a request and decodes a JSON answer into out (when not nil).
func (b *bundle) do(t *testing.T, method, path, token, body string, out any) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	must(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d, body %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp
}

type apiErr struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// wantErr checks an error answer's status and code.
func (b *bundle) wantErr(t *testing.T, method, path, token, body string, status int, code string) *http.Response {
	t.Helper()
	var e apiErr
	resp := b.do(t, method, path, token, body, &e)
	if resp.StatusCode != status || e.Code != code || e.Message == "" {
		t.Fatalf("%s %s: got %d %+v, want %d %s", method, path, resp.StatusCode, e, status, code)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("%s %s: Content-Type %q", method, path, ct)
	}
	return resp
}

type runJSON struct {
	ID         int64   `json:"id"`
	JobID      string  `json:"jobId"`
	Slot       *string `json:"slot"`
	Manual     bool    `json:"manual"`
	CatchUp    bool    `json:"catchUp"`
	Owner      string  `json:"owner"`
	Generation int64   `json:"generation"`
	Attempt    int     `json:"attempt"`
	StartedAt  *string `json:"startedAt"`
	FinishedAt *string `json:"finishedAt"`
	Success    bool    `json:"success"`
	Result     *struct {
		Skipped bool   `json:"skipped"`
		Reason  string `json:"reason"`
	} `json:"result"`
	Error *string  `json:"error"`
	Logs  []string `json:"logs"`
}

type jobJSON struct {
	Name            string  `json:"name"`
	Schedule        string  `json:"schedule"`
	TimeZone        string  `json:"timeZone"`
	Overlap         string  `json:"overlap"`
	Next            *string `json:"next"`
	DeclaredEnabled bool    `json:"declaredEnabled"`
	Override        *struct {
		Enabled *bool   `json:"enabled"`
		By      string  `json:"by"`
		At      *string `json:"at"`
		Note    string  `json:"note"`
	} `json:"override"`
	Enabled bool     `json:"enabled"`
	LastRun *runJSON `json:"lastRun"`
	Lease   *struct {
		Holder     string  `json:"holder"`
		Generation int64   `json:"generation"`
		ExpiresAt  *string `json:"expiresAt"`
		Active     bool    `json:"active"`
	} `json:"lease"`
}

func TestHealthAndReady(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	resp := b.do(t, "GET", "/healthz", "", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	var ready map[string]any
	if resp := b.do(t, "GET", "/readyz", "", "", &ready); resp.StatusCode != 200 || ready["status"] != "ready" {
		t.Fatalf("/readyz: %d %v", resp.StatusCode, ready)
	}
	b.wantErr(t, "POST", "/healthz", "", "", 405, "METHOD_NOT_ALLOWED")
	must(t, b.store.Close())
	b.wantErr(t, "GET", "/readyz", "", "", 503, "STORE_UNAVAILABLE")
}

// An unmigrated database is not ready.
func TestReadyzSchemaMismatch(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent})
	must(t, err)
	srv := httptest.NewServer(adminapi.New(sched, nil, nil))
	t.Cleanup(srv.Close)
	b := &bundle{srv: srv}
	b.wantErr(t, "GET", "/readyz", "", "", 503, "SCHEMA_MISMATCH")
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, tok := range []string{"", "wrong", adminSecret + "x", "Bearer"} {
		resp := b.wantErr(t, "GET", "/api/admin/cron", tok, "", 401, "UNAUTHORIZED")
		if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("token %q: WWW-Authenticate %q", tok, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// Unknown paths under the prefix are not revealed to anonymous callers.
	b.wantErr(t, "GET", "/api/admin/cron/slow/nope", "", "", 401, "UNAUTHORIZED")
	// A token in a cookie does not count.
	req, _ := http.NewRequest("PUT", b.srv.URL+"/api/admin/cron/slow", strings.NewReader(`{"enabled":false}`))
	req.AddCookie(&http.Cookie{Name: "token", Value: adminSecret})
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("cookie token: %d", resp.StatusCode)
	}
	// A read token reads but may not write.
	if resp := b.do(t, "GET", "/api/admin/cron", readSecret, "", nil); resp.StatusCode != 200 {
		t.Fatalf("read token GET: %d", resp.StatusCode)
	}
	b.wantErr(t, "PUT", "/api/admin/cron/slow", readSecret, `{"enabled":false}`, 403, "FORBIDDEN")
	b.wantErr(t, "POST", "/api/admin/cron/slow/run", readSecret, "", 403, "FORBIDDEN")
	// The lowercase scheme is accepted too.
	req, _ = http.NewRequest("GET", b.srv.URL+"/api/admin/cron", nil)
	req.Header.Set("Authorization", "bearer "+readSecret)
	resp, err = b.srv.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("lowercase bearer: %d", resp.StatusCode)
	}
}

// With no token configured, the API is closed.
func TestNoTokensIsClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	srv := httptest.NewServer(adminapi.New(b.sched, []adminapi.Token{{Name: "empty", Role: adminapi.RoleAdmin}}, nil))
	t.Cleanup(srv.Close)
	nb := &bundle{srv: srv}
	nb.wantErr(t, "GET", "/api/admin/cron", "", "", 401, "UNAUTHORIZED")
	nb.wantErr(t, "GET", "/api/admin/cron", "anything", "", 401, "UNAUTHORIZED")
	srv2 := httptest.NewServer(adminapi.New(b.sched, nil, nil))
	t.Cleanup(srv2.Close)
	(&bundle{srv: srv2}).wantErr(t, "GET", "/api/admin/cron", adminSecret, "", 401, "UNAUTHORIZED")
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.wantErr(t, "GET", "/api/admin/cron/nope", adminSecret, "", 404, "CRON_JOB_NOT_FOUND")
	b.wantErr(t, "PUT", "/api/admin/cron/nope", adminSecret, `{"enabled":false}`, 404, "CRON_JOB_NOT_FOUND")
	b.wantErr(t, "POST", "/api/admin/cron/nope/run", adminSecret, "", 404, "CRON_JOB_NOT_FOUND")
	b.wantErr(t, "GET", "/api/admin/cron/nope/logs", adminSecret, "", 404, "CRON_JOB_NOT_FOUND")
	b.wantErr(t, "GET", "/api/admin/cron/slow/nope", adminSecret, "", 404, "NOT_FOUND")
	b.wantErr(t, "GET", "/elsewhere", adminSecret, "", 404, "NOT_FOUND")
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/api/admin/cron/slow", "GET, HEAD, PUT"},
		{"GET", "/api/admin/cron/slow/run", "POST"},
		{"POST", "/api/admin/cron", "GET, HEAD"},
		{"PUT", "/api/admin/cron/slow/logs", "GET, HEAD"},
	} {
		resp := b.wantErr(t, c.method, c.path, adminSecret, "", 405, "METHOD_NOT_ALLOWED")
		if got := resp.Header.Get("Allow"); got != c.allow {
			t.Fatalf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
	}
}

func TestPutValidation(t *testing.T) {
	t.Parallel()
	b := setup(t, &adminapi.Options{MaxBodyBytes: 128})
	for _, body := range []string{
		``,                                   // empty
		`{"enabled":`,                        // malformed
		`{"note":"no enabled key"}`,          // "enabled" is required
		`{"enabled":false,"paused":true}`,    // unknown field
		`{"enabled":false} {"enabled":true}`, // trailing data
		`{"enabled":"false"}`,                // not a boolean
		`[{"enabled":false}]`,                // not an object
	} {
		b.wantErr(t, "PUT", "/api/admin/cron/slow", adminSecret, body, 400, "MALFORMED_BODY")
	}
	big := `{"enabled":false,"note":"` + strings.Repeat("x", 200) + `"}`
	b.wantErr(t, "PUT", "/api/admin/cron/slow", adminSecret, big, 413, "BODY_TOO_LARGE")
	// Nothing was saved.
	var j jobJSON
	b.do(t, "GET", "/api/admin/cron/slow", adminSecret, "", &j)
	if j.Override != nil || !j.Enabled {
		t.Fatalf("after refused PUTs: %+v", j)
	}
}

func TestPauseResumeUnset(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var put jobJSON
	if resp := b.do(t, "PUT", "/api/admin/cron/slow", adminSecret, `{"enabled":false,"note":"maintenance"}`, &put); resp.StatusCode != 200 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	if put.Enabled || put.Override == nil || put.Override.Enabled == nil || *put.Override.Enabled || put.Override.By != "ops" {
		t.Fatalf("PUT answer: %+v", put)
	}
	var j jobJSON
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &j)
	if j.Enabled || !j.DeclaredEnabled || j.Override == nil || *j.Override.Enabled || j.Override.By != "ops" ||
		j.Override.Note != "maintenance" || j.Override.At == nil {
		t.Fatalf("GET after pause: %+v", j)
	}
	// Override a declared-disabled job on, then clear it.
	b.do(t, "PUT", "/api/admin/cron/quiet", adminSecret, `{"enabled":true}`, &put)
	if !put.Enabled || put.DeclaredEnabled {
		t.Fatalf("enable quiet: %+v", put)
	}
	b.do(t, "PUT", "/api/admin/cron/quiet", adminSecret, `{"enabled":null}`, &put)
	if put.Enabled || put.Override == nil || put.Override.Enabled != nil || put.Override.By != "ops" {
		t.Fatalf("unset quiet: %+v", put)
	}
	var list struct{ Jobs []jobJSON }
	if resp := b.do(t, "GET", "/api/admin/cron", readSecret, "", &list); resp.StatusCode != 200 {
		t.Fatalf("list: %d", resp.StatusCode)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].Name != "quiet" || list.Jobs[1].Name != "slow" {
		t.Fatalf("list: %+v", list)
	}
	// Neither runs: no next slot (TestNoNextSlotForAJobThatWillNotRun).
	q, s := list.Jobs[0], list.Jobs[1]
	if q.Enabled || q.TimeZone != "UTC" || q.Schedule != "@hourly" || q.Overlap != "skip" || q.Next != nil || q.LastRun != nil || q.Lease != nil {
		t.Fatalf("quiet: %+v", q)
	}
	if s.Enabled || s.TimeZone != "Europe/Lisbon" || s.Next != nil {
		t.Fatalf("slow: %+v", s)
	}
}

func TestTriggerConflictAndLogs(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var run map[string]any
	if resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", &run); resp.StatusCode != 202 {
		t.Fatalf("POST run: %d %v", resp.StatusCode, run)
	}
	if run["jobId"] != "slow" || run["owner"] != "replica-1" || run["generation"].(float64) < 1 || run["startedAt"] == nil {
		t.Fatalf("202 body: %v", run)
	}
	<-b.started
	// While it runs, the lease shows in the job.
	var j jobJSON
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &j)
	if j.Lease == nil || j.Lease.Holder != "replica-1" || !j.Lease.Active || j.Lease.Generation != int64(run["generation"].(float64)) {
		t.Fatalf("lease while running: %+v", j.Lease)
	}

	var conflict struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details struct {
			Log    runJSON `json:"log"`
			Holder struct {
				Owner      string  `json:"owner"`
				Generation int64   `json:"generation"`
				AcquiredAt *string `json:"acquiredAt"`
				ExpiresAt  *string `json:"expiresAt"`
			} `json:"holder"`
		} `json:"details"`
	}
	resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", &conflict)
	if resp.StatusCode != 409 || conflict.Code != "CRON_JOB_ALREADY_EXECUTING" || !strings.Contains(conflict.Message, "replica-1") {
		t.Fatalf("second POST: %d %+v", resp.StatusCode, conflict)
	}
	// PUT answers the job's whole state, as GET does: the lease of the
	// run in progress, and the last run (the refusal's skip row).
	var put jobJSON
	if resp := b.do(t, "PUT", "/api/admin/cron/slow", adminSecret, `{"enabled":false}`, &put); resp.StatusCode != 200 {
		t.Fatalf("PUT during the run: %d", resp.StatusCode)
	}
	if put.Enabled || put.Lease == nil || !put.Lease.Active || put.Lease.Generation != j.Lease.Generation || put.LastRun == nil {
		t.Fatalf("PUT answer %+v (lease %+v, last run %+v); want the running lease and the last run", put, put.Lease, put.LastRun)
	}
	if h := conflict.Details.Holder; h.Owner != "replica-1" || h.Generation != int64(run["generation"].(float64)) || h.AcquiredAt == nil || h.ExpiresAt == nil {
		t.Fatalf("details.holder: %+v", h)
	}
	skip := conflict.Details.Log
	if skip.ID == 0 || skip.JobID != "slow" || !skip.Success || skip.Result == nil || !skip.Result.Skipped ||
		skip.Result.Reason != "already_executing" || !skip.Manual || skip.Slot != nil || len(skip.Logs) != 1 ||
		!strings.HasPrefix(skip.Logs[0], "Skipped: the previous run has not finished") {
		t.Fatalf("details.log: %+v", skip)
	}

	close(b.release)
	// Wait for the run's row.
	var logs struct {
		JobID string    `json:"jobId"`
		Logs  []runJSON `json:"logs"`
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.do(t, "GET", "/api/admin/cron/slow/logs", readSecret, "", &logs)
		if len(logs.Logs) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs: %+v", logs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Newest first by start: the refusal came while the run ran.
	skipped, done := logs.Logs[0], logs.Logs[1]
	if skipped.ID != skip.ID || done.ID <= skip.ID {
		t.Fatalf("not newest started first: %+v", logs.Logs)
	}
	if done.JobID != "slow" || !done.Success || done.Result == nil || done.Result.Skipped || done.Result.Reason != "" ||
		!done.Manual || done.Slot != nil || done.Owner != "replica-1" || done.Generation != int64(run["generation"].(float64)) ||
		done.Attempt != 1 || done.StartedAt == nil || done.FinishedAt == nil || done.Error != nil || done.Logs == nil {
		t.Fatalf("run row: %+v", done)
	}
	var limited struct{ Logs []runJSON }
	b.do(t, "GET", "/api/admin/cron/slow/logs?limit=1", readSecret, "", &limited)
	if len(limited.Logs) != 1 || limited.Logs[0].ID != skip.ID {
		t.Fatalf("limit=1: %+v", limited)
	}
	for _, q := range []string{"0", "-1", "1001", "x", ""} {
		b.wantErr(t, "GET", "/api/admin/cron/slow/logs?limit="+q, readSecret, "", 400, "INVALID_LIMIT")
	}
	// The job now shows its last run, the newest started (as the logs'
	// first row), and a lease no longer active.
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &j)
	if j.LastRun == nil || j.LastRun.ID != skip.ID || j.Lease == nil || j.Lease.Active {
		t.Fatalf("after the run: lastRun %+v lease %+v", j.LastRun, j.Lease)
	}
}

// Every store failure is a 503, and a PUT that could not be saved changed
// nothing.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.store.Close())
	b.wantErr(t, "PUT", "/api/admin/cron/slow", adminSecret, `{"enabled":false}`, 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron", adminSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron/slow", adminSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "GET", "/api/admin/cron/slow/logs", adminSecret, "", 503, "STORE_UNAVAILABLE")
	b.wantErr(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", 503, "STORE_UNAVAILABLE")
	// Nothing changed in the database.
	st, err := sqlite.Open(context.Background(), b.path, nil)
	must(t, err)
	defer st.Close()
	states, err := st.JobStateList(context.Background())
	must(t, err)
	if len(states) != 0 {
		t.Fatalf("job states after a 503 PUT: %+v", states)
	}
}

// A job name with a slash is reached escaped.
func TestEscapedJobName(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.sched.Register(cronfence.Job{Name: "team/report", Schedule: "@daily",
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	var j jobJSON
	if resp := b.do(t, "GET", "/api/admin/cron/team%2Freport", readSecret, "", &j); resp.StatusCode != 200 || j.Name != "team/report" {
		t.Fatalf("escaped name: %d %+v", resp.StatusCode, j)
	}
}

// A job with a jitter says when its next slot's run starts, and the bound:
// the slot itself (next) does not move. One without says neither.
func TestAJobsJitterShowsWhenItsNextRunStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.sched.Register(cronfence.Job{Name: "spread", Schedule: "@hourly", Jitter: 20 * time.Minute,
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	var j client.Job
	if resp := b.do(t, "GET", "/api/admin/cron/spread", readSecret, "", &j); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if j.Next == nil || j.NextStart == nil || j.Jitter == nil || *j.Jitter != "20m0s" {
		t.Fatalf("GET spread: next %v, nextStart %v, jitter %v; want all three", j.Next, j.NextStart, j.Jitter)
	}
	next, err1 := time.Parse(time.RFC3339, *j.Next)
	starts, err2 := time.Parse(time.RFC3339Nano, *j.NextStart)
	if err1 != nil || err2 != nil || next.Minute() != 0 || starts.Before(next) || !starts.Before(next.Add(20*time.Minute)) {
		t.Fatalf("next %s, starts %s (%v, %v): want an hour's slot, and a start within its 20 minutes", *j.Next, *j.NextStart, err1, err2)
	}
	var plain client.Job
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &plain)
	if plain.NextStart != nil || plain.Jitter != nil {
		t.Fatalf("a job without a jitter shows nextStart %v, jitter %v", plain.NextStart, plain.Jitter)
	}
}

// PUT with "until" pauses a job until that instant: the answer says so,
// and the job reads paused until then. An end already past, an end with
// anything but "enabled": false and an end that is no instant are refused,
// naming it, and change nothing.
func TestPauseUntilThroughREST(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	for _, bad := range []struct{ body, says string }{
		{`{"enabled": false, "until": "` + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + `"}`, "not ahead of the database clock"},
		{`{"enabled": true, "until": "` + until.Format(time.RFC3339) + `"}`, `"until" ends a pause`},
		{`{"enabled": null, "until": "` + until.Format(time.RFC3339) + `"}`, `"until" ends a pause`},
		{`{"enabled": false, "until": "tomorrow"}`, `"until" must be an RFC 3339 instant`},
	} {
		var e struct{ Code, Message string }
		if resp := b.do(t, "PUT", "/api/admin/cron/slow", adminSecret, bad.body, &e); resp.StatusCode != 400 || e.Code != "INVALID_ARGUMENT" || !strings.Contains(e.Message, bad.says) {
			t.Errorf("PUT %s: %d %+v, want 400 saying %q", bad.body, resp.StatusCode, e, bad.says)
		}
	}
	var j client.Job
	b.do(t, "GET", "/api/admin/cron/slow", readSecret, "", &j)
	if j.Override != nil {
		t.Fatalf("refused PUTs left an override: %+v", j.Override)
	}
	if resp := b.do(t, "PUT", "/api/admin/cron/slow", adminSecret, `{"enabled": false, "until": "`+until.Format(time.RFC3339)+`", "note": "window"}`, &j); resp.StatusCode != 200 {
		t.Fatalf("PUT until: %d", resp.StatusCode)
	}
	if j.Enabled || j.Override == nil || j.Override.Until == nil || j.Override.Note != "window" {
		t.Fatalf("PUT until answered %+v (override %+v)", j, j.Override)
	}
	if got, err := time.Parse(time.RFC3339Nano, *j.Override.Until); err != nil || !got.Equal(until) {
		t.Fatalf("override until %s, want %s", *j.Override.Until, until)
	}
}

// A job's exclusion windows are shown, and its next slot passes over the
// slots they hold.
func TestAJobsExclusionsShowAndItsNextPassesOverThem(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.sched.Register(cronfence.Job{Name: "weekdays", Schedule: "0 12 * * *", Exclude: []string{"* * * * SAT,SUN"},
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	var j client.Job
	if resp := b.do(t, "GET", "/api/admin/cron/weekdays", readSecret, "", &j); resp.StatusCode != 200 {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	if len(j.Exclude) != 1 || j.Exclude[0] != "* * * * SAT,SUN" || j.Next == nil {
		t.Fatalf("GET weekdays: exclude %q, next %v", j.Exclude, j.Next)
	}
	next, err := time.Parse(time.RFC3339, *j.Next)
	if err != nil || next.Weekday() == time.Saturday || next.Weekday() == time.Sunday || next.Hour() != 12 {
		t.Fatalf("next %s (%v): want a weekday's 12:00", *j.Next, err)
	}
}

// A job's backfills through the API: a dry run answers the plan and
// records nothing; a backfill is recorded (201) by the token's name; a
// second while it runs is a 409 naming it; it is listed and read; a
// cancel ends it, a second cancel is a 409; bad input is a 400 naming the
// field; a read token may not write; an unknown job is a 404.
func TestBackfillsEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	must(t, b.sched.Register(cronfence.Job{Name: "hourly", Schedule: "@hourly",
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	from := time.Now().UTC().Truncate(time.Hour).Add(-5 * time.Hour)
	body := fmt.Sprintf(`{"from":%q,"to":%q}`, from.Format(time.RFC3339), from.Add(3*time.Hour).Format(time.RFC3339))
	dry := strings.TrimSuffix(body, "}") + `,"dryRun":true}`

	var plan client.BackfillPlan
	if resp := b.do(t, "POST", "/api/admin/cron/hourly/backfills", adminSecret, dry, &plan); resp.StatusCode != 200 ||
		len(plan.Slots) != 3 || plan.Slots[0].Outcome != "run" || plan.Slots[0].Slot != from.Format(time.RFC3339) {
		t.Fatalf("dry run: %d %+v; want 200 and 3 slots to run", resp.StatusCode, plan)
	}
	var list client.BackfillList
	if b.do(t, "GET", "/api/admin/cron/hourly/backfills", readSecret, "", &list); len(list.Backfills) != 0 {
		t.Fatalf("a dry run recorded %+v", list)
	}
	var created client.Backfill
	resp := b.do(t, "POST", "/api/admin/cron/hourly/backfills", adminSecret, body, &created)
	if resp.StatusCode != 201 || created.State != "running" || created.Total != 3 || created.CreatedBy != "ops" ||
		resp.Header.Get("Location") != fmt.Sprintf("backfills/%d", created.ID) {
		t.Fatalf("POST: %d %+v, Location %q", resp.StatusCode, created, resp.Header.Get("Location"))
	}
	var conflict apiErr
	if resp := b.do(t, "POST", "/api/admin/cron/hourly/backfills", adminSecret, body, &conflict); resp.StatusCode != 409 ||
		conflict.Code != "BACKFILL_CONFLICT" || !strings.Contains(conflict.Message, fmt.Sprint(created.ID)) {
		t.Fatalf("a second POST: %d %+v; want 409 naming %d", resp.StatusCode, conflict, created.ID)
	}
	if b.do(t, "GET", "/api/admin/cron/hourly/backfills", readSecret, "", &list); len(list.Backfills) != 1 || list.Backfills[0].ID != created.ID {
		t.Fatalf("list: %+v", list)
	}
	var got client.Backfill
	if resp := b.do(t, "GET", fmt.Sprintf("/api/admin/cron/hourly/backfills/%d", created.ID), readSecret, "", &got); resp.StatusCode != 200 || got.ID != created.ID {
		t.Fatalf("GET one: %d %+v", resp.StatusCode, got)
	}
	b.wantErr(t, "DELETE", fmt.Sprintf("/api/admin/cron/hourly/backfills/%d", created.ID), readSecret, "", 403, "FORBIDDEN")
	var cancelled client.Backfill
	if resp := b.do(t, "DELETE", fmt.Sprintf("/api/admin/cron/hourly/backfills/%d", created.ID), adminSecret, "", &cancelled); resp.StatusCode != 200 ||
		cancelled.State != "cancelled" || cancelled.CancelledBy != "ops" || cancelled.FinishedAt == nil {
		t.Fatalf("DELETE: %d %+v", resp.StatusCode, cancelled)
	}
	b.wantErr(t, "DELETE", fmt.Sprintf("/api/admin/cron/hourly/backfills/%d", created.ID), adminSecret, "", 409, "BACKFILL_ENDED")
	b.wantErr(t, "GET", "/api/admin/cron/hourly/backfills/999", readSecret, "", 404, "BACKFILL_NOT_FOUND")
	b.wantErr(t, "GET", fmt.Sprintf("/api/admin/cron/slow/backfills/%d", created.ID), readSecret, "", 404, "BACKFILL_NOT_FOUND")
	b.wantErr(t, "POST", "/api/admin/cron/nope/backfills", adminSecret, body, 404, "CRON_JOB_NOT_FOUND")
	b.wantErr(t, "POST", "/api/admin/cron/hourly/backfills", readSecret, body, 403, "FORBIDDEN")
	for _, bad := range []struct{ body, names string }{
		{`{"from":"yesterday","to":"2026-01-01T00:00:00Z"}`, "from"},
		{fmt.Sprintf(`{"from":%q,"to":%q}`, from.Add(3*time.Hour).Format(time.RFC3339), from.Format(time.RFC3339)), "must be after From"},
		{fmt.Sprintf(`{"from":%q,"to":%q}`, from.Format(time.RFC3339), time.Now().Add(2*time.Hour).UTC().Format(time.RFC3339)), "ahead of now"},
		{strings.TrimSuffix(body, "}") + `,"rate":-2}`, "Rate"},
	} {
		var e apiErr
		if resp := b.do(t, "POST", "/api/admin/cron/hourly/backfills", adminSecret, bad.body, &e); resp.StatusCode != 400 || !strings.Contains(e.Message, bad.names) {
			t.Errorf("POST %s: %d %+v; want 400 naming %q", bad.body, resp.StatusCode, e, bad.names)
		}
	}
}
