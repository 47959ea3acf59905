package postgres

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	up      string
	down    string
}

// migrations are the embedded files, in version order. A malformed file name
// is a build defect, so it panics at start-up rather than half-migrating.
var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		panic(err)
	}
	byVersion := map[int]*migration{}
	for _, e := range entries {
		base, direction, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), ".")
		number, name, ok2 := strings.Cut(base, "_")
		version, err := strconv.Atoi(number)
		if !ok || !ok2 || err != nil || (direction != "up" && direction != "down") {
			panic(fmt.Sprintf("postgres: migration file %q is not NNN_name.up.sql or NNN_name.down.sql", e.Name()))
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			panic(err)
		}
		m := byVersion[version]
		if m == nil {
			m = &migration{version: version, name: name}
			byVersion[version] = m
		}
		if direction == "up" {
			m.up = string(body)
		} else {
			m.down = string(body)
		}
	}
	list := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		list = append(list, *m)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	for i, m := range list {
		if m.version != i+1 || m.up == "" {
			panic(fmt.Sprintf("postgres: migrations must be numbered 1, 2, 3… each with an up file; version %d breaks that", m.version))
		}
	}
	return list
}

func latestVersion() int { return len(migrations) }

// migrationLockKey serialises migrations of one schema across processes:
// a transaction-level advisory lock on a key derived from the schema name.
func (s *Store) migrationLockKey() int64 {
	h := fnv.New64a()
	h.Write([]byte("cronfence.migrate:" + s.schema))
	return int64(h.Sum64())
}

// Migrate applies pending migrations, one per transaction. Each transaction
// first takes an advisory lock for the schema, so replicas starting together
// apply every migration exactly once; the others wait, then find nothing to
// do. A database at a newer version than this binary is refused.
func (s *Store) Migrate(ctx context.Context) error {
	if err := s.usable(); err != nil {
		return err
	}
	for {
		applied, err := s.migrateNext(ctx)
		if err != nil || !applied {
			return err
		}
	}
}

