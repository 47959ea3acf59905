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

// LeaseFence checks, inside the caller's transaction tx, that generation
// still holds an unexpired lease under name. tx must be a *sql.Tx on this
// file (from DB, or from any pool opened on the same path); any other type
// returns an error wrapping store.ErrUnsupportedTx.
//
// There is no FOR SHARE in SQLite; the write lock does its work. In an
// IMMEDIATE transaction (what DB().BeginTx begins) the caller has held
// SQLite's single write lock since BEGIN, so once this check passes no
// takeover, in any process, can commit before tx ends: the caller's writes
// land first, then the successor gets generation + 1. In a DEFERRED
// transaction the check reads a WAL snapshot; should a takeover commit after
// it, tx's first write fails with SQLITE_BUSY_SNAPSHOT and nothing lands.
// Either way a process that lost its lease cannot commit a write to this
// file after its successor has started. Writes elsewhere are not fenced.
func (s *Store) LeaseFence(ctx context.Context, tx any, name string, generation int64) error {
	if err := store.ValidateFence(name, generation); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("fence")
	}
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return fmt.Errorf("sqlite: fence lease %q: got %T, want *sql.Tx on this file: %w", name, tx, store.ErrUnsupportedTx)
	}
	return s.fence(ctx, sqlTx, name, generation)
}

// fence is LeaseFence on a transaction of the right type.
func (s *Store) fence(ctx context.Context, sqlTx *sql.Tx, name string, generation int64) error {
	// Checked through tx, not the pool: the caller may hold the pool's only
	// connection.
	if err := s.checkSchema(ctx, sqlTx); err != nil {
		return s.errorf(err, "fence lease %q", name)
	}
	var one int
	err := sqlTx.QueryRowContext(ctx,
		`SELECT 1 FROM cronfence_leases WHERE name = ? AND generation = ? AND expires_at > ?`,
		name, generation, micros(s.now(time.Time{})),
	).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("sqlite: fence lease %q: generation %d no longer holds it: %w", name, generation, store.ErrLeaseLost)
	}
	if err != nil {
		return s.errorf(err, "fence lease %q generation %d", name, generation)
	}
	return nil
}

// SlotComplete fences tx as LeaseFence does and marks the slot the holding
// runs completed, in tx: the caller's effect and the completion commit
// together. tx must be a *sql.Tx on this file. See store.Store.
func (s *Store) SlotComplete(ctx context.Context, tx any, p store.SlotCompleteParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("complete slot")
	}
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return fmt.Errorf("sqlite: complete slot of job %q: got %T, want *sql.Tx on this file: %w", p.Job, tx, store.ErrUnsupportedTx)
	}
	if err := s.fence(ctx, sqlTx, p.LeaseName, p.Generation); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return nil // a manual run: no slot to complete
	}
	slot := sqlstore.Normalize(p.Slot)
	_, err := sqlTx.ExecContext(ctx, `
		UPDATE cronfence_slots SET status = 'completed', finished_at = ?
		 WHERE job = ? AND slot = ? AND lease_name = ? AND generation = ? AND status = 'running'`,
		micros(s.now(time.Time{})), p.Job, micros(slot), p.LeaseName, p.Generation)
	if err != nil {
		return s.errorf(err, "complete slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return nil
}
