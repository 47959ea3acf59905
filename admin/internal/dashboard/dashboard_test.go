package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/admin/internal/dashboard"
	"github.com/cronfence/cronfence/internal/traceid"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

const (
	adminSecret = "admin-s3cret"
	readSecret  = "read-s3cret"
	// hostile is a job name made to break out of HTML, attributes and URLs.
	hostile = `<script>alert("x")</script>' onmouseover=alert(1) &amp; /../?a=b#c`
)

var silent = slog.New(slog.NewTextHandler(io.Discard, nil))

type bundle struct {
	srv   *httptest.Server
	sched *cronfence.Scheduler
	store *sqlite.Store
}

// setup serves the dashboard and the API, as serve --listen does, over a
// scheduler (timers off) on a SQLite file of the test's own, with jobs
// "nightly" (Lisbon time, logs two lines) and the hostile name.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cronfence.db"), nil)
	must(t, err)
	must(t, st.Migrate(ctx))
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "replica-1", CheckEvery: -1})
	must(t, err)
	must(t, sched.Register(cronfence.Job{Name: "nightly", Schedule: "0 2 * * *", TimeZone: "Europe/Lisbon",
		Handler: func(ctx context.Context, run *cronfence.Run) error {
			run.Logger.Info("first line <b>bold</b>")
			run.Logger.Info("second line")
			return nil
		}}))
	must(t, sched.Register(cronfence.Job{Name: hostile, Schedule: "@hourly",
		Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}))
	must(t, sched.Start(ctx))
	tokens := []adminapi.Token{
		{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
		{Name: "viewer", Role: adminapi.RoleRead, Secret: readSecret},
	}
	api := adminapi.New(sched, tokens, &adminapi.Options{Logger: silent})
	srv := httptest.NewServer(dashboard.Mount(api, dashboard.New(sched, tokens, &dashboard.Options{Logger: silent, API: api})))
	t.Cleanup(func() {
		srv.Close()
		_ = sched.Stop(context.Background())
		_ = st.Close()
	})
	return &bundle{srv: srv, sched: sched, store: st}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// get fetches path with auth applied by set (nil: none) and returns the
// response and its body.
func (b *bundle) get(t *testing.T, method, path string, set func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, nil)
	must(t, err)
	if set != nil {
		set(req)
	}
	resp, err := b.srv.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	must(t, err)
	return resp, string(raw)
}

func basic(secret string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth("anyone", secret) }
}

func bearer(secret string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }
}

func wantSecureHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	h := resp.Header
	if h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" ||
		!strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") ||
		!strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
		strings.Contains(h.Get("Content-Security-Policy"), "unsafe-inline") {
		t.Fatalf("%s: security headers %v", resp.Request.URL.Path, h)
	}
}