// migrateNext applies the next pending migration, reporting whether it did.
func (s *Store) migrateNext(ctx context.Context) (applied bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, s.translate("begin migration", err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.migrationLockKey()); err != nil {
		return false, s.translate("lock for migration", err)
	}
	if _, err := tx.Exec(ctx, withSchema(s.schema, `
		CREATE SCHEMA IF NOT EXISTS {{schema}};
		CREATE TABLE IF NOT EXISTS {{schema}}.schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)); err != nil {
		return false, s.translate("create the migrations table", err)
	}
	current, err := s.versionIn(ctx, tx)
	if err != nil {
		return false, err
	}
	if current > latestVersion() {
		return false, fmt.Errorf("postgres: schema %q: %w", s.schema, &store.SchemaVersionError{Database: current, Binary: latestVersion()})
	}
	// A damaged schema is refused before a migration is applied over it.
	if err := s.checkTables(ctx, tx, current); err != nil {
		return false, err
	}
	if current == latestVersion() {
		return false, tx.Commit(ctx)
	}
	next := migrations[current]
	if _, err := tx.Exec(ctx, withSchema(s.schema, next.up)); err != nil {
		return false, s.translate(fmt.Sprintf("apply migration %03d_%s", next.version, next.name), err)
	}
	if _, err := tx.Exec(ctx, withSchema(s.schema, `INSERT INTO {{schema}}.schema_migrations (version, name) VALUES ($1, $2)`), next.version, next.name); err != nil {
		return false, s.translate("record migration", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, s.translate("commit migration", err)
	}
	return true, nil
}

func (s *Store) versionIn(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (int, error) {
	var v int
	err := q.QueryRow(ctx, withSchema(s.schema, `SELECT coalesce(max(version), 0) FROM {{schema}}.schema_migrations`)).Scan(&v)
	if err != nil {
		return 0, s.translate("read the schema version", err)
	}
	return v, nil
}

// SchemaVersion reports the version recorded in the database, 0 when the
// schema was never migrated, and the newest version this binary knows.
func (s *Store) SchemaVersion(ctx context.Context) (database, binary int, err error) {
	if err := s.usable(); err != nil {
		return 0, 0, err
	}
	var exists bool
	err = s.pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`,
		pgx.Identifier{s.schema, "schema_migrations"}.Sanitize()).Scan(&exists)
	if err != nil {
		return 0, 0, s.translate("look for the migrations table", err)
	}
	if !exists {
		return 0, latestVersion(), nil
	}
	v, err := s.versionIn(ctx, s.pool)
	if err == nil && v <= latestVersion() {
		err = s.checkTables(ctx, s.pool, v)
	}
	return v, latestVersion(), err
}

// tableStmt finds the tables a migration creates or drops.
var tableStmt = regexp.MustCompile(`(?i)\b(CREATE|DROP)\s+TABLE\s+(?:IF\s+(?:NOT\s+)?EXISTS\s+)?\{\{schema\}\}\.(\w+)`)

// tables returns the tables the embedded migrations up to version leave in
// the schema: each one created and not dropped by a later migration.
func tables(version int) []string {
	var out []string
	for _, m := range migrations[:min(version, len(migrations))] {
		for _, st := range tableStmt.FindAllStringSubmatch(m.up, -1) {
			out = slices.DeleteFunc(out, func(t string) bool { return t == st[2] })
			if strings.EqualFold(st[1], "CREATE") {
				out = append(out, st[2])
			}
		}
	}
	return out
}

// pauseTable is the one table a schema may lack and still be worked on: the
// pause overrides. Without it the declared values decide (a broken pause
// table fails open: SlotClaim reports PauseStateUnread), so a replica
// starts and keeps running its declared-enabled jobs; every other table
// missing is damage, and refused.
const pauseTable = "job_state"

// checkTables returns an error naming the tables of the migrations up to
// version that the schema lacks. SchemaVersion and Migrate check, so a schema with a table
// dropped by hand is refused at start-up instead of failing on every write
// while the process looks healthy.
func (s *Store) checkTables(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, version int) error {
	var missing []string
	required := slices.DeleteFunc(tables(version), func(t string) bool { return t == pauseTable })
	err := q.QueryRow(ctx, `SELECT coalesce(array_agg(t), '{}') FROM unnest($2::text[]) AS t
		WHERE to_regclass(quote_ident($1) || '.' || quote_ident(t)) IS NULL`, s.schema, required).Scan(&missing)
	if err != nil {
		return s.translate("look for the tables", err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("postgres: schema %q is at version %d but lacks table(s) %s: it was changed outside cronfence; restore it from a backup",
			s.schema, version, strings.Join(missing, ", "))
	}
	return nil
}

// MigrateDown reverts the schema to version target (0 removes every table
// cronfence made, leaving the schema itself). Meant for development and
// tests; production rollbacks should be deliberate.
func (s *Store) MigrateDown(ctx context.Context, target int) error {
	if err := s.usable(); err != nil {
		return err
	}
	if target < 0 {
		return fmt.Errorf("postgres: migrate down target must not be negative, got %d: %w", target, store.ErrInvalidArgument)
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.migrationLockKey()); err != nil {
			return s.translate("lock for migration", err)
		}
		current, err := s.versionIn(ctx, tx)
		if err != nil {
			return err
		}
		if current > latestVersion() {
			return fmt.Errorf("postgres: schema %q: %w", s.schema, &store.SchemaVersionError{Database: current, Binary: latestVersion()})
		}
		for v := current; v > target; v-- {
			m := migrations[v-1]
			if _, err := tx.Exec(ctx, withSchema(s.schema, m.down)); err != nil {
				return s.translate(fmt.Sprintf("revert migration %03d_%s", m.version, m.name), err)
			}
			if _, err := tx.Exec(ctx, withSchema(s.schema, `DELETE FROM {{schema}}.schema_migrations WHERE version = $1`), v); err != nil {
				return s.translate("unrecord migration", err)
			}
		}
		return nil
	})
}
