package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// lockedLease is a lease row read FOR UPDATE: the lease, and whether its
// owner kept a liveness lock that is free now (its process is gone).
type lockedLease struct {
	store.Lease
	ownerGone bool
}

// heldAgainst reports whether someone other than owner holds l at now:
// unexpired, and its owner's process not gone (as leaseHeld.sql on
// PostgreSQL). An owner asking again for its own lease finds it held while
// it is unexpired: there is no re-entrancy.
func (l lockedLease) heldAgainst(owner string, now time.Time) bool {
	return l.ExpiresAt.After(now) && !(l.ownerGone && l.Owner != owner)
}

// lockedLeaseColumns are a lease row's columns and whether its owner's
// process is gone, read as a lockedLease (see scanLockedLease).
const lockedLeaseColumns = sqlstore.LeaseColumns + `, live_key IS NOT NULL AND IS_FREE_LOCK(CONCAT('cronfence.live.', live_key)) = 1`

// lockLeasesSQL is the statement that locks the rows of n named leases,
// those that exist, FOR UPDATE in the order of the names given (name
// order, sorted by the caller), reading them as lockedLeases.
func (s *Store) lockLeasesSQL(n int) string {
	return `SELECT ` + lockedLeaseColumns + `
		  FROM ` + s.t("leases") + ` WHERE name IN (` + placeholders(n) + `) ORDER BY name FOR UPDATE`
}

// leaseRowSQL reads the row of one named lease as a lockedLease without
// locking it: the row as last committed.
func (s *Store) leaseRowSQL() string {
	return `SELECT ` + lockedLeaseColumns + ` FROM ` + s.t("leases") + ` WHERE name = ?`
}

func scanLockedLease(row sqlstore.Row) (lockedLease, error) {
	var l lockedLease
	var err error
	l.Lease, err = decode.LeaseAnd(row, &l.ownerGone)
	return l, err
}

// lockLease locks the row of one lease FOR UPDATE (see lockLeasesSQL).
func (s *Store) lockLease(ctx context.Context, tx *sql.Tx, name string) (lockedLease, bool, error) {
	l, err := scanLockedLease(tx.QueryRowContext(ctx, s.lockLeasesSQL(1), name))
	if errors.Is(err, sql.ErrNoRows) {
		return lockedLease{}, false, nil
	}
	return l, err == nil, err
}

// leaseTake is the write that gives a lease to a new holder: the statement
// and its arguments, and the lease as it will be.
type leaseTake struct {
	lease store.Lease
	sql   string
	args  []any
}

// planTake decides whether owner may take the lease name, locked or known
// absent (cur, found), at now for ttl: when nobody else holds it, the row
// is to be inserted at generation 1 or taken over at generation + 1,
// whoever its owner was. Refused (ok false), the lease returned is the
// holder. The write is left to the caller, to send with what else it
// writes.
func (s *Store) planTake(cur lockedLease, found bool, name, owner string, ttl time.Duration, liveKey int64, now time.Time) (leaseTake, bool) {
	if found && cur.heldAgainst(owner, now) {
		return leaseTake{lease: cur.Lease}, false
	}
	l := store.Lease{Name: name, Owner: owner, Generation: 1, AcquiredAt: now, RenewedAt: now, ExpiresAt: sqlstore.Normalize(now.Add(ttl))}
	if !found {
		return leaseTake{lease: l,
			sql:  `INSERT INTO ` + s.t("leases") + ` (` + sqlstore.LeaseColumns + `, live_key) VALUES (?, ?, ?, ?, ?, ?, ` + liveKeyValue + `)`,
			args: []any{l.Name, l.Owner, l.Generation, l.AcquiredAt, l.RenewedAt, l.ExpiresAt, liveKey, liveKey, liveKey}}, true
	}
	l.Generation = cur.Generation + 1
	return leaseTake{lease: l,
		sql: `UPDATE ` + s.t("leases") + `
		   SET owner = ?, generation = ?, acquired_at = ?, renewed_at = ?, expires_at = ?, live_key = ` + liveKeyValue + `
		 WHERE name = ?`,
		args: []any{l.Owner, l.Generation, l.AcquiredAt, l.RenewedAt, l.ExpiresAt, liveKey, liveKey, liveKey, l.Name}}, true
}

// liveKeyValue is the live_key a lease is written with, from a key given
// three times: NULL for none, and NULL too when no session holds the key's
// lock at that moment. The hold notices its connection broke only at its
// next check (LivenessHold), so the statement asks the server itself:
// a lease recorded with a key nobody holds would look like a dead owner's
// and be taken over at once (after a server restart, every replica's
// claims would, in turn); recorded without one, it waits for its TTL.
const liveKeyValue = `IF(? = 0 OR IS_USED_LOCK(CONCAT('cronfence.live.', ?)) IS NULL, NULL, ?)`

// LeaseAcquire takes the named lease if it is free, expired or its owner's
// process is gone; see store.Store. One transaction: the row locked, the
// clock read, the row written (4 round trips with BEGIN and COMMIT, 3
// with a pinned clock).
func (s *Store) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (lease store.Lease, acquired bool, err error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, false, err
	}
	if s.closed.Load() {
		return store.Lease{}, false, closedError("acquire lease")
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		cur, found, err := s.lockLease(ctx, tx, p.Name)
		if err != nil {
			return err
		}
		now, err := s.now(ctx, tx, p.Now)
		if err != nil {
			return err
		}
		take, ok := s.planTake(cur, found, p.Name, p.Owner, p.TTL, s.liveKeyArg(p.LiveKey), now)
		lease, acquired = take.lease, ok
		if !ok {
			return nil
		}
		_, err = tx.ExecContext(ctx, take.sql, take.args...)
		if mysqlCode(err) == errDupKey {
			return errRaced // a row inserted since the lock found none
		}
		return err
	})
	if err != nil {
		return store.Lease{}, false, s.errorf(err, "acquire lease %q", p.Name)
	}
	return lease, acquired, nil
}

