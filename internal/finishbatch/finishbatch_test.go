package finishbatch_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/finishbatch"
	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// stores opens one fresh, migrated store of each database for t.
var stores = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"postgres", func(t *testing.T) store.Store {
		pool, schema := pgtest.Schema(t)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		return migrated(t, s)
	}},
	{"mysql", func(t *testing.T) store.Store {
		s, err := mysql.Open(context.Background(), mytest.Database(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return migrated(t, s)
	}},
	{"sqlite", func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return migrated(t, s)
	}},
}

func migrated[S interface {
	store.Store
	Migrate(context.Context) error
}](t *testing.T, s S) store.Store {
	t.Helper()
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// gatedFinishes is a store whose finishes wait for the test's word, to
// hold a batch in flight: each tells its size as it starts (entered), and
// one receive of release lets one go on.
type gatedFinishes struct {
	store.Store
	entered chan int
	release chan struct{}
}

func (g *gatedFinishes) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	g.entered <- 1
	<-g.release
	return g.Store.SlotFinish(ctx, p)
}

func (g *gatedFinishes) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	g.entered <- len(items)
	<-g.release
	return g.Store.SlotFinishBatch(ctx, items)
}

// Under load that never lets up, no run's end waits for more than its own
// batch and the one in flight before it: the run whose end went first is
// answered while the ends queued behind it are still being sent.
func TestAGroupCommitAnswersEachEndWithItsOwnBatch(t *testing.T) {
	t.Parallel()
	for _, o := range stores {
		t.Run(o.name, func(t *testing.T) {
			t.Parallel()
			st := o.open(t)
			g := &gatedFinishes{Store: st, entered: make(chan int, 10), release: make(chan struct{})}
			b := &finishbatch.Batcher{Store: g}
			now, err := st.Now(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			finish := func(job string) <-chan error {
				r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{Job: job, Slot: now.Add(-time.Second), LeaseName: "job:" + job,
					Owner: "a", TTL: time.Minute, MaxAttempts: 1})
				if err != nil || !r.Claimed {
					t.Fatalf("claim %s: %+v, %v", job, r, err)
				}
				done := make(chan error, 1)
				go func() {
					_, err := b.Finish(store.SlotFinishParams{Job: job, Slot: r.Slot.Slot, LeaseName: r.Lease.Name, Owner: "a",
						Generation: r.Lease.Generation, Status: store.SlotCompleted, Run: store.Run{Attempt: 1, Success: true}}, 10*time.Second)
					done <- err
				}()
				return done
			}
			first := finish("first")
			if n := <-g.entered; n != 1 {
				t.Fatalf("the first end went in a batch of %d", n)
			}
			second, third := finish("second"), finish("third") // queued behind the first
			wait.For(t, 10*time.Second, func() bool {
				return b.Queued() == 2
			}, func() string { return "the later ends did not queue" })
			g.release <- struct{}{} // the first batch lands
			if n := <-g.entered; n != 2 {
				t.Fatalf("the queued ends went in a batch of %d, want 2", n)
			}
			// The second batch is in flight, held: the first end is answered.
			select {
			case err := <-first:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the first end waited for the batch after its own")
			}
			g.release <- struct{}{}
			for _, done := range []<-chan error{second, third} {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
