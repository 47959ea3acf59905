package adminapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

type polled struct {
	JobID  string   `json:"jobId"`
	RunID  string   `json:"runId"`
	State  string   `json:"state"`
	Run    *runJSON `json:"run"`
	Holder *struct {
		Owner      string `json:"owner"`
		Generation int64  `json:"generation"`
	} `json:"holder"`
	Code string `json:"code"`
}

// POST …/run answers the run's id and a Location to poll: running while
// the run holds its lease, then finished with its row.
func TestTriggerAnswersALocationToPoll(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var started struct {
		RunID      string `json:"runId"`
		Generation int64  `json:"generation"`
	}
	resp := b.do(t, "POST", "/api/admin/cron/slow/run", adminSecret, "", &started)
	if resp.StatusCode != 202 || started.RunID == "" {
		t.Fatalf("POST run: %d %+v", resp.StatusCode, started)
	}
	ref, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || ref.IsAbs() {
		t.Fatalf("Location %q (%v), want a reference relative to the request", resp.Header.Get("Location"), err)
	}
	loc := resp.Request.URL.ResolveReference(ref).Path
	if want := "/api/admin/cron/slow/runs/" + started.RunID; loc != want {
		t.Fatalf("Location resolves to %s, want %s", loc, want)
	}
	<-b.started
	var p polled
	if resp := b.do(t, "GET", loc, readSecret, "", &p); resp.StatusCode != 200 || p.State != "running" || p.Run != nil ||
		p.Holder == nil || p.Holder.Generation != started.Generation || p.RunID != started.RunID {
		t.Fatalf("while it runs: %d %+v", resp.StatusCode, p)
	}
	close(b.release)
	deadline := time.Now().Add(10 * time.Second)
	for p.State != "finished" {
		if time.Now().After(deadline) {
			t.Fatalf("not finished after 10s: %+v", p)
		}
		time.Sleep(10 * time.Millisecond)
		p = polled{}
		b.do(t, "GET", loc, readSecret, "", &p)
	}
	if p.Run == nil || !p.Run.Success || p.Run.Generation != started.Generation || !p.Run.Manual {
		t.Fatalf("finished: %+v (run %+v)", p, p.Run)
	}
	// Ids that are no run of the job.
	for _, bad := range []string{"nope", "am9iOnNsb3c.999", "am9iOm90aGVy.1"} { // "job:slow" at 999; "job:other"
		var e polled
		if resp := b.do(t, "GET", "/api/admin/cron/slow/runs/"+bad, readSecret, "", &e); resp.StatusCode != 404 || e.Code != "RUN_NOT_FOUND" {
			t.Errorf("GET runs/%s: %d %+v, want 404 RUN_NOT_FOUND", bad, resp.StatusCode, e)
		}
	}
	if resp := b.do(t, "GET", "/api/admin/cron/slow/runs/x", "", "", nil); resp.StatusCode != 401 {
		t.Errorf("without a token: %d, want 401", resp.StatusCode)
	}
}

// pollRun polls the run at loc (a Location a POST …/run answered) until it
// is finished and returns every answer's status and state that was not
// 200 running or 200 finished.
func pollRun(t *testing.T, srv *httptest.Server, loc string) (odd []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequest("GET", srv.URL+loc, nil)
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+readSecret)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Errorf("GET %s: %v", loc, err)
			return odd
		}
		var p polled
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		switch {
		case err != nil:
			odd = append(odd, fmt.Sprintf("%d undecodable: %v", resp.StatusCode, err))
		case resp.StatusCode == 200 && p.State == "finished":
			return odd
		case resp.StatusCode == 200 && p.State == "running":
		default:
			odd = append(odd, fmt.Sprintf("%d %s %s", resp.StatusCode, p.State, p.Code))
		}
		if time.Now().After(deadline) {
			t.Errorf("%s not finished after 30s", loc)
			return odd
		}
	}
}

// trigger starts a manual run of job through the API and returns the path
// its Location names.
func trigger(t *testing.T, srv *httptest.Server, job string) string {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+client.JobPath(job)+"/run", nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+adminSecret)
	resp, err := srv.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		t.Fatalf("POST %s/run: %d", job, resp.StatusCode)
	}
	ref, err := url.Parse(resp.Header.Get("Location"))
	must(t, err)
	return resp.Request.URL.ResolveReference(ref).Path
}

// A client polls the Location of a manual run until it says finished; it
// must never be told RUN_NOT_FOUND for a run the API just started. Quick
// runs, polled without a pause, several jobs at once: the run's end lands
// while a poll is reading, on every store.
func TestPollingQuickManualRunsNeverAnswersNotFound(t *testing.T) {
	t.Parallel()
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const jobs, rounds = 8, 5
			names := make([]string, jobs)
			for i := range names {
				names[i] = fmt.Sprintf("quick-%d", i)
			}
			b := serveStore(t, open(t), nil, names...)
			var mu sync.Mutex
			var odd []string
			var wg sync.WaitGroup
			for _, name := range names {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range rounds {
						loc := trigger(t, b.srv, name)
						if o := pollRun(t, b.srv, loc); len(o) > 0 {
							mu.Lock()
							odd = append(odd, fmt.Sprintf("%s: %s", loc, strings.Join(o, ", ")))
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if len(odd) > 0 {
				t.Fatalf("%d of %d quick manual runs were answered other than running or finished while polled:\n%s",
					len(odd), jobs*rounds, strings.Join(odd, "\n"))
			}
		})
	}
}

