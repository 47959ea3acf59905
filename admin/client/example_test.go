package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store/sqlite"
)

// A program pauses a job on every replica through the admin API of a
// running cronfence, then reads the job back.
func ExampleClient() {
	url, stop := exampleServer() // a cronfence serving its admin API, with the job "nightly"
	defer stop()

	ctx := context.Background()
	c := client.Client{Base: url, Token: "a-long-random-secret"}

	off := false
	var job client.Job
	if err := c.Do(ctx, http.MethodPut, client.JobPath("nightly"), map[string]any{"enabled": &off, "note": "vendor outage"}, &job); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: enabled %t, paused by %s: %s\n", job.Name, job.Enabled, job.Override.By, job.Override.Note)

	var ae *client.Error
	if err := c.Do(ctx, http.MethodGet, client.JobPath("weekly"), nil, &job); errors.As(err, &ae) {
		fmt.Println(ae.Status, ae.Code)
	}
	// Output:
	// nightly: enabled false, paused by ops: vendor outage
	// 404 CRON_JOB_NOT_FOUND
}

// exampleServer serves the admin API of a scheduler with the job
// "nightly" on a throwaway SQLite file, as a service that mounts package
// admin does.
func exampleServer() (url string, stop func()) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "cronfence-client-example-")
	if err != nil {
		log.Fatal(err)
	}
	st, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	h, err := admin.NewHandler(sched, admin.Options{Tokens: []admin.Token{{Name: "ops", Role: admin.RoleAdmin, Secret: "a-long-random-secret"}}})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return srv.URL, func() {
		srv.Close()
		_ = sched.Stop(ctx)
		_ = st.Close()
		_ = os.RemoveAll(dir)
	}
}
