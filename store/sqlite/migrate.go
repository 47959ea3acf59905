package sqlite

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/schemafile"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change (see schemafile).
type migration = schemafile.File

// migrations parses the embedded files once; a malformed set is an error
// Migrate reports instead of half-applying.
var migrations = sync.OnceValues(func() ([]migration, error) {
	ms, err := schemafile.Parse(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
})

// binaryVersion is the newest schema version this binary knows.
func binaryVersion() (int, error) {
	ms, err := migrations()
	if err != nil {
		return 0, err
	}
	return ms[len(ms)-1].Version, nil
}

// Migrate applies every pending migration, each in its own immediate
// transaction together with its cronfence_schema_migrations row. The write
// lock that BEGIN IMMEDIATE takes serializes processes migrating at once:
// the first applies a migration, the others wait for the lock, then find it
// recorded and go on to the next or stop. A database whose recorded version
// is newer than this binary is refused with a *store.SchemaVersionError
// wrapping store.ErrSchemaTooNew, and left unchanged.
func (s *Store) Migrate(ctx context.Context) error {
	if s.closed.Load() {
		return closedError("migrate")
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	for {
		done, err := s.migrateOne(ctx, ms)
		if err != nil {
			return s.errorf(err, "migrate")
		}
		if done {
			s.schemaOK.Store(true)
			return nil
		}
	}
}

// migrateOne applies the next pending migration, or reports done when there
// is none.
func (s *Store) migrateOne(ctx context.Context, ms []migration) (done bool, err error) {
	tx, leave, err := s.beginWrite(ctx)
	if err != nil {
		return false, err
	}
	defer leave()
	defer func() {
		if err != nil || done {
			_ = tx.Rollback() // nothing was written when done
		}
	}()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS cronfence_schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return false, err
	}
	current, err := recordedVersion(ctx, tx)
	if err != nil {
		return false, err
	}
	latest := ms[len(ms)-1].Version
	switch {
	case current > latest:
		return false, &store.SchemaVersionError{Database: current, Binary: latest}
	case current == latest:
		return true, checkTables(ctx, tx, current)
	}
	// A damaged file is refused before a migration is applied over it.
	if err := checkTables(ctx, tx, current); err != nil {
		return false, err
	}
	m := ms[current] // versions are contiguous from 1
	if _, err := tx.ExecContext(ctx, m.Up); err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Base, err)
	}
	if _, err := tx.ExecContext(ctx,
		`INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (?, ?)`,
		// The real clock, not Config.NowFunc: when the schema changed (as
		// the PostgreSQL store's DEFAULT now()), not a test's moved time.
		m.Version, micros(time.Now()),
	); err != nil {
		return false, err
	}
	return false, tx.Commit()
}

// SchemaVersion reports the version recorded in the file (0 when it was never
// migrated) and the newest version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (database, binary int, err error) {
	if s.closed.Load() {
		return 0, 0, closedError("schema version")
	}
	binary, err = binaryVersion()
	if err != nil {
		return 0, 0, err
	}
	database, err = recordedVersion(ctx, s.db)
	if err == nil && database <= binary {
		err = checkTables(ctx, s.db, database)
	}
	if err != nil {
		return 0, 0, s.errorf(err, "schema version")
	}
	return database, binary, nil
}

// tableStmt finds the tables a migration creates or drops.
var tableStmt = regexp.MustCompile(`(?i)\b(CREATE|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?"?(\w+)"?`)

// tables returns the tables the embedded migrations up to version leave:
// each one created and not dropped by a later migration.
func tables(version int) ([]string, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	return schemafile.Tables(ms, version, tableStmt), nil
}

// pauseTable is the one table a file may lack and still be worked on: the
// pause overrides. Without it the declared values decide (a broken pause
// table fails open: SlotClaim reports PauseStateUnread), so a replica
// starts and keeps running its declared-enabled jobs; every other table
// missing is damage, and refused.
const pauseTable = "cronfence_job_state"

// checkTables returns an error naming the tables of the migrations up to
// version that the file lacks, found in one query. SchemaVersion and Migrate
// check, so a file with a table dropped by hand is refused at start-up
// instead of failing on every write while the process looks healthy.
func checkTables(ctx context.Context, q sqlstore.Querier, version int) error {
	ts, err := tables(version)
	if err != nil || len(ts) == 0 {
		return err
	}
	ts = slices.DeleteFunc(ts, func(t string) bool { return t == pauseTable })
	list, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	var missing string
	if err := q.QueryRowContext(ctx, `SELECT coalesce(group_concat(t.value, ', '), '') FROM json_each(?) AS t
		WHERE t.value NOT IN (SELECT name FROM sqlite_schema WHERE type = 'table')`, string(list)).Scan(&missing); err != nil {
		return err
	}
	if missing != "" {
		return fmt.Errorf("schema version %d is recorded but table(s) %s are missing: the file was changed outside cronfence; restore it from a backup", version, missing)
	}
	return nil
}

// recordedVersion reads the newest version in cronfence_schema_migrations, 0
// when the table does not exist.
func recordedVersion(ctx context.Context, q sqlstore.Querier) (int, error) {
	var tables int
	if err := q.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'cronfence_schema_migrations'`,
	).Scan(&tables); err != nil {
		return 0, err
	}
	if tables == 0 {
		return 0, nil
	}
	var v int
	err := q.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM cronfence_schema_migrations`).Scan(&v)
	return v, err
}

// checkSchema refuses to work on a file whose schema is older than this
// binary's, with a *store.SchemaVersionError wrapping ErrSchemaOutdated,
// instead of failing later with "no such table" or a missing column. A newer
// schema is accepted, as the PostgreSQL store accepts it: migrations keep
// old binaries working, so replicas can be upgraded one at a time. Success
// is remembered (see Store.schemaOK); failure is not, so a Store opened
// before Migrate works once another process has migrated.
func (s *Store) checkSchema(ctx context.Context, q sqlstore.Querier) error {
	if s.schemaOK.Load() {
		return nil
	}
	binary, err := binaryVersion()
	if err != nil {
		return err
	}
	database, err := recordedVersion(ctx, q)
	if err != nil {
		return err
	}
	if database < binary {
		return &store.SchemaVersionError{Database: database, Binary: binary}
	}
	s.schemaOK.Store(true)
	return nil
}