// endGate lands a run's end exactly between the reads one poll of the run
// makes: the end of the run of (lease, gen) waits until, once armed, a
// poll has made its first read of the run's state; that read then lets the
// end go and returns only once it is recorded. Stores wrapped by gated
// share one gate: the replica that ends the run and the one polled may
// differ.
type endGate struct {
	lease string
	gen   int64

	held  chan struct{} // closed when the end of the run waits
	let   chan struct{} // closed when it may go
	ended chan struct{} // closed when it is recorded

	mu    sync.Mutex
	armed bool // the next read of the run's state lets the end go
	once  sync.Once
}

func newEndGate(lease string, gen int64) *endGate {
	return &endGate{lease: lease, gen: gen, held: make(chan struct{}), let: make(chan struct{}), ended: make(chan struct{})}
}

// release lets the held end go, if it has not gone yet.
func (g *endGate) release() { g.once.Do(func() { close(g.let) }) }

// arm makes the next read of the run's state let the held end go.
func (g *endGate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

// afterRead is called after each read of a run's state: the first once
// armed lets the held end go and waits until it is recorded.
func (g *endGate) afterRead() {
	g.mu.Lock()
	fire := g.armed
	g.armed = false
	g.mu.Unlock()
	if fire {
		g.release()
		<-g.ended
	}
}

func (g *endGate) hold(items []store.SlotFinishParams) func() {
	for _, p := range items {
		if p.LeaseName == g.lease && p.Generation == g.gen {
			close(g.held)
			<-g.let
			return func() { close(g.ended) }
		}
	}
	return func() {}
}

// gated is a store whose ends of runs and reads of runs' state go through
// a gate.
type gated struct {
	store.Store
	*endGate
}

func (s gated) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	done := s.hold([]store.SlotFinishParams{p})
	defer done()
	return s.Store.SlotFinish(context.WithoutCancel(ctx), p)
}

func (s gated) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	done := s.hold(items)
	defer done()
	return s.Store.SlotFinishBatch(context.WithoutCancel(ctx), items)
}

func (s gated) RunList(ctx context.Context, p store.RunListParams) ([]store.Run, error) {
	defer s.afterRead()
	return s.Store.RunList(ctx, p)
}

func (s gated) RunGet(ctx context.Context, leaseName string, generation int64) (store.Run, error) {
	defer s.afterRead()
	return s.Store.RunGet(ctx, leaseName, generation)
}

func (s gated) LeaseGet(ctx context.Context, name string) (store.Lease, error) {
	defer s.afterRead()
	return s.Store.LeaseGet(ctx, name)
}

// openPairs open two stores on one fresh database of each kind, as two
// replicas have, with the database clock now (nil: the real one).
var openPairs = map[string]func(t *testing.T, now func() time.Time) (a, b store.Store){
	"sqlite": func(t *testing.T, now func() time.Time) (store.Store, store.Store) {
		path := filepath.Join(t.TempDir(), "cronfence.db")
		open := func() store.Store {
			st, err := sqlite.Open(context.Background(), path, &sqlite.Config{NowFunc: now})
			must(t, err)
			t.Cleanup(func() { _ = st.Close() })
			must(t, st.Migrate(context.Background()))
			return st
		}
		return open(), open()
	},
	"postgres": func(t *testing.T, now func() time.Time) (store.Store, store.Store) {
		_, schema := pgtest.Schema(t)
		open := func() store.Store {
			st, err := postgres.New(pgtest.NewPool(t), &postgres.Config{Schema: schema, NowFunc: now})
			must(t, err)
			must(t, st.Migrate(context.Background()))
			return st
		}
		return open(), open()
	},
}

// A poll whose reads the run's end falls between still says running or
// finished, never RUN_NOT_FOUND: its row and the release of its lease are
// recorded together, and a poll that saw neither the row nor the lease
// held would tell a client that a successful run never started. Polled on
// the replica that started the run, and on another (behind a load
// balancer), which knows of it only what the database says.
func TestAPollThatARunsEndFallsBetweenIsNotNotFound(t *testing.T) {
	t.Parallel()
	for kind, open := range openPairs {
		for _, polledOn := range []string{"the replica that runs it", "another replica"} {
			t.Run(kind+"/"+polledOn, func(t *testing.T) {
				t.Parallel()
				gate := newEndGate("job:quick", 1)
				stA, stB := open(t, nil)
				a := serveStore(t, gated{stA, gate}, nil, "quick")
				on := a
				if polledOn == "another replica" {
					on = serveStore(t, gated{stB, gate}, nil, "quick")
				}
				t.Cleanup(gate.release) // before the replicas stop: a's run waits for it
				loc := trigger(t, a.srv, "quick")
				<-gate.held // the handler returned; its end waits
				gate.arm()
				var p polled
				resp := on.do(t, "GET", loc, readSecret, "", &p)
				if resp.StatusCode != 200 || (p.State != "running" && p.State != "finished") {
					t.Fatalf("GET %s as the run's end lands: %d %+v, want 200 running or finished", loc, resp.StatusCode, p)
				}
				if odd := pollRun(t, on.srv, loc); len(odd) > 0 {
					t.Fatalf("then: %v", odd)
				}
			})
		}
	}
}

