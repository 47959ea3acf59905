package adminapi_test

import (
	"context"
	"database/sql"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// A store that accepts the request but does not answer (PostgreSQL behind a
// proxy that holds every byte; a SQLite file whose write lock another
// process keeps) gets a PUT answered 503 STORE_UNAVAILABLE within
// Options.StoreTimeout, not a request left open, and the change is not
// saved: once the store answers again, the job has no override. (Before:
// the PUT waited as long as the store did, 20s and more.)
func TestHungStoreAnswers503AndSavesNothing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// open returns a store for the scheduler, a way to hang it and to
		// let it answer again, and a store to read it with afterwards.
		open func(t *testing.T) (st store.Store, hang, answer func(), check store.Store)
	}{
		{"postgres", func(t *testing.T) (store.Store, func(), func(), store.Store) {
			if testing.Short() {
				t.Skip("-short: needs PostgreSQL")
			}
			pool, schema := pgtest.Schema(t)
			direct, err := postgres.New(pool, &postgres.Config{Schema: schema})
			must(t, err)
			must(t, direct.Migrate(context.Background()))
			proxy := pgtest.NewProxy(t)
			proxied, err := pgxpool.New(context.Background(), proxy.URL(t))
			must(t, err)
			t.Cleanup(proxied.Close)
			st, err := postgres.New(proxied, &postgres.Config{Schema: schema})
			must(t, err)
			return st, proxy.Hold, proxy.Release, direct
		}},
		{"sqlite", func(t *testing.T) (store.Store, func(), func(), store.Store) {
			path := filepath.Join(t.TempDir(), "cronfence.db")
			st, err := sqlite.Open(context.Background(), path, nil)
			must(t, err)
			t.Cleanup(func() { _ = st.Close() })
			must(t, st.Migrate(context.Background()))
			other, err := sql.Open("sqlite", "file:"+path)
			must(t, err)
			t.Cleanup(func() { _ = other.Close() })
			var hold *sql.Conn
			hang := func() {
				var err error
				hold, err = other.Conn(context.Background())
				must(t, err)
				_, err = hold.ExecContext(context.Background(), `BEGIN IMMEDIATE`) // another process keeps the write lock
				must(t, err)
			}
			answer := func() {
				_, err := hold.ExecContext(context.Background(), `ROLLBACK`)
				must(t, err)
				must(t, hold.Close())
			}
			return st, hang, answer, st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, hang, answer, check := tc.open(t)
			sched, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: "replica-1"})
			must(t, err)
			must(t, sched.Register(cronfence.Job{Name: "nightly", Schedule: "0 2 * * *", Handler: func(context.Context, *cronfence.Run) error { return nil }}))
			must(t, sched.Start(context.Background()))
			t.Cleanup(func() { _ = sched.Stop(context.Background()) })
			srv := httptest.NewServer(adminapi.New(sched, []adminapi.Token{{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret}},
				&adminapi.Options{Logger: silent, StoreTimeout: 300 * time.Millisecond}))
			t.Cleanup(srv.Close)
			b := &bundle{srv: srv}

			hang()
			b.wantErr(t, "PUT", "/api/admin/cron/nightly", adminSecret, `{"enabled":false,"note":"hung"}`, 503, "STORE_UNAVAILABLE")
			answer()
			states, err := check.JobStateList(context.Background())
			must(t, err)
			if len(states) != 0 {
				t.Fatalf("job states after a 503 PUT: %+v; want nothing saved", states)
			}
			// Answering again, the same PUT is saved.
			var j client.Job
			if resp := b.do(t, "PUT", "/api/admin/cron/nightly", adminSecret, `{"enabled":false}`, &j); resp.StatusCode != 200 || j.Override == nil {
				t.Fatalf("PUT once the store answers: %d %+v", resp.StatusCode, j)
			}
		})
	}
}
