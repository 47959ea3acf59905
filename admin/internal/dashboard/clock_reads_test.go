package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/admin/internal/dashboard"
	"github.com/cronfence/cronfence/store/sqlite"
)

// clockCounter is a real SQLite store that counts its database clock reads.
type clockCounter struct {
	*sqlite.Store
	reads atomic.Int64
}

func (c *clockCounter) Now(ctx context.Context) (time.Time, error) {
	c.reads.Add(1)
	return c.Store.Now(ctx)
}

// Each page reads the database clock once and judges leases, replicas and
// ages against that one reading: a second reading is a wasted round trip
// and lets parts of one page disagree about "now".
func TestPagesReadTheDatabaseClockOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "cronfence.db"), nil)
	must(t, err)
	must(t, st.Migrate(ctx))
	c := &clockCounter{Store: st}
	sched, err := cronfence.New(cronfence.Config{Store: c, Logger: silent, DisableTimers: true, Owner: "replica-1", CheckEvery: -1})
	must(t, err)
	must(t, sched.Register(cronfence.Job{Name: "nightly", Schedule: "0 2 * * *",
		Handler: func(context.Context, *cronfence.Run) error { return nil }}))
	must(t, sched.Start(ctx))
	tokens := []adminapi.Token{{Name: "viewer", Role: adminapi.RoleRead, Secret: readSecret}}
	srv := httptest.NewServer(dashboard.Mount(
		adminapi.New(sched, tokens, &adminapi.Options{Logger: silent}),
		dashboard.New(sched, tokens, &dashboard.Options{Logger: silent}),
	))
	t.Cleanup(func() {
		srv.Close()
		_ = sched.Stop(context.Background())
		_ = st.Close()
	})
	for _, path := range []string{"/", "/job?name=nightly", "/alerts"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		must(t, err)
		req.SetBasicAuth("viewer", readSecret)
		before := c.reads.Load()
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: status %d, want 200", path, resp.StatusCode)
		}
		if n := c.reads.Load() - before; n != 1 {
			t.Errorf("GET %s read the database clock %d times, want 1", path, n)
		}
	}
}
