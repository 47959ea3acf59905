package cronfence

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Lease is one holding of a named lease: who holds it and under which
// generation, the fencing token.
type Lease struct {
	Name       string
	Owner      string
	Generation int64     // strictly increasing per name, never reset
	ExpiresAt  time.Time // as of acquisition, by the database clock; renewals move it

	store store.Store
}

// Fence checks, inside the caller's own transaction tx, that this generation
// still holds the lease, and keeps it so until tx ends: on PostgreSQL the
// lease row is held FOR KEY SHARE, so a takeover waits for the commit (and
// the holder's renewals do not); on SQLite the transaction's write lock does
// the same, and holds up every other write to the file meanwhile. tx is a pgx.Tx or a *sql.Tx on
// the store's database (see each store's LeaseFence for what it accepts).
//
// It returns an error wrapping ErrLeaseLost when fenced out: roll back, the
// write must not commit. Call it in every transaction that writes under the
// lease, right before the writes, not once at the start of the work.
func (l *Lease) Fence(ctx context.Context, tx any) error {
	return l.store.LeaseFence(ctx, tx, l.Name, l.Generation)
}

func newLease(l store.Lease, s store.Store) *Lease {
	return &Lease{Name: l.Name, Owner: l.Owner, Generation: l.Generation, ExpiresAt: l.ExpiresAt, store: s}
}
