package cronfence

import (
	"context"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/registry"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

func nopHandler(context.Context, *Run) error { return nil }

// replicaRows lists the registry through s and indexes it by owner.
func replicaRows(t *testing.T, s *Scheduler) map[string]store.Replica {
	t.Helper()
	list, err := s.Replicas(context.Background())
	if err != nil {
		t.Fatalf("Replicas: %v", err)
	}
	rows := map[string]store.Replica{}
	for i, r := range list {
		if i > 0 && list[i-1].Owner >= r.Owner {
			t.Fatalf("Replicas not by owner: %q before %q", list[i-1].Owner, r.Owner)
		}
		rows[r.Owner] = r
	}
	return rows
}

// jobHashes maps each job of a replica row to its settings hash.
func jobHashes(r store.Replica) map[string]string {
	out := map[string]string{}
	for _, j := range r.Jobs {
		out[j.Name] = j.Hash
	}
	return out
}

var hashPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

func TestReplicaRegistry(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		report := Job{Name: "report", Schedule: "30 * * * *", TimeZone: "America/Sao_Paulo", Deadline: time.Hour, Handler: nopHandler}
		tick := Job{Name: "tick", Schedule: "@every 10s", Handler: nopHandler}
		drifted := report
		drifted.Schedule = "0 * * * *" // a rolling deploy half done
		start := c.db.Now()
		a := c.start("replica-a", 0, report, tick)
		c.start("replica-b", 0, report, tick)
		c.startWith(Config{Owner: "replica-c", Clock: offsetClock{c.db, 0}, Retention: -1, Version: "v9.9.9"}, drifted, tick)

		rows := replicaRows(t, a)
		if len(rows) != 3 {
			t.Fatalf("registry has %d replicas, want 3: %+v", len(rows), rows)
		}
		for owner, r := range rows {
			if r.Host != registry.Hostname() || r.PID != os.Getpid() || r.Version == "" || !r.Timers {
				t.Errorf("replica %s: host %q, pid %d, version %q, timers %v", owner, r.Host, r.PID, r.Version, r.Timers)
			}
			if !r.StartedAt.Equal(start) || !r.HeartbeatAt.Equal(start) {
				t.Errorf("replica %s: started %s, heartbeat %s; want both the database clock at start, %s", owner, r.StartedAt, r.HeartbeatAt, start)
			}
			if len(r.Jobs) != 2 || r.Jobs[0].Name != "report" || r.Jobs[1].Name != "tick" {
				t.Fatalf("replica %s registers %+v, want report and tick", owner, r.Jobs)
			}
			for _, j := range r.Jobs {
				if !hashPattern.MatchString(j.Hash) {
					t.Errorf("replica %s job %s: hash %q, want 16 hex digits", owner, j.Name, j.Hash)
				}
			}
		}
		if v := rows["replica-c"].Version; v != "v9.9.9" {
			t.Errorf("replica-c version %q, want Config.Version v9.9.9", v)
		}
		got := rows["replica-a"].Jobs[0]
		want := store.ReplicaJob{Name: "report", Schedule: "30 * * * *", TimeZone: "America/Sao_Paulo", LeaseTTL: DefaultLeaseTTL,
			Overlap: "skip", Deadline: time.Hour, MaxAttempts: DefaultMaxAttempts, RetryBackoff: DefaultRetryBackoff, Hash: got.Hash}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("replica-a's report job = %+v, want %+v", got, want)
		}
		if rows["replica-a"].Jobs[1].TimeZone != "UTC" {
			t.Errorf("a job without a zone registers zone %q, want UTC", rows["replica-a"].Jobs[1].TimeZone)
		}
		ha, hb, hc := jobHashes(rows["replica-a"]), jobHashes(rows["replica-b"]), jobHashes(rows["replica-c"])
		if ha["report"] != hb["report"] || ha["tick"] != hb["tick"] || ha["tick"] != hc["tick"] {
			t.Errorf("replicas registering the same settings show different hashes: a %v, b %v, c %v", ha, hb, hc)
		}
		if ha["report"] == hc["report"] {
			t.Errorf("replica-c registers report with another schedule but the same hash %s", hc["report"])
		}

		// Heartbeats follow the (fake) clock: every HeartbeatEvery, not
		// every tick; StartedAt stays.
		c.advance(DefaultHeartbeatEvery, time.Second)
		for owner, r := range replicaRows(t, a) {
			if !r.HeartbeatAt.Equal(start.Add(DefaultHeartbeatEvery)) || !r.StartedAt.Equal(start) {
				t.Errorf("after %s, replica %s: heartbeat %s, started %s; want %s and %s", DefaultHeartbeatEvery, owner,
					r.HeartbeatAt, r.StartedAt, start.Add(DefaultHeartbeatEvery), start)
			}
		}
		c.advance(5*time.Second, time.Second)
		if r := replicaRows(t, a)["replica-b"]; !r.HeartbeatAt.Equal(start.Add(DefaultHeartbeatEvery)) {
			t.Errorf("5s after a heartbeat, replica-b's heartbeat is %s, want it unchanged at %s", r.HeartbeatAt, start.Add(DefaultHeartbeatEvery))
		}

		// A job registered after Start goes out at the next tick, ahead of
		// the interval.
		if err := a.Register(Job{Name: "late", Schedule: "@daily", Handler: nopHandler}); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, time.Second)
		r := replicaRows(t, a)["replica-a"]
		if _, ok := jobHashes(r)["late"]; !ok || !r.HeartbeatAt.Equal(c.db.Now()) {
			t.Errorf("a tick after Register, replica-a registers %v at heartbeat %s; want late included at %s", jobHashes(r), r.HeartbeatAt, c.db.Now())
		}

		// Stop removes the row.
		c.stop(c.replicas[1])
		rows = replicaRows(t, a)
		if _, ok := rows["replica-b"]; ok || len(rows) != 2 {
			t.Fatalf("after replica-b stopped, the registry lists %v", rows)
		}
		c.wantNeverDown()
	})
}

