package cronfence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cronfence/cronfence"
)

// Fence every write made under a lease inside the write's own transaction:
// a process that was paused past its TTL wakes up with a stale generation,
// and its write is refused instead of landing next to the new owner's. The
// unique key on the effect is the last layer.
func ExampleLease_Fence() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()

	db := s.DB() // the handler's own tables live in the same file
	if _, err := db.ExecContext(ctx, `CREATE TABLE commissions (store_id INTEGER, day TEXT, amount REAL, PRIMARY KEY (store_id, day))`); err != nil {
		log.Fatal(err)
	}
	writeCommission := func(ctx context.Context, lease *cronfence.Lease, storeID int) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback() }()
		if err := lease.Fence(ctx, tx); err != nil {
			return err // lost the lease: this write must not commit
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO commissions VALUES (?, '2026-09-25', 42.0) ON CONFLICT DO NOTHING`, storeID); err != nil {
			return err
		}
		return tx.Commit()
	}

	// Yesterday's run held generation 1; today's holds generation 2.
	var yesterday cronfence.Lease
	_, _ = cronfence.Lock(ctx, s, "daily-close", time.Minute, func(_ context.Context, lease *cronfence.Lease) error {
		yesterday = *lease
		return nil
	})
	_, err := cronfence.Lock(ctx, s, "daily-close", time.Minute, func(ctx context.Context, lease *cronfence.Lease) error {
		if err := writeCommission(ctx, lease, 42); err != nil {
			return err
		}
		// A process that held generation 1 wakes up from a long pause and
		// writes: the fence refuses it.
		err := writeCommission(ctx, &yesterday, 43)
		fmt.Println("stale write refused:", errors.Is(err, cronfence.ErrLeaseLost))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}

	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM commissions`).Scan(&n); err != nil && !errors.Is(err, sql.ErrNoRows) {
		log.Fatal(err)
	}
	fmt.Println("rows written:", n)
	// Output:
	// stale write refused: true
	// rows written: 1
}
