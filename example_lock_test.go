package cronfence_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store/sqlite"
)

// openExampleStore opens a migrated SQLite store in a temporary directory,
// the embedded default on one host.
func openExampleStore(ctx context.Context) (*sqlite.Store, func()) {
	dir, err := os.MkdirTemp("", "cronfence-example-")
	if err != nil {
		log.Fatal(err)
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, "cronfence.db"), nil)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	return s, func() { _ = s.Close(); _ = os.RemoveAll(dir) }
}

// Lock runs a function under a cluster-wide lease: renewed while it runs,
// released when it returns. A second caller meets the held lease and does
// not run.
func ExampleLock() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()

	ran, err := cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(ctx context.Context, lease *cronfence.Lease) error {
		fmt.Println("running under generation", lease.Generation)

		again, err := cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(context.Context, *cronfence.Lease) error {
			return errors.New("never runs: the lease is held")
		})
		fmt.Println("a second replica ran:", again, err)
		return nil
	})
	fmt.Println("ran:", ran, "error:", err)

	// The lease was released: the next run takes the next generation.
	_, _ = cronfence.Lock(ctx, s, "nightly-report", time.Minute, func(_ context.Context, lease *cronfence.Lease) error {
		fmt.Println("next run under generation", lease.Generation)
		return nil
	})
	// Output:
	// running under generation 1
	// a second replica ran: false <nil>
	// ran: true error: <nil>
	// next run under generation 2
}