// A heartbeat that fails (here: the table is renamed away under the
// replica) is retried at the next tick, not a whole interval later.
func TestReplicaHeartbeatRetriedNextTick(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		a := c.start("replica-a", 0, Job{Name: "tick", Schedule: "@every 10s", Handler: nopHandler})
		start := c.db.Now()
		renameTable := func(from, to string) {
			t.Helper()
			var err error
			switch st := a.e.Store.(type) {
			case *sqlite.Store:
				_, err = st.DB().Exec(`ALTER TABLE ` + from + ` RENAME TO ` + to)
			case *mysql.Store:
				_, err = st.DB().Exec(`RENAME TABLE ` + from + ` TO ` + to)
			case *postgres.Store:
				_, err = st.Pool().Exec(context.Background(),
					`ALTER TABLE `+pgx.Identifier{st.Schema(), from}.Sanitize()+` RENAME TO `+pgx.Identifier{to}.Sanitize())
			default:
				t.Fatalf("store %T", st)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		table := "replicas"
		if c.kind != "postgres" {
			table = "cronfence_replicas"
		}
		renameTable(table, "replicas_away")
		c.advance(DefaultHeartbeatEvery, time.Second) // this heartbeat fails
		renameTable("replicas_away", table)
		if r := replicaRows(t, a)["replica-a"]; !r.HeartbeatAt.Equal(start) {
			t.Fatalf("heartbeat at %s while the table was away, want it still at %s", r.HeartbeatAt, start)
		}
		c.advance(time.Second, time.Second)
		if r := replicaRows(t, a)["replica-a"]; !r.HeartbeatAt.Equal(c.db.Now()) {
			t.Fatalf("a tick after the failure, heartbeat at %s; want it retried at %s", r.HeartbeatAt, c.db.Now())
		}
	})
}

// A replica with timers disabled is listed with Timers false and removed at
// Stop; one with HeartbeatEvery negative is not listed; a store without
// Monitor makes Replicas say so.
func TestReplicaRegistryOptions(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		job := Job{Name: "tick", Schedule: "@every 10s", Handler: nopHandler}
		worker := c.start("worker", 0, job)
		api := c.startWith(Config{Owner: "api", Clock: offsetClock{c.db, 0}, Retention: -1, DisableTimers: true}, job)
		c.startWith(Config{Owner: "unlisted", Clock: offsetClock{c.db, 0}, Retention: -1, HeartbeatEvery: -1}, job)

		rows := replicaRows(t, worker)
		if len(rows) != 2 || !rows["worker"].Timers || rows["api"].Timers || len(rows["api"].Jobs) != 1 {
			t.Fatalf("registry = %+v; want worker (timers) and api (no timers) only", rows)
		}
		// The API replica has no timers but keeps its row fresh, so it never
		// looks dead while it serves.
		first := rows["api"].HeartbeatAt
		c.advance(30*time.Second, 5*time.Second)
		if hb := replicaRows(t, worker)["api"].HeartbeatAt; hb.Sub(first) < 20*time.Second {
			t.Fatalf("API replica's heartbeat moved from %s to %s over 30s; want it renewed every 10s", first, hb)
		}
		c.stop(api)
		if rows := replicaRows(t, worker); len(rows) != 1 || rows["worker"].Owner != "worker" {
			t.Fatalf("after the API replica stopped, registry = %+v; want the worker only", rows)
		}

	})
}

