package admin_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

const (
	adminSecret = "admin-secret-0123456789"
	readSecret  = "read-secret-0123456789"
)

// started returns a started scheduler with one job, on a SQLite file of
// the test's own.
func started(t *testing.T) *cronfence.Scheduler {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cronfence.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := cronfence.New(cronfence.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Register(cronfence.Job{Name: "nightly", Schedule: "0 3 * * *",
		Handler: func(context.Context, *cronfence.Run) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

type answer struct {
	code int
	body string
}

func request(t *testing.T, srv *httptest.Server, method, path string, auth func(*http.Request), body string) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		auth(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, string(b)}
}

func bearer(secret string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }
}

func basic(secret string) func(*http.Request) {
	return func(r *http.Request) { r.SetBasicAuth("anyone", secret) }
}

// Mounted under a prefix in a mux of the service's own, the handler serves
// the API, the probes and the dashboard there, every dashboard link and
// the buttons' API base under the prefix, and nothing outside it.
func TestHandlerUnderAPrefix(t *testing.T) {
	s := started(t)
	h, err := admin.NewHandler(s, admin.Options{Prefix: "/ops/cron", Tokens: []admin.Token{
		{Name: "ops", Role: admin.RoleAdmin, Secret: adminSecret},
		{Name: "viewer", Role: admin.RoleRead, Secret: readSecret},
	}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/cron/", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "the service's", http.StatusTeapot) })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if a := request(t, srv, "GET", "/ops/cron/healthz", nil, ""); a.code != 200 {
		t.Errorf("healthz under the prefix: %d %q", a.code, a.body)
	}
	if a := request(t, srv, "GET", "/ops/cron/readyz", nil, ""); a.code != 200 {
		t.Errorf("readyz under the prefix: %d %q", a.code, a.body)
	}
	if a := request(t, srv, "GET", "/ops/cron/api/admin/cron/nightly", bearer(readSecret), ""); a.code != 200 || !strings.Contains(a.body, `"name":"nightly"`) {
		t.Errorf("GET the job with the read token: %d %q", a.code, a.body)
	}
	if a := request(t, srv, "PUT", "/ops/cron/api/admin/cron/nightly", bearer(readSecret), `{"enabled": false}`); a.code != 403 {
		t.Errorf("pause with the read token: %d %q, want 403", a.code, a.body)
	}
	if a := request(t, srv, "PUT", "/ops/cron/api/admin/cron/nightly", bearer(adminSecret), `{"enabled": false, "note": "maintenance"}`); a.code != 200 {
		t.Fatalf("pause with the admin token: %d %q", a.code, a.body)
	}
	states, err := s.Store().JobStateList(context.Background())
	if err != nil || len(states) != 1 || states[0].EnabledOverride == nil || *states[0].EnabledOverride || states[0].OverrideBy != "ops" {
		t.Fatalf("the pause through the handler recorded %+v, %v; want nightly paused by ops", states, err)
	}
	if a := request(t, srv, "GET", "/ops/cron/api/admin/cron", nil, ""); a.code != 401 {
		t.Errorf("the API without a token: %d, want 401", a.code)
	}

	page := request(t, srv, "GET", "/ops/cron/", basic(readSecret), "")
	if page.code != 200 {
		t.Fatalf("the dashboard: %d %q", page.code, page.body)
	}
	for _, want := range []string{
		`href="/ops/cron/static/app.css"`, `src="/ops/cron/static/app.js"`, `href="/ops/cron/job?name=nightly"`,
		`href="/ops/cron/alerts"`, `data-act="/ops/cron/act"`,
	} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the dashboard has no %s", want)
		}
	}
	if strings.Contains(page.body, `href="/job`) || strings.Contains(page.body, `href="/static`) {
		t.Errorf("the dashboard links outside its prefix:\n%s", page.body)
	}
	for _, path := range []string{"/ops/cron/static/app.css", "/ops/cron/job?name=nightly", "/ops/cron/alerts"} {
		if a := request(t, srv, "GET", path, basic(readSecret), ""); a.code != 200 {
			t.Errorf("GET %s: %d", path, a.code)
		}
	}
	// The buttons under the prefix: the admin page's action key, posted
	// to the prefix's /act, resumes the job through the API.
	admin := request(t, srv, "GET", "/ops/cron/", basic(adminSecret), "")
	key := regexp.MustCompile(`data-key="([^"]+)"`).FindStringSubmatch(admin.body)
	if key == nil {
		t.Fatal("the admin's page under the prefix carries no action key")
	}
	act := request(t, srv, "POST", "/ops/cron/act", func(r *http.Request) { r.Header.Set("X-Cronfence-Action", "1") },
		`{"job": "nightly", "action": "unset", "key": "`+key[1]+`"}`)
	if act.code != 200 || !strings.Contains(act.body, `"name":"nightly"`) {
		t.Fatalf("the unset button under the prefix: %d %q", act.code, act.body)
	}
	if states, err := s.Store().JobStateList(context.Background()); err != nil || len(states) != 1 || states[0].EnabledOverride != nil {
		t.Fatalf("after the unset button: %+v, %v; want the override removed", states, err)
	}
	// Outside the prefix it is the service's mux that answers.
	for _, path := range []string{"/api/admin/cron", "/healthz", "/static/app.css"} {
		if a := request(t, srv, "GET", path, bearer(adminSecret), ""); a.code != http.StatusTeapot {
			t.Errorf("GET %s outside the prefix: %d, want the service's own answer", path, a.code)
		}
	}
}

// APIOnly serves the API and the probes, no dashboard.
func TestHandlerAPIOnly(t *testing.T) {
	h, err := admin.NewHandler(started(t), admin.Options{APIOnly: true, Tokens: []admin.Token{{Name: "ops", Role: admin.RoleRead, Secret: readSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if a := request(t, srv, "GET", "/api/admin/cron", bearer(readSecret), ""); a.code != 200 {
		t.Errorf("the API: %d %q", a.code, a.body)
	}
	if a := request(t, srv, "GET", "/", basic(readSecret), ""); a.code != 404 {
		t.Errorf("the dashboard of an API-only handler: %d, want 404", a.code)
	}
}

func TestNewHandlerRefusesBadOptions(t *testing.T) {
	s := started(t)
	ok := admin.Token{Name: "ops", Role: admin.RoleAdmin, Secret: adminSecret}
	for _, tc := range []struct {
		name  string
		sched *cronfence.Scheduler
		opts  admin.Options
		want  string
	}{
		{"nil scheduler", nil, admin.Options{}, "scheduler is nil"},
		{"relative prefix", s, admin.Options{Prefix: "cron"}, "must start with /"},
		{"prefix ending in /", s, admin.Options{Prefix: "/cron/"}, "must not end with /"},
		{"prefix with a query", s, admin.Options{Prefix: "/cron?x=1"}, "plain path"},
		{"unknown role", s, admin.Options{Tokens: []admin.Token{ok, {Name: "x", Role: "root", Secret: "s"}}}, `Options.Tokens[1] (x): role "root"`},
		{"empty secret", s, admin.Options{Tokens: []admin.Token{{Name: "x", Role: admin.RoleRead}}}, "Options.Tokens[0] (x): the secret is empty"},
		{"no name", s, admin.Options{Tokens: []admin.Token{{Role: admin.RoleRead, Secret: "s"}}}, "Options.Tokens[0]: the name is empty"},
		{"negative timeout", s, admin.Options{StoreTimeout: -1}, "must not be negative"},
		{"a secret twice", s, admin.Options{Tokens: []admin.Token{ok, {Name: "y", Role: admin.RoleRead, Secret: adminSecret}}}, "Options.Tokens[1] (y) has the secret of Options.Tokens[0]"},
	} {
		h, err := admin.NewHandler(tc.sched, tc.opts)
		if err == nil || h != nil || !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want an invalid-argument error saying %q", tc.name, h, err, tc.want)
		}
	}
}
