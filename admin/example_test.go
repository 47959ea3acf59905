package admin_test

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

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/metrics"
	"github.com/cronfence/cronfence/store/sqlite"
)

// A service that embeds the scheduler mounts the admin API and dashboard
// under a prefix of its choice, and the Prometheus metrics on a registry of
// its own, in its own mux beside its other routes.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cronfence-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	col, err := metrics.New(reg, nil)
	if err != nil {
		log.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{
		Store:    col.InstrumentStore(st, true), // store round trips timed
		Observer: col,                           // claims, runs, skips, alerts counted
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := sched.Register(cronfence.Job{Name: "nightly", Schedule: "0 3 * * *",
		Handler: func(context.Context, *cronfence.Run) error { return nil }}); err != nil {
		log.Fatal(err)
	}
	if err := sched.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer sched.Stop(ctx)

	cron, err := admin.NewHandler(sched, admin.Options{
		Prefix: "/cron",
		Tokens: []admin.Token{{Name: "ops", Role: admin.RoleAdmin, Secret: "a-long-random-secret"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/cron/", cron)
	mux.Handle("GET /metrics", metrics.Handler(reg))
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "the service's own page") })
	srv := httptest.NewServer(mux)
	defer srv.Close()

	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer a-long-random-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, body := get("/cron/api/admin/cron/nightly")
	fmt.Println("API:", code, strings.Contains(body, `"name":"nightly"`))
	code, _ = get("/cron/readyz")
	fmt.Println("readyz:", code)
	code, body = get("/metrics")
	fmt.Println("metrics:", code, strings.Contains(body, "cronfence_store_round_trip_seconds"))
	code, body = get("/")
	fmt.Println("service:", code, strings.TrimSpace(body))
	// Output:
	// API: 200 true
	// readyz: 200
	// metrics: 200 true
	// service: 200 the service's own page
}
