package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cronfence/cronfence/store"
)

// LeaseAcquire takes the lease if it is free or expired. See store.Store.
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, bool, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, false, err
	}
	if err := s.usable(); err != nil {
		return store.Lease{}, false, err
	}
	var (
		l        store.Lease
		acquired bool
	)
	err := s.pool.QueryRow(ctx, s.q.leaseAcquire, p.Name, p.Owner, micros(p.TTL), s.nowArg(p.Now), s.liveKeyArg(p.LiveKey)).
		Scan(&acquired, &l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// Held by an owner whose row this statement's snapshot predates.
		return store.Lease{}, false, nil
	}
	if err != nil {
		return store.Lease{}, false, s.translate(fmt.Sprintf("acquire lease %q", p.Name), err)
	}
	return utcLease(l), acquired, nil
}

// LeaseRenew extends a lease its owner still holds. See store.Store.
func (s *Store) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, err
	}
	if err := s.usable(); err != nil {
		return store.Lease{}, err
	}
	var l store.Lease
	err := s.pool.QueryRow(ctx, s.q.leaseRenew, p.Name, p.Owner, p.Generation, micros(p.TTL), s.nowArg(p.Now)).
		Scan(&l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("postgres: renew lease %q at generation %d: %w", p.Name, p.Generation, store.ErrLeaseLost)
	}
	if err != nil {
		return store.Lease{}, s.translate(fmt.Sprintf("renew lease %q", p.Name), err)
	}
	return utcLease(l), nil
}

// LeaseRenewBatch renews many leases in one round trip. See store.Store.
func (s *Store) LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error) {
	if err := store.ValidateRenewBatch(items); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	// Lock rows in name order, as every statement does, against deadlocks.
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b store.LeaseRenewParams) int { return strings.Compare(a.Name, b.Name) })
	rows, err := s.pool.Query(ctx, s.q.leaseRenewBatch, s.renewBatchArgs(items)...)
	if err != nil {
		return nil, s.translate("renew leases", err)
	}
	renewed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Lease, error) {
		var l store.Lease
		err := row.Scan(&l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
		return utcLease(l), err
	})
	if err != nil {
		return nil, s.translate("renew leases", err)
	}
	return renewed, nil
}

// renewBatchArgs are leaseRenewBatch.sql's arguments for items (at least
// one), in their order.
func (s *Store) renewBatchArgs(items []store.LeaseRenewParams) []any {
	names, owners := make([]string, len(items)), make([]string, len(items))
	generations, ttls := make([]int64, len(items)), make([]int64, len(items))
	for i, p := range items {
		names[i], owners[i], generations[i], ttls[i] = p.Name, p.Owner, p.Generation, micros(p.TTL)
	}
	return []any{names, owners, generations, ttls, s.nowArg(items[0].Now)}
}

// LeaseRelease expires the owner's own generation of a lease. See store.Store.
func (s *Store) LeaseRelease(ctx context.Context, ref store.LeaseRef) (bool, error) {
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if err := s.usable(); err != nil {
		return false, err
	}
	tag, err := s.pool.Exec(ctx, s.q.leaseRelease, ref.Name, ref.Owner, ref.Generation, s.nowArg(time.Time{}))
	if err != nil {
		return false, s.translate(fmt.Sprintf("release lease %q", ref.Name), err)
	}
	return tag.RowsAffected() == 1, nil
}

// LeaseGet returns the named lease, expired or not.
func (s *Store) LeaseGet(ctx context.Context, name string) (store.Lease, error) {
	if err := store.ValidateName("lease name", name); err != nil {
		return store.Lease{}, err
	}
	if err := s.usable(); err != nil {
		return store.Lease{}, err
	}
	var l store.Lease
	err := s.pool.QueryRow(ctx, s.q.leaseGet, name).
		Scan(&l.Name, &l.Owner, &l.Generation, &l.AcquiredAt, &l.RenewedAt, &l.ExpiresAt)
	if err != nil {
		return store.Lease{}, s.translate(fmt.Sprintf("get lease %q", name), err)
	}
	return utcLease(l), nil
}

