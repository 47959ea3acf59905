package cronfence_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/cronfence/cronfence"
)

// LockSlot runs a crontab line once per slot across hosts: here three
// hosts run the same yearly line one after another. The first fails and
// leaves the slot to the next, which runs it as attempt 2 and completes it
// in the transaction of its own effect; the third finds it completed.
func ExampleLockSlot() {
	ctx := context.Background()
	s, cleanup := openExampleStore(ctx)
	defer cleanup()
	if _, err := s.DB().Exec(`CREATE TABLE reports (key TEXT PRIMARY KEY)`); err != nil {
		log.Fatal(err)
	}

	l := cronfence.SlotLock{Name: "yearly-report", Schedule: "@yearly", MaxAttempts: 2}
	for _, host := range []string{"host-a", "host-b", "host-c"} {
		l.Owner = host // each host's own; OwnerID() by default
		res, err := cronfence.LockSlot(ctx, s, l, func(ctx context.Context, run *cronfence.Run) error {
			fmt.Printf("%s runs attempt %d under %s\n", host, run.Attempt, run.Lease)
			if host == "host-a" {
				return errors.New("report server unreachable")
			}
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, `INSERT INTO reports VALUES (?)`, run.IdempotencyKey()); err != nil {
				return err
			}
			// The effect and the slot's completion commit together.
			if err := run.Complete(ctx, tx); err != nil {
				return err
			}
			return tx.Commit()
		})
		switch {
		case err != nil:
			fmt.Printf("%s: slot %s: %v\n", host, res.Status, err)
		case res.Ran:
			fmt.Printf("%s: slot %s\n", host, res.Status)
		default:
			fmt.Printf("%s: not run, %s by %s\n", host, res.Refusal, res.Holder)
		}
	}
	// Output:
	// host-a runs attempt 1 under job:yearly-report
	// host-a: slot failed: report server unreachable
	// host-b runs attempt 2 under job:yearly-report
	// host-b: slot completed
	// host-c: not run, completed by host-b
}
