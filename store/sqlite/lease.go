package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// LeaseAcquire takes the named lease if it is free or expired; see
// store.Store. The upsert and, when it takes nothing, the read of the holder
// run in one immediate transaction, so the holder returned is the one that
// refused us.
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (lease store.Lease, acquired bool, err error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, false, err
	}
	if s.closed.Load() {
		return store.Lease{}, false, closedError("acquire lease")
	}
	now := s.now(p.Now)
	err = s.inTx(ctx, func(tx *sql.Tx) (err error) {
		lease, acquired, err = acquireLease(ctx, tx, p.Name, p.Owner, p.TTL, now)
		return err
	})
	if err != nil {
		return store.Lease{}, false, s.errorf(err, "acquire lease %q", p.Name)
	}
	return lease, acquired, nil
}

// acquireLease is LeaseAcquire inside a transaction the caller holds, shared
// with SlotClaim. The upsert creates the row at generation 1 or takes over an
// expired one at generation + 1, whoever its owner was: there is no
// re-entrancy, an owner asking again for its own unexpired lease is refused
// like anyone else. Nor is there a liveness takeover (store.Liveness): an
// unexpired lease is refused even when its owner's process is gone. When the
// upsert's WHERE refuses, RETURNING yields no row and the current holder is
// read instead.
func acquireLease(ctx context.Context, tx *sql.Tx, name, owner string, ttl time.Duration, now time.Time) (store.Lease, bool, error) {
	lease, err := decode.Lease(tx.QueryRowContext(ctx, `
		INSERT INTO cronfence_leases (name, owner, generation, acquired_at, renewed_at, expires_at)
		VALUES (?1, ?2, 1, ?3, ?3, ?4)
		ON CONFLICT (name) DO UPDATE SET
			owner       = excluded.owner,
			generation  = cronfence_leases.generation + 1,
			acquired_at = excluded.acquired_at,
			renewed_at  = excluded.renewed_at,
			expires_at  = excluded.expires_at
		WHERE cronfence_leases.expires_at <= excluded.acquired_at
		RETURNING `+sqlstore.LeaseColumns,
		name, owner, micros(now), micros(now.Add(ttl)),
	))
	if err == nil {
		return lease, true, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, false, err
	}
	holder, err := getLease(ctx, tx, name)
	if err != nil {
		return store.Lease{}, false, err
	}
	return holder, false, nil
}

// LeaseRenew extends the lease held by p.Owner at p.Generation if it has not
// expired, or returns an error wrapping store.ErrLeaseLost.
func (s *Store) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, err
	}
	if s.closed.Load() {
		return store.Lease{}, closedError("renew lease")
	}
	now := s.now(p.Now)
	var lease store.Lease
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		lease, err = renewLease(ctx, tx, p, now)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, leaseLost(p.Name, p.Owner, p.Generation)
	}
	if err != nil {
		return store.Lease{}, s.errorf(err, "renew lease %q generation %d", p.Name, p.Generation)
	}
	return lease, nil
}

// LeaseRenewBatch renews many leases in one immediate transaction and
// returns those renewed, in the items' order; a lease missing from the
// result was lost. Each item is LeaseRenew's conditional update.
func (s *Store) LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error) {
	if err := store.ValidateRenewBatch(items); err != nil {
		return nil, err
	}
	if s.closed.Load() {
		return nil, closedError("renew leases")
	}
	if len(items) == 0 {
		return nil, nil
	}
	now := s.now(items[0].Now) // shared by every item
	var renewed []store.Lease
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		for _, p := range items {
			lease, err := renewLease(ctx, tx, p, now)
			if errors.Is(err, sql.ErrNoRows) {
				continue // lost
			}
			if err != nil {
				return err
			}
			renewed = append(renewed, lease)
		}
		return nil
	})
	if err != nil {
		return nil, s.errorf(err, "renew %d lease(s), first %q", len(items), items[0].Name)
	}
	return renewed, nil
}

// renewLease extends the lease p names for its owner at its generation, only
// before it expired, and returns it; sql.ErrNoRows means it was lost.
// Shared by LeaseRenew and LeaseRenewBatch.
func renewLease(ctx context.Context, q sqlstore.Querier, p store.LeaseRenewParams, now time.Time) (store.Lease, error) {
	return decode.Lease(q.QueryRowContext(ctx, `
		UPDATE cronfence_leases SET expires_at = ?4, renewed_at = ?5
		WHERE name = ?1 AND owner = ?2 AND generation = ?3 AND expires_at > ?5
		RETURNING `+sqlstore.LeaseColumns,
		p.Name, p.Owner, p.Generation, micros(now.Add(p.TTL)), micros(now),
	))
}

func leaseLost(name, owner string, generation int64) error {
	return fmt.Errorf("sqlite: lease %q generation %d is no longer held by %q: %w", name, generation, owner, store.ErrLeaseLost)
}

// LeaseRelease expires the lease held by ref.Owner at ref.Generation. The
// row stays, so the generation never goes back, and a lease that has already
// expired keeps its earlier expiry (min), so a late release cannot move time
// forwards for anyone.
func (s *Store) LeaseRelease(ctx context.Context, ref store.LeaseRef) (bool, error) {
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if s.closed.Load() {
		return false, closedError("release lease")
	}
	var released bool
	err := s.inTx(ctx, func(tx *sql.Tx) (err error) {
		released, err = releaseLease(ctx, tx, ref, s.now(time.Time{}))
		return err
	})
	if err != nil {
		return false, s.errorf(err, "release lease %q generation %d", ref.Name, ref.Generation)
	}
	return released, nil
}

// releaseLease is LeaseRelease on q, shared with SlotFinish. SQLite counts a
// row the WHERE matched as changed even when min leaves expires_at as it
// was, so released reports a match, as the contract asks.
func releaseLease(ctx context.Context, q sqlstore.Querier, ref store.LeaseRef, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `
		UPDATE cronfence_leases SET expires_at = min(expires_at, ?4)
		WHERE name = ?1 AND owner = ?2 AND generation = ?3`,
		ref.Name, ref.Owner, ref.Generation, micros(now),
	)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// LeaseGet returns the named lease, expired or not, or store.ErrNotFound.
func (s *Store) LeaseGet(ctx context.Context, name string) (store.Lease, error) {
	if err := store.ValidateName("lease name", name); err != nil {
		return store.Lease{}, err
	}
	if s.closed.Load() {
		return store.Lease{}, closedError("get lease")
	}
	if err := s.checkSchema(ctx, s.db); err != nil {
		return store.Lease{}, s.errorf(err, "get lease %q", name)
	}
	lease, err := getLease(ctx, s.db, name)
	if err != nil {
		return store.Lease{}, s.errorf(err, "get lease %q", name)
	}
	return lease, nil
}

func getLease(ctx context.Context, q sqlstore.Querier, name string) (store.Lease, error) {
	return decode.Lease(q.QueryRowContext(ctx, `SELECT `+sqlstore.LeaseColumns+` FROM cronfence_leases WHERE name = ?`, name))
}
