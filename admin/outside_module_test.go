package admin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A program in a module of its own, as a user writes it, builds with the
// public packages alone (no internal/ import is possible from there):
// it mounts admin and metrics in its own mux, runs a job once a second
// and scrapes its own /metrics, where that run shows.
func TestAModuleOutsideMountsAdminAndMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/svc\n\ngo 1.26\n\nrequire github.com/cronfence/cronfence v0.0.0\n\nreplace github.com/cronfence/cronfence => "+root+"\n")
	// The cronfence module's go.sum has every hash the program needs, so
	// resolving it asks no checksum database.
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sums))
	write("main.go", outsideProgram)
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	if out, err := tidy.CombinedOutput(); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
	}
	run := exec.Command("go", "run", ".")
	run.Dir = dir
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: ") {
		t.Fatalf("the program: %v\n%s", err, out)
	}
	t.Log(strings.TrimSpace(string(out)))
}

const outsideProgram = `package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store/sqlite"
)

func main() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "svc-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "svc.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	col, err := metrics.New(reg, nil)
	if err != nil {
		log.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{Store: col.InstrumentStore(st, true), Observer: col,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		log.Fatal(err)
	}
	ran := make(chan struct{}, 100)
	if err := sched.Register(cronfence.Job{Name: "tick", Schedule: "* * * * * *",
		Handler: func(context.Context, *cronfence.Run) error { ran <- struct{}{}; return nil }}); err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)
	h, err := admin.NewHandler(sched, admin.Options{Prefix: "/cron",
		Tokens: []admin.Token{{Name: "ops", Role: admin.RoleRead, Secret: "secret-0123456789"}}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/cron/", h)
	mux.Handle("GET /metrics", metrics.Handler(reg))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	<-ran
	get := func(path string) string {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer secret-0123456789")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			log.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	// The run's end is recorded just after its handler returns.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(get("/metrics"), ` + "`" + `cronfence_runs_total{job="tick",outcome="success"}` + "`" + `) {
		if time.Now().After(deadline) {
			log.Fatalf("no successful run of tick on /metrics:\n%s", get("/metrics"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if job := get("/cron/api/admin/cron/tick"); !strings.Contains(job, ` + "`" + `"name":"tick"` + "`" + `) {
		log.Fatalf("the API's job: %s", job)
	}
	fmt.Println("ok: a run of tick on /metrics, the job on /cron/api/admin/cron/tick")
}
`
