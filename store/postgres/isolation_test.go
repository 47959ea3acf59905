package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// A handler's transaction may run at REPEATABLE READ or SERIALIZABLE. Its
// snapshot then predates a takeover that commits before its fence, and
// PostgreSQL refuses the fence's row lock with a serialization failure
// (40001), which a client takes for a conflict to retry. The fence must say
// what it is: the lease is lost (ErrLeaseLost from Go, CF001 from SQL), so
// the run counts as interrupted, not failed, and a fence-refused event is
// raised. The owner's own renewal after the snapshot is no takeover: the
// fence passes.
func TestFenceInASnapshotTransactionReportsATakeoverAsALostLease(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	fences := []struct {
		name string
		fn   func(tx pgx.Tx, l store.Lease, slot time.Time) error
		lost func(err error) bool
	}{
		{"LeaseFence", func(tx pgx.Tx, l store.Lease, _ time.Time) error {
			return s.LeaseFence(ctx(t), tx, l.Name, l.Generation)
		}, func(err error) bool { return errors.Is(err, store.ErrLeaseLost) }},
		{"SlotComplete", func(tx pgx.Tx, l store.Lease, slot time.Time) error {
			return s.SlotComplete(ctx(t), tx, store.SlotCompleteParams{Job: strings.TrimPrefix(l.Name, "job:"), Slot: slot, LeaseName: l.Name, Generation: l.Generation})
		}, func(err error) bool { return errors.Is(err, store.ErrLeaseLost) }},
		{"SQL fence()", func(tx pgx.Tx, l store.Lease, _ time.Time) error {
			_, err := tx.Exec(ctx(t), `SELECT `+pgx.Identifier{schema, "fence"}.Sanitize()+`($1, $2)`, l.Name, l.Generation)
			return err
		}, isCF001},
		{"SQL complete()", func(tx pgx.Tx, l store.Lease, _ time.Time) error {
			_, err := tx.Exec(ctx(t), `SELECT `+pgx.Identifier{schema, "complete"}.Sanitize()+`($1, $2)`, l.Name, l.Generation)
			return err
		}, isCF001},
	}
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		for i, f := range fences {
			job := strings.ReplaceAll(strings.ToLower(string(iso)), " ", "-") + "-" + strings.Trim(strings.ToLower(strings.Fields(f.name)[0]), "()")
			job += "-" + string(rune('a'+i))
			t.Run(string(iso)+"/"+f.name, func(t *testing.T) {
				now, err := s.Now(ctx(t))
				if err != nil {
					t.Fatal(err)
				}
				slot := now.Add(-time.Second).Truncate(time.Second)
				claimed, err := s.SlotClaim(ctx(t), store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job, Owner: "a", TTL: time.Minute, MaxAttempts: 3})
				if err != nil || !claimed.Claimed {
					t.Fatalf("claim = %+v, %v", claimed, err)
				}
				l := claimed.Lease

				// The owner renews after the snapshot: its fence still passes.
				tx := beginAt(t, s, iso)
				if _, err := s.LeaseRenew(ctx(t), store.LeaseRenewParams{LeaseRef: l.Ref(), TTL: time.Minute}); err != nil {
					t.Fatal(err)
				}
				if err := f.fn(tx, l, slot); err != nil {
					t.Fatalf("fence after the owner's own renewal: %v", err)
				}
				_ = tx.Rollback(ctx(t))

				// Another owner takes the lease over after the snapshot.
				tx = beginAt(t, s, iso)
				defer tx.Rollback(context.Background())
				if _, ok, err := other.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: l.Name, Owner: "b", TTL: time.Hour, Now: now.Add(time.Hour)}); err != nil || !ok {
					t.Fatalf("takeover = %v, %v", ok, err)
				}
				err = f.fn(tx, l, slot)
				if !f.lost(err) {
					t.Fatalf("fence after a takeover = %v; want the lease reported lost", err)
				}
				var pgErr *pgconn.PgError
				if errors.As(err, &pgErr) && pgErr.Code == "40001" {
					t.Fatalf("fence after a takeover answered 40001 (%v)", err)
				}
			})
		}
	}
}

// beginAt begins a transaction at iso and takes its snapshot.
func beginAt(t *testing.T, s *postgres.Store, iso pgx.TxIsoLevel) pgx.Tx {
	t.Helper()
	tx, err := s.Pool().BeginTx(ctx(t), pgx.TxOptions{IsoLevel: iso})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx(t), `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	return tx
}

func isCF001(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "CF001"
}
