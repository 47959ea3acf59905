package riverbridge

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store/postgres"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testArgs is the River job the tests' bridge enqueues.
type testArgs struct {
	Slot
	Note string `json:"note"`
}

func (testArgs) Kind() string { return "riverbridge_test" }

// recordWorker reports each job it works.
type recordWorker struct {
	river.WorkerDefaults[testArgs]
	worked chan<- Slot
}

func (w *recordWorker) Work(_ context.Context, job *river.Job[testArgs]) error {
	w.worked <- job.Args.Slot
	return nil
}

// quiet is the logger of the River clients and migrators: it discards.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// migrateRiver creates schema and migrates River into it, on pool.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return err
	}
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: quiet()})
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// insertClient returns a River client that only inserts.
func insertClient(pool *pgxpool.Pool, schema string) (*river.Client[pgx.Tx], error) {
	return river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: quiet()})
}

// testBundle is one test's database: the cronfence store and River, each
// in a schema of its own in the test database, and River's workers.
type testBundle struct {
	pool        *pgxpool.Pool
	schema      string // cronfence's
	riverSchema string
	store       *postgres.Store
	river       *river.Client[pgx.Tx] // works the jobs, into worked
	worked      *workLog
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx := context.Background()
	pool, schema := pgtest.Schema(t)
	b := &testBundle{pool: pool, schema: schema, riverSchema: schema + "_river"}
	t.Cleanup(func() {
		// Runs before pgtest's own cleanups close pool and drop schema.
		if _, err := pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{b.riverSchema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping %s: %v", b.riverSchema, err)
		}
	})
	st, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b.store = st
	if err := migrateRiver(ctx, pool, b.riverSchema); err != nil {
		t.Fatal(err)
	}

	worked := make(chan Slot, 1000)
	b.worked = newWorkLog(worked)
	workers := river.NewWorkers()
	river.AddWorker(workers, &recordWorker{worked: worked})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: b.riverSchema, Logger: quiet(), TestOnly: true,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:           workers,
		FetchCooldown:     10 * time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := client.Stop(sctx); err != nil {
			t.Errorf("stopping River: %v", err)
		}
		b.worked.close()
	})
	b.river = client
	return b
}

// workLog collects the slots River's workers worked, in order.
type workLog struct {
	mu      sync.Mutex
	slots   []Slot
	changed chan struct{} // closed and replaced at each job worked
	done    chan struct{}
}

func newWorkLog(worked <-chan Slot) *workLog {
	l := &workLog{changed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		for {
			select {
			case s := <-worked:
				l.mu.Lock()
				l.slots = append(l.slots, s)
				close(l.changed)
				l.changed = make(chan struct{})
				l.mu.Unlock()
			case <-l.done:
				return
			}
		}
	}()
	return l
}

func (l *workLog) close() { close(l.done) }

// waitFor waits until cond holds of the slots worked so far, failing the
// test after timeout.
func (l *workLog) waitFor(t *testing.T, timeout time.Duration, what string, cond func([]Slot) bool) []Slot {
	t.Helper()
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		slots := append([]Slot(nil), l.slots...)
		changed := l.changed
		l.mu.Unlock()
		if cond(slots) {
			return slots
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("River workers: %s not seen within %s; worked %+v", what, timeout, slots)
		}
	}
}

// riverJob is a row of River's job table, as the tests read it.
type riverJob struct {
	Key        string
	Slot       time.Time
	Attempt    int
	Generation int64
}

// riverJobs reads every job of testArgs' kind, in insertion order.
func (b *testBundle) riverJobs(t *testing.T) []riverJob {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), "SELECT args FROM "+pgx.Identifier{b.riverSchema, "river_job"}.Sanitize()+
		" WHERE kind = $1 ORDER BY id", testArgs{}.Kind())
	if err != nil {
		t.Fatal(err)
	}
	args, err := pgx.CollectRows(rows, pgx.RowTo[testArgs])
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]riverJob, len(args))
	for i, a := range args {
		jobs[i] = riverJob{Key: a.Key, Slot: a.Time, Attempt: a.Attempt, Generation: a.Generation}
	}
	return jobs
}

// onePerSlot fails the test unless jobs hold one job per key.
func onePerSlot(t *testing.T, jobs []riverJob) map[string]riverJob {
	t.Helper()
	byKey := map[string]riverJob{}
	for _, j := range jobs {
		if prev, dup := byKey[j.Key]; dup {
			t.Errorf("slot %s enqueued twice: %+v and %+v", j.Key, prev, j)
		}
		byKey[j.Key] = j
	}
	return byKey
}
