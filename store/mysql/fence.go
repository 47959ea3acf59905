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

// LeaseFence checks, inside the caller's transaction tx, that generation
// still holds an unexpired lease under name, and locks the lease row in
// share mode until tx ends (FOR SHARE on MySQL, LOCK IN SHARE MODE on
// MariaDB): a takeover locks the row for update, so it waits for tx's
// commit, and the writer's effects land before its successor's generation
// exists. tx must be a *sql.Tx on this database (from DB(), or any pool
// on it); any other type returns an error wrapping store.ErrUnsupportedTx.
//
// The clock is the database's at the statement (UTC_TIMESTAMP(6)), unless
// Config.NowFunc pins it. A locking read sees the newest committed row
// whatever tx's isolation level, so a REPEATABLE READ snapshot taken before
// a takeover does not hide it. Clients other than this package call the
// procedure cronfence_fence (see the migration), which raises SQLSTATE
// CF001.
func (s *Store) LeaseFence(ctx context.Context, tx any, name string, generation int64) error {
	if err := store.ValidateFence(name, generation); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("fence")
	}
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return fmt.Errorf("mysql: fence lease %q: got %T, want *sql.Tx on this database: %w", name, tx, store.ErrUnsupportedTx)
	}
	return s.fence(ctx, sqlTx, name, generation)
}

// fence is LeaseFence on a transaction of the right type.
func (s *Store) fence(ctx context.Context, tx *sql.Tx, name string, generation int64) error {
	// Checked through tx, not the pool: the caller may hold the pool's
	// only connection.
	if err := s.checkSchema(ctx, tx); err != nil {
		return s.errorf(err, "fence lease %q", name)
	}
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM `+s.t("leases")+`
		WHERE name = ? AND generation = ? AND expires_at > COALESCE(?, UTC_TIMESTAMP(6)) `+s.share,
		name, generation, s.nowArg(time.Time{})).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("mysql: fence lease %q: generation %d no longer holds it: %w", name, generation, store.ErrLeaseLost)
	}
	if err != nil {
		return s.errorf(err, "fence lease %q generation %d", name, generation)
	}
	return nil
}

// SlotComplete fences tx as LeaseFence does and marks the slot the holding
// runs completed, in tx: the caller's effect and the completion commit
// together. tx must be a *sql.Tx on this database. See store.Store.
func (s *Store) SlotComplete(ctx context.Context, tx any, p store.SlotCompleteParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if s.closed.Load() {
		return closedError("complete slot")
	}
	sqlTx, ok := tx.(*sql.Tx)
	if !ok {
		return fmt.Errorf("mysql: complete slot of job %q: got %T, want *sql.Tx on this database: %w", p.Job, tx, store.ErrUnsupportedTx)
	}
	if err := s.fence(ctx, sqlTx, p.LeaseName, p.Generation); err != nil {
		return err
	}
	if p.Slot.IsZero() {
		return nil // a manual run: no slot to complete
	}
	slot := sqlstore.Normalize(p.Slot)
	_, err := sqlTx.ExecContext(ctx, `UPDATE `+s.t("slots")+` SET finished_at = COALESCE(?, UTC_TIMESTAMP(6)), status = 'completed'
		 WHERE job = ? AND slot = ? AND lease_name = ? AND generation = ? AND status = 'running'`,
		s.nowArg(time.Time{}), p.Job, slot, p.LeaseName, p.Generation)
	if err != nil {
		return s.errorf(err, "complete slot %s of job %q", slot.Format(time.RFC3339Nano), p.Job)
	}
	return nil
}
