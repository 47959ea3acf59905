package store

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when a requested row does not exist.
	ErrNotFound = errors.New("store: not found")

	// ErrLeaseLost is returned when a lease is no longer held by the caller's
	// generation: a renewal that affected no row, or a fence that refused.
	ErrLeaseLost = errors.New("lease lost")

	// ErrClosed is returned by every call on a closed store, or on a store
	// whose database pool was closed.
	ErrClosed = errors.New("store: closed")

	// ErrInvalidArgument is wrapped by every validation error, whose message
	// names the offending field.
	ErrInvalidArgument = errors.New("invalid argument")

	// ErrSchemaTooNew is wrapped by SchemaVersionError when the database was
	// migrated by a newer binary than this one.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")

	// ErrSchemaOutdated is wrapped by SchemaVersionError when the database
	// needs migrations this binary has: run Migrate ("cronfence migrate").
	ErrSchemaOutdated = errors.New("database schema is older than this binary")

	// ErrUnsupportedTx is returned by LeaseFence for a transaction type the
	// store cannot use.
	ErrUnsupportedTx = errors.New("store: unsupported transaction type")
)

// SchemaVersionError reports a database schema this binary cannot use as it
// is. It wraps ErrSchemaTooNew or ErrSchemaOutdated.
type SchemaVersionError struct {
	Database int // the version recorded in the database
	Binary   int // the newest version this binary knows
}

func (e *SchemaVersionError) Error() string {
	if e.Database > e.Binary {
		return fmt.Sprintf("store: database schema is at version %d, newer than this binary's %d: upgrade cronfence before using this database", e.Database, e.Binary)
	}
	return fmt.Sprintf("store: database schema is at version %d, this binary needs %d: run migrations (cronfence migrate)", e.Database, e.Binary)
}

func (e *SchemaVersionError) Unwrap() error {
	if e.Database > e.Binary {
		return ErrSchemaTooNew
	}
	return ErrSchemaOutdated
}
