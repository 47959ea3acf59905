package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/cronfence/cronfence/store"
)

// Error is the error a store (named, as "mysql") returns for err, met
// doing what: prefixed with the store's name, and with database/sql's
// errors translated at this boundary, so callers test store.ErrNotFound
// and store.ErrClosed with errors.Is and never see a database/sql sentinel
// in that role. closed says the store was closed; a pool closed under it
// (a caller closing DB()) counts as closed too, the cause kept in the
// chain beside store.ErrClosed.
func Error(name string, closed bool, err error, what string) error {
	switch {
	case closed || isDBClosed(err):
		return fmt.Errorf("%s: %s: %w: %w", name, what, store.ErrClosed, err)
	case errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("%s: %s: %w", name, what, store.ErrNotFound)
	}
	return fmt.Errorf("%s: %s: %w", name, what, err)
}

// isDBClosed reports the error database/sql returns once its *sql.DB was
// closed. database/sql does not export it, so its fixed text is matched.
func isDBClosed(err error) bool {
	return err != nil && strings.Contains(err.Error(), "sql: database is closed")
}
