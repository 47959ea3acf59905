package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/mysql"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// connectTimeout bounds opening the database and checking that it answers:
// connecting (TLS and the startup included), the first query and reading
// the schema version. A command's own deadline (check --timeout) bounds
// them when sooner.
const connectTimeout = 15 * time.Second

// Globals are the flags every command accepts.
type Globals struct {
	Database string `name:"database" env:"CRONFENCE_DATABASE_URL" placeholder:"URL" help:"PostgreSQL URL (postgres://…) or MySQL/MariaDB URL (mysql://user:password@host:3306/db). Empty: the SQLite file of --sqlite."`
	SQLite   string `name:"sqlite" type:"path" default:"cronfence.db" placeholder:"PATH" help:"SQLite database file, used when --database is empty."`
	Schema   string `name:"schema" hidden:"" env:"CRONFENCE_SCHEMA" help:"PostgreSQL schema holding cronfence's tables. Defaults to cronfence."`

	// tracer, when set (serve's metrics), times every PostgreSQL query.
	tracer pgx.QueryTracer
	// warm keeps PostgreSQL connections open and ready for a slot's
	// statements (postgres.WarmPool): for serve, whose pool runs slots. A
	// command that asks a few questions and exits opens only what it uses,
	// so nothing of its pool outlives its bound.
	warm bool
	// config is the config file these flags were resolved from
	// (configGlobals), for messages; empty when none.
	config string
}

// database is an open store and what it is, for messages.
type database struct {
	store.Store
	where string
	close func()
}

// openMigrated opens the store the flags select, creating a SQLite file
// that is not there, and brings its schema up to date: for migrate, serve
// and lock, the commands that make the database they coordinate on. The
// others use openExisting.
func (g *Globals) openMigrated(ctx context.Context) (*database, error) {
	db, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.close()
		return nil, fmt.Errorf("migrating %s: %w", db.where, err)
	}
	return db, nil
}