func TestPagesNeedAToken(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, path := range []string{"/", "/job?name=nightly", "/alerts"} {
		for _, set := range []func(*http.Request){nil, basic("wrong"), basic(""), bearer("wrong")} {
			resp, body := b.get(t, "GET", path, set)
			if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") || strings.Contains(body, "nightly</a>") {
				t.Fatalf("GET %s without a valid token: %d %q", path, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
			wantSecureHeaders(t, resp)
		}
		for _, set := range []func(*http.Request){basic(readSecret), basic(adminSecret), bearer(readSecret)} {
			resp, _ := b.get(t, "GET", path, set)
			if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("GET %s with a token: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			wantSecureHeaders(t, resp)
		}
	}
	// Style and script carry nothing about the jobs: no token needed.
	for path, ctype := range map[string]string{"/static/app.js": "text/javascript", "/static/app.css": "text/css"} {
		resp, body := b.get(t, "GET", path, nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) || body == "" {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		wantSecureHeaders(t, resp)
	}
	// The dashboard only reads.
	if resp, _ := b.get(t, "POST", "/", basic(adminSecret)); resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST /: %d %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
	for _, path := range []string{"/nope", "/static/", "/static/nope.js"} {
		if resp, _ := b.get(t, "GET", path, basic(readSecret)); resp.StatusCode != 404 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	// The API beside it still takes bearer tokens only.
	if resp, _ := b.get(t, "GET", "/api/admin/cron", bearer(readSecret)); resp.StatusCode != 200 {
		t.Fatalf("API with bearer: %d", resp.StatusCode)
	}
	if resp, _ := b.get(t, "GET", "/api/admin/cron", basic(adminSecret)); resp.StatusCode != 401 {
		t.Fatalf("API with Basic: %d", resp.StatusCode)
	}
	if resp, _ := b.get(t, "GET", "/healthz", nil); resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
}

// waitRuns waits for n run rows of job.
func waitRuns(t *testing.T, st store.Store, job string, n int) []store.Run {
	t.Helper()
	var runs []store.Run
	wait.For(t, 10*time.Second, func() bool {
		var err error
		runs, err = st.RunList(context.Background(), store.RunListParams{Job: job})
		must(t, err)
		return len(runs) >= n && !runs[0].FinishedAt.IsZero()
	}, func() string {
		return fmt.Sprintf("runs of %s: %+v", job, runs)
	})
	return runs
}

// The overview and the job page show the live state: the last run and its
// result, a skip as a skip, logs, the override with who and note, times in
// the job's zone and in UTC, open alerts and replicas.
func TestPagesShowState(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	if _, err := b.sched.Trigger(ctx, "nightly"); err != nil {
		t.Fatal(err)
	}
	waitRuns(t, b.store, "nightly", 1)
	slot := time.Date(2026, 7, 1, 1, 0, 0, 0, time.UTC) // 02:00 in Lisbon (WEST)
	_, err := b.store.RunInsert(ctx, store.Run{Job: "nightly", Slot: slot, Owner: "replica-2", Success: true, Skipped: true,
		Reason: "already_executing", Logs: []string{"Skipped: the previous run has not finished"}})
	must(t, err)
	_, err = b.sched.SetEnabled(ctx, "nightly", new(false), "ops", "disk full <again>")
	must(t, err)
	_, err = b.store.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertSkipStreak, Subject: "nightly",
		Message: "4 skips in a row", RaisedBy: "replica-2", Details: map[string]string{"streak": "4"}})
	must(t, err)
	_, err = b.store.ReplicaHeartbeat(ctx, store.Replica{Owner: "replica-2", Host: "host-b", PID: 42, Version: "v9.9", Timers: true,
		Jobs: []store.ReplicaJob{{Name: "nightly", Schedule: "0 2 * * *", Hash: "h1"}}})
	must(t, err)

	resp, page := b.get(t, "GET", "/", basic(readSecret))
	if resp.StatusCode != 200 {
		t.Fatalf("GET /: %d %s", resp.StatusCode, page)
	}
	for _, want := range []string{
		`<a href="/job?name=nightly">nightly</a>`,
		"Europe/Lisbon", "<code>0 2 * * *</code>",
		`<span class="state off">disabled</span>`, "override paused by <strong>ops</strong>", "disk full &lt;again&gt;",
		`<span class="outcome skipped">skipped</span>: <span class="detail">already_executing</span>`,
		"<code>skip_streak</code>", "4 skips in a row", "<dt>streak</dt><dd>4</dd>",
		"<code>replica-2</code>", "host-b / 42", "v9.9", `<span class="state on">live</span>`,
		"Signed in as <strong>viewer</strong>",
		"No replica has run the absence checks yet",
		`<span class="paused">paused by ops</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	// A read token sees no button and gets no action key.
	if strings.Contains(page, `data-job="nightly"`) || strings.Contains(page, "data-key=") || !strings.Contains(page, "read only") {
		t.Error("the overview shows a read token buttons or an action key")
	}
	if _, admin := b.get(t, "GET", "/", basic(adminSecret)); !strings.Contains(admin, `data-job="nightly"`) || !strings.Contains(admin, `data-key="v1.`) {
		t.Error("the overview shows an admin no buttons or no action key")
	}

	// Once a replica runs the absence checks, the page names it.
	if _, ok, err := b.store.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: cronfence.MonitorLeaseName, Owner: "replica-2", TTL: time.Minute}); err != nil || !ok {
		t.Fatalf("taking the monitor lease: %v %v", ok, err)
	}
	if _, page = b.get(t, "GET", "/", basic(readSecret)); !strings.Contains(page, "Absence checks run by <code>replica-2</code>, last pass") {
		t.Error("the overview does not name the replica running the absence checks")
	}

	resp, page = b.get(t, "GET", "/job?name=nightly", basic(readSecret))
	if resp.StatusCode != 200 {
		t.Fatalf("job page: %d", resp.StatusCode)
	}
	for _, want := range []string{
		`<span class="job-name">nightly</span>`,
		// The skip's slot in Lisbon time and in UTC.
		`<time datetime="2026-07-01T01:00:00Z">2026-07-01 02:00:00 WEST</time><br><small class="utc">2026-07-01 01:00:00 UTC</small>`,
		`<tr class="run skipped">`, `<tr class="run ok">`, "manual",
		// The slot's OpenTelemetry trace, as package otel names it.
		fmt.Sprintf(`<small class="utc">2026-07-01 01:00:00 UTC</small><br><small class="trace" title="the slot's OpenTelemetry trace">trace <code>%x</code></small>`,
			traceid.Trace("nightly", slot)),
		"INFO first line &lt;b&gt;bold&lt;/b&gt;\nINFO second line", "Skipped: the previous run has not finished",
		"<code>replica-2</code> settings <code>h1</code>",
		"4 skips in a row",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("job page lacks %q:\n%s", want, page)
		}
	}
	// By slot, newest first, a manual run by its start: today's manual
	// run above the skip of a July slot, recorded after it.
	if strings.Index(page, `class="run ok"`) > strings.Index(page, `class="run skipped"`) {
		t.Error("runs are not by slot, newest first")
	}

	resp, page = b.get(t, "GET", "/alerts", basic(readSecret))
	if resp.StatusCode != 200 || !strings.Contains(page, "4 skips in a row") {
		t.Fatalf("alerts page: %d", resp.StatusCode)
	}
	if resp, _ := b.get(t, "GET", "/job?name=absent", basic(readSecret)); resp.StatusCode != 404 {
		t.Fatalf("unknown job page: %d", resp.StatusCode)
	}

	must(t, b.store.Close())
	for _, path := range []string{"/", "/job?name=nightly", "/alerts"} {
		resp, page := b.get(t, "GET", path, basic(readSecret))
		if resp.StatusCode != 503 || !strings.Contains(page, "the store is unavailable") {
			t.Fatalf("GET %s with the store closed: %d", path, resp.StatusCode)
		}
		wantSecureHeaders(t, resp)
	}
}

// A hostile job name is text everywhere: in the table, in links, in data
// attributes, in the job page's title.
func TestHostileJobNameIsEscaped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.sched.SetEnabled(context.Background(), hostile, new(false), "ops", `</q><script>alert(2)</script>`)
	must(t, err)
	for _, path := range []string{"/", "/job?name=" + url.QueryEscape(hostile)} {
		resp, page := b.get(t, "GET", path, basic(readSecret))
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "' onmouseover=") || strings.Contains(page, "</q><script>") {
			t.Fatalf("GET %s: the hostile name or note is not escaped:\n%s", path, page)
		}
		if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
			t.Fatalf("GET %s: the hostile name is not shown as text", path)
		}
	}
	_, page := b.get(t, "GET", "/", basic(readSecret))
	link := `/job?name=` + url.QueryEscape(hostile)
	if !strings.Contains(page, `href="`+strings.ReplaceAll(link, "&", "&amp;")+`"`) &&
		!strings.Contains(page, `href="/job?name=%3cscript%3e`) {
		t.Fatalf("the job link is not query-escaped:\n%s", page)
	}
}
