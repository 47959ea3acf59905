package mysql

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/schemafile"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded schema change (see schemafile), with
// {{prefix}} where the table prefix goes.
type migration = schemafile.File

// migrations parses the embedded files once; a malformed set is an error
// Migrate reports instead of half-applying.
var migrations = sync.OnceValues(func() ([]migration, error) {
	ms, err := schemafile.Parse(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
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

// Migrate applies every pending migration. Replicas migrating at once take
// turns: the runner holds a named lock (GET_LOCK, server-wide, named after
// the database and the prefix) on a connection of its own while it reads
// the recorded version and applies what is missing, so the second finds
// the first's work recorded. MySQL commits each DDL statement on its own,
// so a migration is not one transaction; its statements are idempotent,
// and one cut off halfway (a crash) is completed by the next run, which
// finds its version unrecorded. A database whose recorded version is newer
// than this binary is refused with a *store.SchemaVersionError wrapping
// store.ErrSchemaTooNew, and left unchanged.
func (s *Store) Migrate(ctx context.Context) error {
	if s.closed.Load() {
		return closedError("migrate")
	}
	ms, err := migrations()
	if err != nil {
		return err
	}
	if err := s.migrate(ctx, ms); err != nil {
		return s.errorf(err, "migrate")
	}
	s.schemaOK.Store(true)
	return nil
}

func (s *Store) migrate(ctx context.Context, ms []migration) error {
	// A pool of one connection that may send several statements at once:
	// a migration file is sent whole, procedures and all (the server, not
	// a client, splits it).
	connector, err := driver.NewConnector(s.migrateConfig())
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var got sql.NullInt64
	// The wait ends with ctx: the driver closes the connection, and the
	// server ends the wait with it.
	if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK(?, 86400)`, s.migrateLockName()).Scan(&got); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return fmt.Errorf("the migration lock %s was not granted", s.migrateLockName())
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `DO RELEASE_LOCK(?)`, s.migrateLockName()) //nolint:errcheck // closing the connection releases it too
	if _, err := conn.ExecContext(ctx, s.q(`CREATE TABLE IF NOT EXISTS {{prefix}}schema_migrations (
		version    INT         NOT NULL PRIMARY KEY,
		applied_at DATETIME(6) NOT NULL
	) ENGINE = InnoDB`)); err != nil {
		return err
	}
	current, err := s.recordedVersion(ctx, conn)
	if err != nil {
		return err
	}
	latest := ms[len(ms)-1].Version
	if current > latest {
		return &store.SchemaVersionError{Database: current, Binary: latest}
	}
	// A damaged database is refused before a migration is applied over it.
	if err := s.checkTables(ctx, conn, current); err != nil {
		return err
	}
	for _, m := range ms[current:] {
		if _, err := conn.ExecContext(ctx, s.q(m.Up)); err != nil {
			return fmt.Errorf("migration %s: %w", m.Base, err)
		}
		if _, err := conn.ExecContext(ctx, s.q(`INSERT INTO {{prefix}}schema_migrations (version, applied_at) VALUES (?, UTC_TIMESTAMP(6))`), m.Version); err != nil {
			return err
		}
	}
	return nil
}

// migrateConfig is the store's connection settings with several statements
// a query allowed.
func (s *Store) migrateConfig() *driver.Config {
	cfg := s.ownConfig.Clone()
	cfg.MultiStatements = true
	return cfg
}

// migrateLockName is the name of the migration runner's GET_LOCK, one per
// database and prefix (named locks are server-wide). At most 64 bytes.
func (s *Store) migrateLockName() string {
	h := fnv.New64a()
	h.Write([]byte(s.database + "\x00" + s.prefix))
	return fmt.Sprintf("cronfence.migrate.%016x", h.Sum64())
}

// SchemaVersion reports the version recorded in the database (0 when it was
// never migrated) and the newest version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (database, binary int, err error) {
	if s.closed.Load() {
		return 0, 0, closedError("schema version")
	}
	binary, err = binaryVersion()
	if err != nil {
		return 0, 0, err
	}
	database, err = s.recordedVersion(ctx, s.db)
	if err == nil && database <= binary {
		err = s.checkTables(ctx, s.db, database)
	}
	if err != nil {
		return 0, 0, s.errorf(err, "schema version")
	}
	return database, binary, nil
}

// tableStmt finds the tables a migration creates or drops.
var tableStmt = regexp.MustCompile(`(?i)\b(CREATE|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?\{\{prefix\}\}(\w+)`)

// tables returns the tables, without the prefix, that the embedded
// migrations up to version leave.
func tables(version int) ([]string, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	return schemafile.Tables(ms, version, tableStmt), nil
}

// pauseTable is the one table a database may lack and still be worked on:
// the pause overrides. Without it the declared values decide (a broken
// pause table fails open: SlotClaim reports PauseStateUnread).
const pauseTable = "job_state"

// checkTables returns an error naming the tables of the migrations up to
// version that the database lacks, found in one query, so a database with
// a table dropped by hand is refused at start-up instead of failing on
// every write while the process looks healthy.
func (s *Store) checkTables(ctx context.Context, q sqlstore.Querier, version int) error {
	ts, err := tables(version)
	if err != nil || len(ts) == 0 {
		return err
	}
	ts = slices.DeleteFunc(ts, func(t string) bool { return t == pauseTable })
	args := make([]any, len(ts))
	for i, t := range ts {
		args[i] = s.t(t)
	}
	rows, err := q.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN (`+placeholders(len(args))+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	present := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		present[name] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var missing []string
	for _, t := range args {
		if !present[t.(string)] {
			missing = append(missing, t.(string))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("schema version %d is recorded but table(s) %s are missing: the database was changed outside cronfence; restore it from a backup", version, strings.Join(missing, ", "))
	}
	return nil
}

// recordedVersion reads the newest version in the migrations table, 0 when
// the table does not exist.
func (s *Store) recordedVersion(ctx context.Context, q sqlstore.Querier) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = ?`, s.t("schema_migrations")).Scan(&n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	var v int
	err := q.QueryRowContext(ctx, s.q(`SELECT coalesce(max(version), 0) FROM {{prefix}}schema_migrations`)).Scan(&v)
	return v, err
}

// checkSchema refuses to work on a database whose schema is older than
// this binary's, with a *store.SchemaVersionError wrapping
// ErrSchemaOutdated, instead of failing later with a missing table or
// column. A newer schema is accepted: migrations keep old binaries working,
// so replicas can be upgraded one at a time. Success is remembered.
func (s *Store) checkSchema(ctx context.Context, q sqlstore.Querier) error {
	if s.schemaOK.Load() {
		return nil
	}
	binary, err := binaryVersion()
	if err != nil {
		return err
	}
	database, err := s.recordedVersion(ctx, q)
	if err != nil {
		return err
	}
	if database < binary {
		return &store.SchemaVersionError{Database: database, Binary: binary}
	}
	s.schemaOK.Store(true)
	return nil
}