// The hash depends on every setting and on nothing else.
func TestSettingsHash(t *testing.T) {
	t.Parallel()
	base := Job{Name: "j", Schedule: "0 2 * * *", LeaseTTL: time.Minute, Overlap: OverlapSkip, MaxAttempts: 3}
	h := replicaJob(base, nil).Hash
	if !hashPattern.MatchString(h) {
		t.Fatalf("hash %q, want 16 hex digits", h)
	}
	if replicaJob(base, nil).Hash != h {
		t.Fatal("the hash of one job differs between calls")
	}
	utc := base
	utc.TimeZone = "UTC"
	if replicaJob(utc, nil).Hash != h {
		t.Error("an empty zone and UTC hash differently")
	}
	handler := base
	handler.Handler, handler.RunWhenStoreDown = nopHandler, true
	if replicaJob(handler, nil).Hash != h {
		t.Error("the handler or RunWhenStoreDown changed the hash; only the registered settings should")
	}
	for name, mut := range map[string]func(*Job){
		"name":      func(j *Job) { j.Name = "k" },
		"schedule":  func(j *Job) { j.Schedule = "0 3 * * *" },
		"zone":      func(j *Job) { j.TimeZone = "Europe/Lisbon" },
		"timeout":   func(j *Job) { j.Timeout = time.Hour },
		"lease TTL": func(j *Job) { j.LeaseTTL = 2 * time.Minute },
		"catch-up":  func(j *Job) { j.CatchUpWindow = time.Hour },
		"overlap":   func(j *Job) { j.Overlap = OverlapBufferOne },
		"deadline":  func(j *Job) { j.Deadline = time.Hour },
		"attempts":  func(j *Job) { j.MaxAttempts = 1 },
		"backoff":   func(j *Job) { j.RetryBackoff = time.Minute },
		"disabled":  func(j *Job) { j.Disabled = true },
	} {
		j := base
		mut(&j)
		if replicaJob(j, nil).Hash == h {
			t.Errorf("changing the %s kept the hash %s", name, h)
		}
	}
}

// A replica with more jobs than a registry row holds gets, without building
// the row, the error every store's Replica.Validate gives it.
func TestHeartbeatOfTooManyJobsRefusedAsTheStoreWould(t *testing.T) {
	st, err := sqlite.Open(context.Background(), t.TempDir()+"/cronfence.db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: st, Owner: "replica-a", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range store.MaxReplicaJobs + 1 {
		if err := s.Register(Job{Name: "job-" + strconv.Itoa(i), Schedule: "0 0 * * *", Handler: nopHandler}); err != nil {
			t.Fatal(err)
		}
		if i == store.MaxReplicaJobs-1 {
			if err := store.ValidateReplicaJobCount(s.jobs.count()); err != nil {
				t.Fatalf("%d jobs: %v", i+1, err)
			}
		}
	}
	want := store.Replica{Owner: "replica-a", Host: "host", Jobs: make([]store.ReplicaJob, store.MaxReplicaJobs+1)}.Validate()
	got := store.ValidateReplicaJobCount(s.jobs.count())
	if got == nil || want == nil || got.Error() != want.Error() || !errors.Is(got, store.ErrInvalidArgument) {
		t.Fatalf("%d jobs: %v; want the store's %v", store.MaxReplicaJobs+1, got, want)
	}
	s.loop.heartbeat.Beat(context.Background(), time.Now())
	failing, recorded := s.loop.heartbeat.State()
	due := !recorded
	if !failing || !due {
		t.Fatalf("after the heartbeat: failing %t, due again %t; want both (retried at the next tick)", failing, due)
	}
	if rows := replicaRows(t, s); len(rows) != 0 {
		t.Fatalf("registry: %+v; want no row", rows)
	}
}

// heartbeatsSent records what each heartbeat of a replica carried, on the
// real store it forwards to.
type heartbeatsSent struct {
	mu   sync.Mutex
	sent []store.Replica // the rows passed in, in order
}