// A run whose end is still being recorded when its lease has expired and
// another replica took it at a newer generation (the end's statement was
// slow to land: a database under load) is still running to the replica
// that started it, never RUN_NOT_FOUND; its row, when it lands, makes it
// finished.
func TestARunWhoseEndLandsAfterItsLeaseWasTakenIsNotNotFound(t *testing.T) {
	t.Parallel()
	for kind, open := range openPairs {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := clock.NewFake(time.Now().Truncate(time.Second))
			stA, stB := open(t, db.Now)
			held := newEndGate("job:quick", 1)
			const ttl = 30 * time.Second
			job := cronfence.Job{Name: "quick", Schedule: "@daily", LeaseTTL: ttl,
				Handler: func(ctx context.Context, run *cronfence.Run) error { return nil }}
			replica := func(owner string, st store.Store) *cronfence.Scheduler {
				s, err := cronfence.New(cronfence.Config{Store: st, Logger: silent, DisableTimers: true, Owner: owner, Clock: db, CheckEvery: -1})
				must(t, err)
				must(t, s.Register(job))
				must(t, s.Start(ctx))
				t.Cleanup(func() { _ = s.Stop(context.Background()) })
				return s
			}
			a := replica("replica-a", gated{stA, held})
			b := replica("replica-b", stB)
			t.Cleanup(held.release) // before the replicas stop: a's run waits for it
			srv := httptest.NewServer(adminapi.New(a, []adminapi.Token{
				{Name: "ops", Role: adminapi.RoleAdmin, Secret: adminSecret},
				{Name: "dash", Role: adminapi.RoleRead, Secret: readSecret},
			}, &adminapi.Options{Logger: silent}))
			t.Cleanup(srv.Close)
			bnd := &bundle{srv: srv, sched: a}

			loc := trigger(t, srv, "quick")
			<-held.held // replica-a's run returned; its end has not landed
			db.Advance(ttl + time.Second)
			taken, err := b.Trigger(ctx, "quick")
			if err != nil || taken.Generation != 2 {
				t.Fatalf("replica-b's trigger once the lease expired: %+v, %v; want generation 2", taken, err)
			}
			wait.For(t, 10*time.Second, func() bool {
				runs, err := stB.RunList(ctx, store.RunListParams{Job: "quick"})
				must(t, err)
				return len(runs) == 1 && runs[0].Generation == 2
			}, func() string { return "replica-b's run wrote no row" })

			var p polled
			if resp := bnd.do(t, "GET", loc, readSecret, "", &p); resp.StatusCode != 200 || p.State != "running" {
				t.Fatalf("GET %s while its end is being recorded, its lease taken at generation 2: %d %+v, want 200 running", loc, resp.StatusCode, p)
			}
			held.release()
			if odd := pollRun(t, srv, loc); len(odd) > 0 {
				t.Fatalf("once its end landed: %v", odd)
			}
		})
	}
}

// A finished run is found however many rows of its job came after it
// (here the skips of an overlapped every-second job over a quarter of an
// hour): its row exists, so it is never RUN_NOT_FOUND.
func TestAFinishedRunIsFoundBehindManyNewerRows(t *testing.T) {
	t.Parallel()
	for kind, open := range openStores(t) {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			b := serveStore(t, st, nil, "busy")
			loc := trigger(t, b.srv, "busy")
			if odd := pollRun(t, b.srv, loc); len(odd) > 0 {
				t.Fatalf("while it ran: %v", odd)
			}
			start := time.Now().Add(time.Minute)
			for i := range 1001 {
				slot := start.Add(time.Duration(i) * time.Second)
				if _, err := st.RunInsert(context.Background(), store.Run{Job: "busy", Slot: slot, StartedAt: slot, Owner: "replica-2",
					Success: true, Skipped: true, Reason: string(store.ClaimHeld)}); err != nil {
					t.Fatal(err)
				}
			}
			var p polled
			if resp := b.do(t, "GET", loc, readSecret, "", &p); resp.StatusCode != 200 || p.State != "finished" || p.Run == nil || !p.Run.Manual {
				t.Fatalf("GET %s behind 1001 newer rows: %d %+v, want 200 finished with its row", loc, resp.StatusCode, p)
			}
		})
	}
}
