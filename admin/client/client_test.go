package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store/sqlite"
)

const adminSecret = "admin-s3cret"

// serve starts a real scheduler (timers off) with the job "quiet"
// (declared disabled) on a migrated SQLite file of the test's own, behind
// the admin handler mounted at prefix, and returns the server's URL.
func serve(t *testing.T, prefix string) string {
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
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DisableTimers: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Register(cronfence.Job{Name: "quiet", Schedule: "@hourly", Disabled: true,
		Handler: func(context.Context, *cronfence.Run) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Stop(context.Background()) })
	h, err := admin.NewHandler(sched, admin.Options{Prefix: prefix, Tokens: []admin.Token{{Name: "ops", Role: admin.RoleAdmin, Secret: adminSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The client and the handler it speaks to agree: a read, a write, the
// paths it builds, the API's errors as *client.Error, and an answer that
// is not the API's.
func TestClientAgainstTheHandler(t *testing.T) {
	url := serve(t, "")
	ctx := context.Background()
	c := client.Client{Base: url + "/", Token: adminSecret}

	var job client.Job
	if err := c.Do(ctx, http.MethodGet, client.JobPath("quiet"), nil, &job); err != nil || job.Name != "quiet" {
		t.Fatalf("GET quiet: %+v, %v", job, err)
	}
	off := false
	if err := c.Do(ctx, http.MethodPut, client.JobPath("quiet"), map[string]any{"enabled": &off, "note": "client"}, &job); err != nil ||
		job.Override == nil || job.Override.Enabled == nil || *job.Override.Enabled || job.Override.Note != "client" {
		t.Fatalf("PUT quiet: %+v, %v", job.Override, err)
	}

	var ae *client.Error
	err := c.Do(ctx, http.MethodGet, client.JobPath("no such job"), nil, nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != "CRON_JOB_NOT_FOUND" || ae.Message == "" {
		t.Fatalf("GET an unknown job: %v (%+v), want a 404 CRON_JOB_NOT_FOUND", err, ae)
	}
	// The ack endpoint, not an unknown path: no such alert is open.
	err = c.Do(ctx, http.MethodPost, client.AlertAckPath("failing", "a/b c"), nil, nil)
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != "ALERT_NOT_FOUND" {
		t.Fatalf("POST AlertAckPath: %v, want a 404 ALERT_NOT_FOUND", err)
	}
	bad := client.Client{Base: url, Token: "wrong"}
	if err := bad.Do(ctx, http.MethodGet, client.Prefix, nil, nil); !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v, want 401", err)
	}

	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "upstream is down", http.StatusBadGateway)
	}))
	defer proxy.Close()
	p := client.Client{Base: proxy.URL, Token: adminSecret}
	if err := p.Do(ctx, http.MethodGet, client.Prefix, nil, nil); !errors.As(err, &ae) || ae.Code != "502" || ae.Message != "upstream is down" {
		t.Fatalf("a proxy's error page: %v (%+v)", err, ae)
	}
	if err := (&client.Client{Base: "ftp://x", Token: "t"}).Do(ctx, http.MethodGet, "/", nil, nil); err == nil {
		t.Fatal("an ftp:// base was accepted")
	}
}

// A Base with a path reaches a handler mounted under that prefix.
func TestClientUnderAPrefix(t *testing.T) {
	c := client.Client{Base: serve(t, "/cron"), Token: adminSecret}
	var list struct {
		Jobs []client.Job `json:"jobs"`
	}
	if err := c.Do(context.Background(), http.MethodGet, client.Prefix, nil, &list); !errors.As(err, new(*client.Error)) {
		t.Fatalf("GET without the prefix: %v, want a *client.Error", err)
	}
	c.Base += "/cron"
	if err := c.Do(context.Background(), http.MethodGet, client.Prefix, nil, &list); err != nil || len(list.Jobs) != 1 {
		t.Fatalf("GET under /cron: %+v, %v", list, err)
	}
}