// recordHeartbeats is st recording its heartbeats.
func recordHeartbeats(st store.Store) (*intercepted, *heartbeatsSent) {
	h := &heartbeatsSent{}
	rec := intercept(st)
	rec.before = func(c *call) {
		if c.method == "ReplicaHeartbeat" {
			h.mu.Lock()
			h.sent = append(h.sent, *c.arg.(*store.Replica))
			h.mu.Unlock()
		}
	}
	return rec, h
}

// since returns the heartbeats sent from the nth on, as (jobs carried,
// JobsUnchanged) pairs.
func (h *heartbeatsSent) since(n int) (jobs []int, unchanged []bool, total int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.sent[n:] {
		jobs, unchanged = append(jobs, len(r.Jobs)), append(unchanged, r.JobsUnchanged)
	}
	return jobs, unchanged, len(h.sent)
}

// A replica sends its jobs to the registry when they changed since its last
// recorded heartbeat, and not at every heartbeat (with thousands of jobs
// each heartbeat wrote and read back megabytes); when its row went away
// meanwhile (an operator removed it, a prune took it), it sends them again
// at once, so the registry never shows it without them.
func TestHeartbeatSendsTheJobsOnlyWhenTheyChanged(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st, rec := recordHeartbeats(c.open(t))
		a := c.startWith(Config{Owner: "replica-a", Clock: offsetClock{c.db, 0}, Retention: -1, Store: st},
			Job{Name: "report", Schedule: "30 * * * *", Handler: nopHandler},
			Job{Name: "tick", Schedule: "@every 10s", Handler: nopHandler})
		registered := func(want ...string) {
			t.Helper()
			r := replicaRows(t, a)["replica-a"]
			var got []string
			for _, j := range r.Jobs {
				got = append(got, j.Name)
			}
			if !slices.Equal(got, want) || !r.HeartbeatAt.Equal(c.db.Now()) {
				t.Fatalf("registry row of replica-a: jobs %v at heartbeat %s; want %v at %s", got, r.HeartbeatAt, want, c.db.Now())
			}
		}
		jobs, unchanged, n := rec.since(0)
		if !slices.Equal(jobs, []int{2}) || unchanged[0] {
			t.Fatalf("at Start: heartbeats carried %v jobs (unchanged %v); want one with both jobs", jobs, unchanged)
		}

		c.advance(DefaultHeartbeatEvery, time.Second)
		jobs, unchanged, n = rec.sinceAt(t, n, 1)
		if jobs[0] != 0 || !unchanged[0] {
			t.Fatalf("a heartbeat with the jobs unchanged carried %d jobs (JobsUnchanged %v); want none, said unchanged", jobs[0], unchanged[0])
		}
		registered("report", "tick")

		if err := a.Register(Job{Name: "late", Schedule: "@daily", Handler: nopHandler}); err != nil {
			t.Fatal(err)
		}
		c.advance(time.Second, time.Second)
		jobs, unchanged, n = rec.sinceAt(t, n, 1)
		if jobs[0] != 3 || unchanged[0] {
			t.Fatalf("the heartbeat after a Register carried %d jobs (JobsUnchanged %v); want all 3", jobs[0], unchanged[0])
		}
		registered("late", "report", "tick")

		if err := c.open(t).ReplicaRemove(context.Background(), "replica-a"); err != nil {
			t.Fatal(err)
		}
		c.advance(DefaultHeartbeatEvery, time.Second)
		jobs, unchanged, _ = rec.sinceAt(t, n, 2)
		if !slices.Equal(jobs, []int{0, 3}) || !slices.Equal(unchanged, []bool{true, false}) {
			t.Fatalf("with its row removed, the heartbeats carried %v jobs (JobsUnchanged %v); want none refused, then all 3 at once", jobs, unchanged)
		}
		registered("late", "report", "tick")
		c.wantNeverDown()
	})
}

// sinceAt is since(n), failing the test unless exactly want heartbeats
// were sent from the nth on; it returns the count to go on from.
func (h *heartbeatsSent) sinceAt(t *testing.T, n, want int) (jobs []int, unchanged []bool, total int) {
	t.Helper()
	jobs, unchanged, total = h.since(n)
	if len(jobs) != want {
		t.Fatalf("%d heartbeats sent (jobs %v), want %d", len(jobs), jobs, want)
	}
	return jobs, unchanged, total
}
