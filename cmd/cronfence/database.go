package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// connectTimeout bounds opening the database and checking that it answers.
const connectTimeout = 15 * time.Second

// Globals are the flags every command accepts.
type Globals struct {
	Database string `name:"database" env:"CRONFENCE_DATABASE_URL" placeholder:"URL" help:"PostgreSQL URL (postgres://…). Empty: the SQLite file of --sqlite."`
	SQLite   string `name:"sqlite" type:"path" default:"cronfence.db" placeholder:"PATH" help:"SQLite database file, used when --database is empty."`
	Schema   string `name:"schema" hidden:"" env:"CRONFENCE_SCHEMA" help:"PostgreSQL schema holding cronfence's tables. Defaults to cronfence."`

	// tracer, when set (serve's metrics), times every PostgreSQL query.
	tracer pgx.QueryTracer
}

// database is an open store and what it is, for messages.
type database struct {
	store.Store
	where string
	close func()
}

// open opens the store the flags select and, when migrate is true, brings
// its schema up to date.
func (g *Globals) open(ctx context.Context, migrate bool) (*database, error) {
	db, err := g.connect(ctx)
	if err != nil {
		return nil, err
	}
	if migrate {
		if err := db.Migrate(ctx); err != nil {
			db.close()
			return nil, fmt.Errorf("migrating %s: %w", db.where, err)
		}
	}
	return db, nil
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
	cfg, err := pgxpool.ParseConfig(g.Database)
	if err != nil {
		// pgx's message may quote the URL, password included.
		return nil, usageError("--database is not a valid PostgreSQL URL (postgres://user@host:5432/db)")
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.Tracer = g.tracer
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
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
		return nil, fmt.Errorf("connecting to PostgreSQL at %s: %w", cfg.ConnConfig.Host, err)
	}
	where := fmt.Sprintf("PostgreSQL database %s on %s, schema %s", cfg.ConnConfig.Database, cfg.ConnConfig.Host, s.Schema())
	return &database{Store: s, where: where, close: func() { _ = s.Close(); pool.Close() }}, nil
}

// wrapInvalid makes an invalid-argument error from a store a usage error.
func wrapInvalid(err error) error {
	if errors.Is(err, store.ErrInvalidArgument) {
		return &exitError{code: exitUsage, err: err}
	}
	return err
}