// openExisting opens the store the flags select as it is, for the commands
// that must not change what database there is: the admin commands and
// check. Only migrate, serve and lock create and migrate (openMigrated). A
// SQLite file that does not exist is an error naming it rather than an
// empty new file, and a schema not at this binary's version is an error
// saying what to run rather than a migration: a command pointed at the
// wrong place says so, instead of answering from, or writing to, a
// database no replica reads.
func (g *Globals) openExisting(ctx context.Context) (*database, error) {
	// Checked before opening: sqlite.Open creates a missing file. (A file
	// removed between the two is created empty, and refused below as never
	// migrated.) With --schema, connect refuses SQLite first.
	if g.Database == "" && g.Schema == "" {
		if err := g.sqliteExists(); err != nil {
			return nil, err
		}
	}
	db, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	dbv, binv, err := db.SchemaVersion(sctx)
	switch {
	case err != nil:
		err = fmt.Errorf("reading the schema version of %s: %w", db.where, noAnswer(ctx, sctx, err))
	case dbv != binv:
		err = schemaError(db.where, &store.SchemaVersionError{Database: dbv, Binary: binv})
	}
	if err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// sqliteExists checks that the SQLite file of the flags exists. A missing
// one is a usage error, as a missing --config file is: the flags (or their
// defaults) name a database that is not there.
func (g *Globals) sqliteExists() error {
	path, err := filepath.Abs(g.SQLite)
	if err != nil {
		path = g.SQLite
	}
	_, err = os.Stat(path)
	switch {
	case err == nil:
		return nil
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the SQLite file %s: %w", path, err)
	case g.config != "":
		return usageError("no SQLite database at %s, the database of %s (its sqlite:, by default cronfence.db beside it); nothing was created. "+
			"Has serve run with this file? `cronfence serve --config %s` or `cronfence migrate --sqlite %s` creates it; "+
			"--database URL points at a PostgreSQL database instead", path, g.config, g.config, path)
	default:
		return usageError("no SQLite database at %s (--sqlite, by default cronfence.db in the working directory); nothing was created. "+
			"Point at the replicas' database with --config FILE (their serve config), --sqlite PATH or --database URL (or CRONFENCE_DATABASE_URL); "+
			"`cronfence serve` or `cronfence migrate` creates a new one", path)
	}
}

// schemaError says what to do about a schema at another version than the
// binary's: never migrated (the wrong database, or one serve has not used
// yet), outdated, or newer than this binary.
func schemaError(where string, e *store.SchemaVersionError) error {
	if e.Database == 0 {
		return fmt.Errorf("%s was never migrated: it has no cronfence tables (%w); no migration was run. "+
			"Is it the replicas' database? `cronfence migrate` (with the same database flags) or `cronfence serve` creates the tables", where, e)
	}
	return fmt.Errorf("%s: %w", where, e)
}

func (g *Globals) connect(ctx context.Context) (*database, error) {
	if g.Database == "" {
		if g.Schema != "" {
			return nil, usageError("--schema applies to PostgreSQL only; the SQLite file %s has no schemas", g.SQLite)
		}
		s, err := sqlite.Open(ctx, g.SQLite, nil)
		if err != nil {
			return nil, wrapInvalid(err)
		}
		return &database{Store: s, where: "SQLite file " + g.SQLite, close: func() { _ = s.Close() }}, nil
	}
	if mysql.IsURL(g.Database) {
		return g.connectMySQL(ctx)
	}
	cfg, err := pgxpool.ParseConfig(g.Database)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, usageError("--database is not a valid PostgreSQL URL (postgres://user@host:5432/db)")
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.Tracer = g.tracer
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	// Every connection the pool opens, now or later, in the foreground or
	// not, gives up within the bound: pgx's default lets one the pool opens
	// on its own try for two minutes, and Close waits for it.
	cfg.ConnConfig.ConnectTimeout = connectBound(cctx)
	postgres.TunePool(cfg) // the pool is cronfence's alone
	if g.warm {
		postgres.WarmPool(cfg, g.Schema)
	}
	// The pool connects lazily: the schema is checked before any I/O.
	pool, err := pgxpool.NewWithConfig(cctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	s, err := postgres.New(pool, &postgres.Config{Schema: g.Schema})
	if err != nil {
		pool.Close()
		return nil, usageError("--schema: %w", err)
	}
	if err := pool.Ping(cctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", cfg.ConnConfig.Host, noAnswer(ctx, cctx, err))
	}
	where := fmt.Sprintf("PostgreSQL database %s on %s, schema %s", cfg.ConnConfig.Database, cfg.ConnConfig.Host, s.Schema())
	return &database{Store: s, where: where, close: func() { _ = s.Close(); pool.Close() }}, nil
}

// connectMySQL opens the MySQL or MariaDB database of --database.
func (g *Globals) connectMySQL(ctx context.Context) (*database, error) {
	if g.Schema != "" {
		return nil, usageError("--schema applies to PostgreSQL only; on MySQL the tables are in the URL's database, named cronfence_…")
	}
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	s, err := mysql.Open(cctx, g.Database, nil)
	if err != nil {
		if errors.Is(err, store.ErrInvalidArgument) {
			return nil, usageError("--database is not a valid MySQL URL (mysql://user:password@host:3306/db): %w", err)
		}
		return nil, fmt.Errorf("connecting to MySQL: %w", noAnswer(ctx, cctx, err))
	}
	server := "MySQL"
	if s.MariaDB() {
		server = "MariaDB"
	}
	where := fmt.Sprintf("%s database %s on %s", server, s.Database(), s.Addr())
	return &database{Store: s, where: where, close: func() { _ = s.Close() }}, nil
}

// connectBound is how long a connection may take to open within ctx's
// deadline.
func connectBound(ctx context.Context) time.Duration {
	d := connectTimeout
	if deadline, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(deadline))
	}
	return max(d, time.Millisecond) // 0 would be no bound at all
}

// noAnswer says that connectTimeout ended err's wait, when bounded (ctx
// bounded by it) ended it and ctx did not: a deadline of ctx's own is its
// owner's to name (check's --timeout).
func noAnswer(ctx, bounded context.Context, err error) error {
	if bounded.Err() != nil && ctx.Err() == nil {
		return fmt.Errorf("no answer within %s: %w", connectTimeout, err)
	}
	return err
}

// wrapInvalid makes an invalid-argument error from a store a usage error.
func wrapInvalid(err error) error {
	if errors.Is(err, store.ErrInvalidArgument) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}

// fileReads is r, reading the file's database: only when these flags do
// not override it (configGlobals).
func (g *Globals) fileReads(r config.Reads) config.Reads {
	r.Database = g.Database == ""
	return r
}

// configGlobals returns the global flags with the database of config file
// f, the one its serve replicas use: --database when given, else the file's
// database:, else its sqlite: file (--sqlite does not apply).
func configGlobals(g *Globals, f *config.File) *Globals {
	c := *g
	c.config = f.Path
	if c.Database == "" {
		c.Database = f.Database
	}
	if c.Database == "" {
		c.SQLite = f.SQLitePath
	}
	return &c
}