// LeaseFence checks, inside tx, that generation still holds the lease and
// holds the lease row with FOR KEY SHARE until tx ends, so a takeover waits
// for the commit while the owner's renewals go on. tx must be a pgx.Tx or a
// *sql.Tx on a PostgreSQL driver. It returns store.ErrLeaseLost when fenced
// out; the caller must then roll back.
//
// In a REPEATABLE READ or SERIALIZABLE transaction whose snapshot predates
// a takeover, PostgreSQL refuses the row lock with a serialization failure
// (SQLSTATE 40001) instead of returning no row. LeaseFence then reads the
// lease outside tx and reports the loss as store.ErrLeaseLost when another
// generation holds it (or it expired); the failure is returned as it is
// only when the lease is still this generation's.
func (s *Store) LeaseFence(ctx context.Context, tx any, name string, generation int64) error {
	if err := store.ValidateFence(name, generation); err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	q, err := txQuerier(tx)
	if err != nil {
		return fmt.Errorf("postgres: fence lease %q: %w", name, err)
	}
	return s.fence(ctx, q, name, generation, s.q.leaseFence, name, generation, s.nowArg(time.Time{}))
}

// fence runs, through q, a fencing statement (sql/leaseFence.sql, or
// sql/slotComplete.sql, which fences first) that returns a row only when
// generation holds the lease name, as LeaseFence describes.
func (s *Store) fence(ctx context.Context, q querier, name string, generation int64, sql string, args ...any) error {
	var one int
	err := q.queryRow(ctx, sql, args...).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: fence lease %q at generation %d: %w", name, generation, store.ErrLeaseLost)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "40001" { // serialization_failure
		// Read outside tx, whose snapshot is older than what it met.
		l, getErr := s.LeaseGet(ctx, name)
		switch {
		case getErr != nil:
			return fmt.Errorf("postgres: fence lease %q at generation %d: %w (and the lease could not be read to tell whether it was taken over: %v)",
				name, generation, s.describe("fence", err), getErr)
		case l.Generation != generation:
			return fmt.Errorf("postgres: fence lease %q at generation %d: taken over by %s at generation %d after this transaction's snapshot (%s): %w",
				name, generation, l.Owner, l.Generation, pgErr.Message, store.ErrLeaseLost)
		}
	}
	if err != nil {
		// describe, not translate: the statement ran in the caller's
		// transaction, whose refusals are the caller's.
		return s.describe(fmt.Sprintf("fence lease %q", name), err)
	}
	return nil
}

// querier is the one call the fence and the completion make in a caller's
// transaction, on pgx or database/sql alike.
type querier interface {
	queryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// txQuerier accepts only transactions: a fence on a pool or a bare
// connection would let go of the row lock as soon as the check returned,
// protecting nothing.
func txQuerier(tx any) (querier, error) {
	switch t := tx.(type) {
	case pgx.Tx:
		return pgxTx{t}, nil
	case *sql.Tx:
		return sqlTx{t}, nil
	}
	return nil, fmt.Errorf("%T is neither a pgx.Tx nor a *sql.Tx (a fence outside a transaction protects nothing): %w", tx, store.ErrUnsupportedTx)
}

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) queryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return t.tx.QueryRow(ctx, q, args...)
}

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) queryRow(ctx context.Context, q string, args ...any) pgx.Row {
	return sqlRow{t.tx.QueryRowContext(ctx, q, args...)}
}

// sqlRow reports database/sql's no-row error as pgx's.
type sqlRow struct{ row *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return pgx.ErrNoRows
	}
	return err
}

func utcLease(l store.Lease) store.Lease {
	l.AcquiredAt = l.AcquiredAt.UTC()
	l.RenewedAt = l.RenewedAt.UTC()
	l.ExpiresAt = l.ExpiresAt.UTC()
	return l
}