// nowArg is the value of a COALESCE(?, UTC_TIMESTAMP(6)) argument: the
// pinned time, else Config.NowFunc's, else NULL for the database clock.
func (s *Store) nowArg(pinned time.Time) sql.NullTime {
	switch {
	case !pinned.IsZero():
		return nullTime(pinned)
	case s.nowFunc != nil:
		return nullTime(s.nowFunc())
	}
	return sql.NullTime{}
}

// LeaseRenew extends the lease held by p.Owner at p.Generation if it has not
// expired, or returns an error wrapping store.ErrLeaseLost. One round trip.
func (s *Store) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	if err := p.Validate(); err != nil {
		return store.Lease{}, err
	}
	if s.closed.Load() {
		return store.Lease{}, closedError("renew lease")
	}
	if err := s.checkSchema(ctx, s.own); err != nil {
		return store.Lease{}, s.errorf(err, "renew lease %q generation %d", p.Name, p.Generation)
	}
	lease, err := s.renewLease(ctx, s.own, p, s.nowArg(p.Now))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, leaseLost(p.Name, p.Owner, p.Generation)
	}
	if err != nil {
		return store.Lease{}, s.errorf(err, "renew lease %q generation %d", p.Name, p.Generation)
	}
	return lease, nil
}

// LeaseRenewBatch renews many leases and returns those renewed, in the
// items' order; a lease missing from the result was lost. Each item is
// LeaseRenew's conditional update, a round trip each, in one transaction.
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
	now := s.nowArg(items[0].Now) // shared by every item
	var renewed []store.Lease
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		renewed = renewed[:0]
		for _, p := range items {
			lease, err := s.renewLease(ctx, tx, p, now)
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
// before it expired, and returns it; sql.ErrNoRows means it was lost. now is
// a nowArg. The update and the read of the row it left go in one round
// trip; ROW_COUNT() says whether the update matched (the pool counts the
// rows matched). Without a transaction the two are two statements: the row
// read is still this holding's, as nobody can take a lease just renewed.
func (s *Store) renewLease(ctx context.Context, q sqlstore.Querier, p store.LeaseRenewParams, now sql.NullTime) (store.Lease, error) {
	var (
		lease   store.Lease
		matched int64
	)
	err := resultSets(ctx, q, `UPDATE `+s.t("leases")+`
		   SET expires_at = COALESCE(?, UTC_TIMESTAMP(6)) + INTERVAL ? MICROSECOND, renewed_at = COALESCE(?, UTC_TIMESTAMP(6))
		 WHERE name = ? AND owner = ? AND generation = ? AND expires_at > COALESCE(?, UTC_TIMESTAMP(6));
		SELECT `+sqlstore.LeaseColumns+`, ROW_COUNT() FROM `+s.t("leases")+` WHERE name = ? AND owner = ? AND generation = ?`,
		[]any{now, p.TTL.Microseconds(), now, p.Name, p.Owner, p.Generation, now, p.Name, p.Owner, p.Generation},
		func(_ int, rows *sql.Rows) (err error) {
			lease, err = decode.LeaseAnd(rows, &matched)
			return err
		})
	if err != nil {
		return store.Lease{}, err
	}
	if matched == 0 {
		return store.Lease{}, sql.ErrNoRows
	}
	return lease, nil
}

func leaseLost(name, owner string, generation int64) error {
	return fmt.Errorf("mysql: lease %q generation %d is no longer held by %q: %w", name, generation, owner, store.ErrLeaseLost)
}

// LeaseRelease expires the lease held by ref.Owner at ref.Generation. The
// row stays, so the generation never goes back, and a lease that has already
// expired keeps its earlier expiry (LEAST), so a late release cannot move
// time forwards for anyone. One statement.
func (s *Store) LeaseRelease(ctx context.Context, ref store.LeaseRef) (bool, error) {
	if err := ref.Validate(); err != nil {
		return false, err
	}
	if s.closed.Load() {
		return false, closedError("release lease")
	}
	if err := s.checkSchema(ctx, s.own); err != nil {
		return false, s.errorf(err, "release lease %q generation %d", ref.Name, ref.Generation)
	}
	released, err := s.releaseLease(ctx, s.own, ref, s.nowArg(time.Time{}))
	if err != nil {
		return false, s.errorf(err, "release lease %q generation %d", ref.Name, ref.Generation)
	}
	return released, nil
}

// releaseLease is LeaseRelease on q, shared with SlotFinish. now is a
// nowArg. The pool counts the rows matched (clientFoundRows), so released
// reports a match even when LEAST leaves expires_at as it was, as the
// contract asks.
func (s *Store) releaseLease(ctx context.Context, q sqlstore.Querier, ref store.LeaseRef, now sql.NullTime) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE `+s.t("leases")+` SET expires_at = LEAST(expires_at, COALESCE(?, UTC_TIMESTAMP(6)))
		WHERE name = ? AND owner = ? AND generation = ?`,
		now, ref.Name, ref.Owner, ref.Generation)
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
	lease, err := getLease(ctx, s.db, s.t("leases"), name)
	if err != nil {
		return store.Lease{}, s.errorf(err, "get lease %q", name)
	}
	return lease, nil
}

func getLease(ctx context.Context, q sqlstore.Querier, table, name string) (store.Lease, error) {
	return decode.Lease(q.QueryRowContext(ctx, `SELECT `+sqlstore.LeaseColumns+` FROM `+table+` WHERE name = ?`, name))
}
