package client_test

import (
	"context"
	"encoding/json"
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

// The client's schedule methods against the real handler: create, read,
// page, update, a stale update as a 409 whose details say the current
// version, delete, and the audit by name and of all.
func TestClientSchedules(t *testing.T) {
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
	if err := sched.RegisterKind("report", func(context.Context, *cronfence.Run) error { return nil }); err != nil {
		t.Fatal(err)
	}
	h, err := admin.NewHandler(sched, admin.Options{Tokens: []admin.Token{{Name: "ops", Role: admin.RoleAdmin, Secret: adminSecret}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := client.Client{Base: srv.URL, Token: adminSecret}

	sc, err := c.CreateSchedule(ctx, "a/b", client.ScheduleSettings{Spec: "@daily", Kind: "report", Args: json.RawMessage(`{"x":1}`), Timeout: "1m"})
	if err != nil || sc.Version != 1 || sc.Timeout != "1m0s" || string(sc.Args) != `{"x":1}` || sc.CreatedBy != "ops" {
		t.Fatalf("CreateSchedule: %+v, %v", sc, err)
	}
	if _, err := c.CreateSchedule(ctx, "c", client.ScheduleSettings{Spec: "@hourly", Kind: "report"}); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Schedule(ctx, "a/b"); err != nil || got.ID != sc.ID {
		t.Fatalf("Schedule: %+v, %v", got, err)
	}
	page, err := c.Schedules(ctx, "", 1)
	if err != nil || len(page.Schedules) != 1 || page.Next == nil || *page.Next != "a/b" {
		t.Fatalf("Schedules first page: %+v, %v", page, err)
	}
	if page, err = c.Schedules(ctx, *page.Next, 1); err != nil || len(page.Schedules) != 1 || page.Schedules[0].Name != "c" {
		t.Fatalf("Schedules second page: %+v, %v", page, err)
	}
	set := sc.ScheduleSettings
	set.Spec = "@weekly"
	if up, err := c.UpdateSchedule(ctx, "a/b", 1, set); err != nil || up.Version != 2 || up.Spec != "@weekly" {
		t.Fatalf("UpdateSchedule: %+v, %v", up, err)
	}
	var ae *client.Error
	var conflict client.ScheduleConflict
	if _, err := c.UpdateSchedule(ctx, "a/b", 1, set); !errors.As(err, &ae) || ae.Status != http.StatusConflict || ae.Code != "SCHEDULE_CONFLICT" ||
		json.Unmarshal(ae.Details, &conflict) != nil || conflict.CurrentVersion != 2 || conflict.Version != 1 {
		t.Fatalf("a stale UpdateSchedule: %v, %+v", err, conflict)
	}
	if del, err := c.DeleteSchedule(ctx, "a/b", 2); err != nil || del.Version != 2 {
		t.Fatalf("DeleteSchedule: %+v, %v", del, err)
	}
	if _, err := c.Schedule(ctx, "a/b"); !errors.As(err, &ae) || ae.Code != "SCHEDULE_NOT_FOUND" {
		t.Fatalf("Schedule after the delete: %v", err)
	}
	if a, err := c.ScheduleAudit(ctx, "a/b", 0, 0); err != nil || len(a.Changes) != 3 || a.Changes[0].Action != "delete" {
		t.Fatalf("ScheduleAudit a/b: %+v, %v", a, err)
	}
	if a, err := c.ScheduleAudit(ctx, "", 0, 2); err != nil || len(a.Changes) != 2 || a.Next == nil {
		t.Fatalf("ScheduleAudit of all: %+v, %v", a, err)
	}
}

// A job named like an endpoint is reached through JobPath.
func TestJobPathOfAnEndpointsName(t *testing.T) {
	for _, name := range []string{"alerts", "replicas", "schedules", "schedules-audit"} {
		if p := client.JobPath(name); p == client.Prefix+"/"+name || p[len(client.Prefix)+1] != '%' {
			t.Errorf("JobPath(%q) = %q: the endpoint's path", name, p)
		}
	}
}
