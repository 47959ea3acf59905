package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence/store"
)

// schemaSnapshot returns every object in the file with its SQL, and the
// rows of cronfence_schema_migrations when it exists.
func schemaSnapshot(t *testing.T, db *sql.DB) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, `SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	hasVersions := false
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
		hasVersions = hasVersions || strings.HasPrefix(s, "table cronfence_schema_migrations:")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if hasVersions {
		vrows, err := db.QueryContext(ctx, `SELECT 'version ' || version || ' at ' || applied_at FROM cronfence_schema_migrations ORDER BY version`)
		if err != nil {
			t.Fatal(err)
		}
		defer vrows.Close()
		for vrows.Next() {
			var s string
			if err := vrows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
	}
	return out
}

// mustBinaryVersion is the newest version the embedded migrations reach.
func mustBinaryVersion(t *testing.T) int {
	t.Helper()
	v, err := binaryVersion()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateConcurrently opens two Stores on a fresh file at once, as two
// processes starting together would, and migrates from both many times at
// once: every call succeeds and each migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	latest := mustBinaryVersion(t)
	path := newFile(t)

	stores := make([]*Store, 2)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := Open(ctx, path, nil)
			if err != nil {
				t.Errorf("Open: %v", err)
				return
			}
			stores[i] = s
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s == nil {
			t.FailNow()
		}
		t.Cleanup(func() { s.Close() })
	}

	start := make(chan struct{})
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			<-start
			errs <- stores[i%2].Migrate(ctx)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}

	for _, s := range stores {
		database, binary, err := s.SchemaVersion(ctx)
		if err != nil || database != binary || binary != latest {
			t.Errorf("SchemaVersion = %d, %d, %v; want %d, %[4]d", database, binary, err, latest)
		}
	}
	var applied int
	if err := stores[0].DB().QueryRowContext(ctx, `SELECT count(*) FROM cronfence_schema_migrations`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != latest {
		t.Errorf("cronfence_schema_migrations has %d rows, want %d", applied, latest)
	}
	if _, _, err := stores[1].LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "n", Owner: "o", TTL: time.Minute}); err != nil {
		t.Errorf("LeaseAcquire after migrating: %v", err)
	}
}

// TestMigrateRefusesNewerSchema: a file recorded at version 99 by a newer
// binary is refused, and Migrate changes nothing in it (not even the tables
// version 1 would create).
func TestMigrateRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	latest := mustBinaryVersion(t)
	s := openStore(t, newFile(t), nil)
	if _, err := s.DB().ExecContext(ctx, `
		CREATE TABLE cronfence_schema_migrations (version INTEGER NOT NULL PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT;
		INSERT INTO cronfence_schema_migrations VALUES (1, 1), (99, 2);`); err != nil {
		t.Fatal(err)
	}
	before := schemaSnapshot(t, s.DB())

	err := s.Migrate(ctx)
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 || sv.Binary != latest {
		t.Fatalf("Migrate = %v, want a SchemaVersionError{99, %d} wrapping ErrSchemaTooNew", err, latest)
	}
	if diff := cmp.Diff(before, schemaSnapshot(t, s.DB())); diff != "" {
		t.Errorf("Migrate changed the file (-before +after):\n%s", diff)
	}
	if database, binary, err := s.SchemaVersion(ctx); database != 99 || binary != latest || err != nil {
		t.Errorf("SchemaVersion = %d, %d, %v; want 99, %d", database, binary, err, latest)
	}
}

// TestCallsBeforeMigrate: on a file never migrated every call that needs the
// schema says so with ErrSchemaOutdated (not "no such table"), creates
// nothing, and starts working as soon as another Store migrates the file.
func TestCallsBeforeMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	latest := mustBinaryVersion(t)
	path := newFile(t)
	s := openStore(t, path, nil)
	slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)

	calls := map[string]func() error{
		"LeaseAcquire": func() error {
			_, _, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: "n", Owner: "o", TTL: time.Minute})
			return err
		},
		"LeaseRenew": func() error {
			_, err := s.LeaseRenew(ctx, store.LeaseRenewParams{LeaseRef: store.LeaseRef{Name: "n", Owner: "o", Generation: 1}, TTL: time.Minute})
			return err
		},
		"LeaseRelease": func() error {
			_, err := s.LeaseRelease(ctx, store.LeaseRef{Name: "n", Owner: "o", Generation: 1})
			return err
		},
		"LeaseGet": func() error {
			_, err := s.LeaseGet(ctx, "n")
			return err
		},
		"LeaseFence": func() error {
			tx, err := s.DB().BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			return s.LeaseFence(ctx, tx, "n", 1)
		},
		"SlotClaim": func() error {
			_, err := s.SlotClaim(ctx, store.SlotClaimParams{Job: "j", Slot: slot, LeaseName: "n", Owner: "o", TTL: time.Minute, MaxAttempts: 1})
			return err
		},
		"SlotClaimBatch": func() error {
			_, err := s.SlotClaimBatch(ctx, []store.SlotClaimParams{{Job: "j", Slot: slot, LeaseName: "n", Owner: "o", TTL: time.Minute, MaxAttempts: 1}})
			return err
		},
		"LeaseRenewBatch": func() error {
			_, err := s.LeaseRenewBatch(ctx, []store.LeaseRenewParams{{LeaseRef: store.LeaseRef{Name: "n", Owner: "o", Generation: 1}, TTL: time.Minute}})
			return err
		},
		"JobStateSet": func() error {
			_, err := s.JobStateSet(ctx, store.JobStateSetParams{Job: "j", By: "o"})
			return err
		},
		"JobStateList": func() error {
			_, err := s.JobStateList(ctx)
			return err
		},
		"SlotFinish": func() error {
			_, err := s.SlotFinish(ctx, store.SlotFinishParams{Job: "j", Slot: slot, LeaseName: "n", Owner: "o", Generation: 1, Status: store.SlotCompleted})
			return err
		},
		"SlotGet": func() error {
			_, err := s.SlotGet(ctx, "j", slot)
			return err
		},
		"RunInsert": func() error {
			_, err := s.RunInsert(ctx, store.Run{Job: "j"})
			return err
		},
		"RunList": func() error {
			_, err := s.RunList(ctx, store.RunListParams{})
			return err
		},
		"Prune": func() error {
			_, err := s.Prune(ctx, store.PruneParams{Before: slot})
			return err
		},
		"ReplicaHeartbeat": func() error {
			_, err := s.ReplicaHeartbeat(ctx, store.Replica{Owner: "o"})
			return err
		},
		"ReplicaList": func() error {
			_, err := s.ReplicaList(ctx)
			return err
		},
		"ReplicaRemove": func() error {
			return s.ReplicaRemove(ctx, "o")
		},
		"AlertRaise": func() error {
			_, err := s.AlertRaise(ctx, store.AlertRaiseParams{Kind: store.AlertSlowRun, Subject: "j", RaisedBy: "o"})
			return err
		},
		"AlertResolve": func() error {
			_, _, err := s.AlertResolve(ctx, store.AlertSlowRun, "j")
			return err
		},
		"AlertList": func() error {
			_, err := s.AlertList(ctx, store.AlertListParams{})
			return err
		},
		"AlertAcknowledge": func() error {
			_, err := s.AlertAcknowledge(ctx, store.AlertAcknowledgeParams{Kind: store.AlertSlowRun, Subject: "j", By: "o"})
			return err
		},
	}
	for name, call := range calls {
		err := call()
		var sv *store.SchemaVersionError
		if !errors.Is(err, store.ErrSchemaOutdated) || !errors.As(err, &sv) || sv.Database != 0 || sv.Binary != latest {
			t.Errorf("%s before Migrate = %v, want a SchemaVersionError{0, %d} wrapping ErrSchemaOutdated", name, err, latest)
		}
	}
	if database, binary, err := s.SchemaVersion(ctx); database != 0 || binary != latest || err != nil {
		t.Errorf("SchemaVersion = %d, %d, %v; want 0, %d", database, binary, err, latest)
	}
	if _, err := s.Now(ctx); err != nil {
		t.Errorf("Now needs no schema, got %v", err)
	}
	if got := schemaSnapshot(t, s.DB()); len(got) != 0 {
		t.Errorf("calls before Migrate created %q", got)
	}

	// Another process migrates; this Store did not cache its failures.
	other := openStore(t, path, nil)
	if err := other.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for name, call := range calls {
		if err := call(); errors.Is(err, store.ErrSchemaOutdated) {
			t.Errorf("%s after another Store migrated = %v", name, err)
		}
	}
}

// TestMigrationDownReversesUp applies each down file to a migrated file and
// checks only the runner's own table is left, then migrates again: the down
// files are not tested by anything else.
func TestMigrationDownReversesUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	ms, err := migrations()
	if err != nil {
		t.Fatal(err)
	}
	for i := len(ms) - 1; i >= 0; i-- {
		down, err := migrationFiles.ReadFile("migrations/" + ms[i].Base + ".down.sql")
		if err != nil {
			t.Fatal(err)
		}
		tx, err := s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, string(down)); err != nil {
			t.Fatalf("down %s: %v", ms[i].Base, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM cronfence_schema_migrations WHERE version = ?`, ms[i].Version); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	var left []string
	for _, obj := range schemaSnapshot(t, s.DB()) {
		// sqlite_sequence, made by AUTOINCREMENT, cannot be dropped.
		if !strings.HasPrefix(obj, "table cronfence_schema_migrations:") && !strings.HasPrefix(obj, "table sqlite_sequence:") {
			left = append(left, obj)
		}
	}
	if len(left) != 0 {
		t.Errorf("after every down file, left: %q", left)
	}

	// Up again gives the schema a fresh file gets. A new Store, since s
	// remembers having seen the schema at version 1.
	redone := openStore(t, path, nil)
	if err := redone.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after down: %v", err)
	}
	fresh, _ := migrated(t)
	if diff := cmp.Diff(objects(t, fresh.DB()), objects(t, redone.DB())); diff != "" {
		t.Errorf("schema after down and up differs from a fresh one (-fresh +redone):\n%s", diff)
	}
}

// objects is schemaSnapshot without the version rows, whose times differ.
func objects(t *testing.T, db *sql.DB) []string {
	var out []string
	for _, s := range schemaSnapshot(t, db) {
		if !strings.HasPrefix(s, "version ") {
			out = append(out, s)
		}
	}
	return out
}

// TestEmbeddedMigrationsParse: the files embedded are a well-formed set
// (schemafile's tests cover what a malformed one is).
func TestEmbeddedMigrationsParse(t *testing.T) {
	t.Parallel()
	// And the embedded ones parse.
	if _, err := migrations(); err != nil {
		t.Fatalf("embedded migrations: %v", err)
	}
}
