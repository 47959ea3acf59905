package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// TestStoreNamesArePrefixed: every schema object Migrate creates is named
// cronfence_..., except those SQLite names itself (sqlite_autoindex_...,
// sqlite_sequence), so a handler's tables in the same file cannot collide
// with the store's, now or in a later migration.
func TestStoreNamesArePrefixed(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	rows, err := s.DB().Query(`SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var typ, name, table string
		if err := rows.Scan(&typ, &name, &table); err != nil {
			t.Fatal(err)
		}
		names = append(names, typ+" "+name)
		ours := name
		if strings.HasPrefix(name, "sqlite_autoindex_") {
			ours = table // SQLite names the index, we name its table
		}
		if !strings.HasPrefix(ours, "cronfence_") && name != "sqlite_sequence" {
			t.Errorf("%s %s (on table %s) is not named cronfence_...", typ, name, table)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"table cronfence_leases", "table cronfence_slots", "table cronfence_job_state",
		"table cronfence_runs", "table cronfence_schema_migrations", "index cronfence_runs_job_id",
		"index cronfence_slots_buffered"} {
		if !strings.Contains(strings.Join(names, "\n")+"\n", want+"\n") {
			t.Errorf("schema %q lacks %s", names, want)
		}
	}
}

// TestUserTablesBesideStore: a handler keeps tables of its own in the file
// (the package documentation tells it to, so it can fence its writes in the
// same transaction) and gives them the obvious names: runs, leases, and the
// schema_migrations of golang-migrate and its kind. They can be created
// after Migrate, written under LeaseFence in an immediate transaction from
// DB(), and refused when the fence is lost, and the store's calls neither
// see nor touch them.
func TestUserTablesBesideStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	if _, err := s.DB().ExecContext(ctx, `
		CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, job TEXT NOT NULL, note TEXT NOT NULL);
		CREATE TABLE leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL);
		CREATE TABLE schema_migrations (version INTEGER NOT NULL PRIMARY KEY, dirty INTEGER NOT NULL);
		CREATE INDEX runs_job_id ON runs (job, id);
		INSERT INTO schema_migrations VALUES (20260101, 0);`); err != nil {
		t.Fatalf("creating the handler's tables after Migrate: %v", err)
	}

	// The store still works on the file, and a later Migrate (another
	// replica starting) is not confused by the handler's schema_migrations.
	if err := openStore(t, path, nil).Migrate(ctx); err != nil {
		t.Fatalf("Migrate beside the handler's tables: %v", err)
	}
	if database, binary, err := s.SchemaVersion(ctx); err != nil || database != binary {
		t.Fatalf("SchemaVersion = %d, %d, %v; want the binary's version", database, binary, err)
	}
	slot := s.now(time.Time{}).Add(-time.Minute)
	claim, err := s.SlotClaim(ctx, store.SlotClaimParams{
		Job: "settle", Slot: slot, LeaseName: "job:settle", Owner: "A", TTL: time.Hour, MaxAttempts: 1,
	})
	if err != nil || !claim.Claimed {
		t.Fatalf("SlotClaim = %+v, %v", claim, err)
	}

	// fencedWrite is the handler's transaction: fence, then write its own
	// runs and leases tables.
	fencedWrite := func(generation int64, note string) error {
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := s.LeaseFence(ctx, tx, claim.Lease.Name, generation); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO runs (job, note) VALUES ('settle', ?)`, note); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO leases (name, holder) VALUES (?, 'A') ON CONFLICT (name) DO UPDATE SET holder = excluded.holder`, note); err != nil {
			return err
		}
		return tx.Commit()
	}
	if err := fencedWrite(claim.Lease.Generation, "settled under the claim"); err != nil {
		t.Fatalf("fenced write to the handler's runs and leases: %v", err)
	}

	// The store's run and lease calls see their own rows, not the handler's.
	fin, err := s.SlotFinish(ctx, store.SlotFinishParams{
		Job: "settle", Slot: slot, LeaseName: claim.Lease.Name, Owner: "A", Generation: claim.Lease.Generation,
		Status: store.SlotCompleted,
	})
	if err != nil || !fin.SlotUpdated || !fin.LeaseReleased {
		t.Fatalf("SlotFinish = %+v, %v", fin, err)
	}
	runs, err := s.RunList(ctx, store.RunListParams{})
	if err != nil || len(runs) != 1 || runs[0].ID != fin.Run.ID || runs[0].Owner != "A" {
		t.Fatalf("RunList = %+v, %v; want only the store's run %+v", runs, err, fin.Run)
	}
	if _, err := s.LeaseGet(ctx, "settled under the claim"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LeaseGet of a row of the handler's leases table = %v, want ErrNotFound", err)
	}

	// The lease is gone, so the fence now refuses and nothing lands.
	if err := fencedWrite(claim.Lease.Generation, "too late"); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fenced write after the lease was released = %v, want ErrLeaseLost", err)
	}

	// Prune, which deletes from the store's runs, leaves the handler's alone.
	if _, err := s.Prune(ctx, store.PruneParams{Before: slot.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ table, column, want string }{
		{"runs", "note", "settled under the claim"},
		{"leases", "name", "settled under the claim"},
		{"schema_migrations", "version", "20260101"},
	} {
		var got []string
		rows, err := s.DB().QueryContext(ctx, `SELECT `+c.column+` FROM `+c.table)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("the handler's %s holds %q, want only %q", c.table, got, c.want)
		}
	}
}
