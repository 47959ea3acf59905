package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/internal/sqlstore"
)

// Store is a store.Store on one MySQL or MariaDB database. It is safe for
// concurrent use, and any number of Stores, in this process or others, may
// share the database.
type Store struct {
	db  *sql.DB // DB(): the handlers' transactions, and the store's reads
	own *sql.DB // the store's own write transactions (see Open)

	ownConfig *driver.Config // own's settings, for the migration runner's connection

	database string // the database the tables are in, for the liveness keys
	addr     string // the server's address, for messages
	prefix   string
	mariadb  bool   // the server is MariaDB, not MySQL
	share    string // the share-mode lock clause this server spells best
	nowFunc  func() time.Time

	livenessCheckEvery time.Duration
	liveHolds          sync.Map // int64 key → *livenessHold

	closed atomic.Bool

	// schemaOK is set once the schema was seen at this binary's version or
	// newer, so the check costs one query per Store, not one per call.
	schemaOK atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database dsn names (a mysql:// URL or a DSN of
// github.com/go-sql-driver/mysql; see IsURL) and checks that the server is
// MySQL 8.0 or later or MariaDB 10.6 or later. It does not change the
// schema: call Migrate before anything else. cfg may be nil.
//
// The store opens two pools on the database. Its own transactions run on
// connections set to READ COMMITTED (every statement reads what has
// committed: a claim that waited for a lease row sees the claim that held
// it), with innodb_lock_wait_timeout at Config.LockWait and time_zone UTC.
// DB() is the other pool, the connections a handler's fenced transaction
// runs on, with the server's defaults for everything the store does not
// need: only parseTime (DATETIME columns scan as time.Time, in UTC) and
// client-side interpolation of arguments (one round trip a statement) are
// set.
func Open(ctx context.Context, dsn string, cfg *Config) (*Store, error) {
	return open(ctx, dsn, cfg, nil)
}

// open is Open, with each pool's connector passed through wrap when it is
// not nil (the benchmarks count round trips so).
func open(ctx context.Context, dsn string, cfg *Config, wrap func(sqldriver.Connector) sqldriver.Connector) (*Store, error) {
	if wrap == nil {
		wrap = func(c sqldriver.Connector) sqldriver.Connector { return c }
	}
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	base, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	base.ParseTime, base.Loc, base.InterpolateParams = true, time.UTC, true
	if base.Timeout == 0 {
		base.Timeout = 10 * time.Second // connecting; statements are bounded by their contexts
	}
	connector, err := driver.NewConnector(base)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w: %w", err, store.ErrInvalidArgument)
	}
	db := sql.OpenDB(wrap(connector))
	mariadb, err := checkServer(ctx, db)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysql: open %s on %s: %w", base.DBName, base.Addr, err)
	}
	ownConfig := ownSettings(base, c, mariadb)
	connector, err = driver.NewConnector(ownConfig)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysql: %w: %w", err, store.ErrInvalidArgument)
	}
	s := &Store{db: db, own: sql.OpenDB(wrap(connector)), ownConfig: ownConfig, database: base.DBName, addr: base.Addr, prefix: c.Prefix, mariadb: mariadb,
		share: "FOR SHARE", nowFunc: c.NowFunc, livenessCheckEvery: c.LivenessCheckEvery}
	if mariadb {
		s.share = "LOCK IN SHARE MODE" // MariaDB has no FOR SHARE
	}
	// Idle ones kept too: database/sql keeps 2 by default, and a replica
	// whose work comes in bursts would close and open connections at
	// every one.
	s.own.SetMaxOpenConns(c.MaxConns)
	s.own.SetMaxIdleConns(c.MaxConns)
	return s, nil
}

// ownSettings are the connection settings of the store's own
// transactions: base with the session settings Open describes.
func ownSettings(base *driver.Config, c Config, mariadb bool) *driver.Config {
	own := base.Clone()
	if own.Params == nil {
		own.Params = map[string]string{}
	}
	isolation := "transaction_isolation"
	if mariadb {
		isolation = "tx_isolation" // MariaDB before 11.1 knows only this name
	}
	own.Params[isolation] = "'READ-COMMITTED'"
	own.Params["innodb_lock_wait_timeout"] = strconv.Itoa(int(c.LockWait / time.Second))
	own.Params["time_zone"] = "'+00:00'"
	// UPDATE reports the rows it matched, not those it changed: a renewal
	// or release that leaves a row as it was still found its holding.
	own.ClientFoundRows = true
	// Several statements a query: a claim reads, and writes, in one round
	// trip each. Arguments are interpolated by the driver and escaped, as
	// in every query of the store (InterpolateParams).
	own.MultiStatements = true
	return own
}

var versionPattern = regexp.MustCompile(`^(\d+)\.(\d+)`)

// checkServer reads the server's version: MySQL 8.0 or later, or MariaDB
// 10.6 or later (the first with SKIP LOCKED and NOWAIT, and with the
// CHECK constraints and generated columns the schema uses).
func checkServer(ctx context.Context, db *sql.DB) (mariadb bool, err error) {
	var version string
	if err := db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return false, err
	}
	m := versionPattern.FindStringSubmatch(version)
	if m == nil {
		return false, fmt.Errorf("the server's version %q does not parse", version)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	mariadb = strings.Contains(strings.ToLower(version), "mariadb")
	switch {
	case mariadb && (major < 10 || major == 10 && minor < 6):
		return true, fmt.Errorf("MariaDB %s is too old: cronfence needs 10.6 or later", version)
	case !mariadb && major < 8:
		return false, fmt.Errorf("MySQL %s is too old: cronfence needs 8.0 or later", version)
	}
	return mariadb, nil
}

// DB returns the pool a handler's transactions run on, for a handler that
// writes its own data in this database and fences it with LeaseFence or
// SlotComplete. The Store owns the pool: do not close it, call Close.
func (s *Store) DB() *sql.DB { return s.db }

// Prefix returns the prefix of the store's table names.
func (s *Store) Prefix() string { return s.prefix }

// Database returns the name of the database the store works in.
func (s *Store) Database() string { return s.database }

// Addr returns the address of the server, as the DSN gave it.
func (s *Store) Addr() string { return s.addr }

// MariaDB reports whether the server is MariaDB.
func (s *Store) MariaDB() bool { return s.mariadb }

// Close releases the liveness holds and closes both pools. It is
// idempotent; every call after it returns an error wrapping
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.liveHolds.Range(func(_, h any) bool {
		h.(*livenessHold).release()
		return true
	})
	if err := errors.Join(s.own.Close(), s.db.Close()); err != nil {
		return fmt.Errorf("mysql: close: %w", err)
	}
	return nil
}

// Now returns the database clock (Config.NowFunc's, when set: it still
// asks the database, as callers use Now to learn whether it answers).
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, closedError("now")
	}
	now, err := dbNow(ctx, s.db)
	if err != nil {
		return time.Time{}, s.errorf(err, "read the database clock")
	}
	if s.nowFunc != nil {
		return sqlstore.Normalize(s.nowFunc()), nil
	}
	return now, nil
}

// dbNow reads the database clock.
func dbNow(ctx context.Context, q sqlstore.Querier) (time.Time, error) {
	var now time.Time
	err := q.QueryRowContext(ctx, `SELECT UTC_TIMESTAMP(6)`).Scan(decode.Instant(&now))
	return now, err
}

// now is the clock of one call: the pinned instant if set, otherwise
// Config.NowFunc's if set, otherwise the database clock read on q (inside
// the call's transaction, after its locks, so a wait for a lock does not
// leave it behind).
func (s *Store) now(ctx context.Context, q sqlstore.Querier, pinned time.Time) (time.Time, error) {
	switch {
	case !pinned.IsZero():
		return sqlstore.Normalize(pinned), nil
	case s.nowFunc != nil:
		return sqlstore.Normalize(s.nowFunc()), nil
	}
	return dbNow(ctx, q)
}

// errRaced is returned inside a transaction that found the rows it read
// changed by a writer that did not take the lease row first (a slot
// recorded by a skip, a lease created concurrently): inTx runs the
// transaction again, and the second run reads the new rows.
var errRaced = errors.New("raced by a concurrent writer")

// maxTxRuns bounds how often inTx runs one transaction when it deadlocks
// or races; maxTxPause bounds the pause between two runs.
const (
	maxTxRuns  = 50
	maxTxPause = 50 * time.Millisecond
)

// inTx runs fn in one transaction on the store's own pool, after checking
// the schema, and commits when fn returns nil. Every write of the store goes
// through it. A transaction that InnoDB chose as a deadlock victim (rolled
// back whole), or in which fn found a race (errRaced), runs again, at most
// maxTxRuns times, after a random pause that grows with each run (so that
// of many writers contending for one new row, say 32 replicas raising one
// alert, each gets through); fn must therefore set its results afresh
// each run.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	for run := 1; ; run++ {
		err := s.txOnce(ctx, fn)
		if err == nil || run == maxTxRuns || !(errors.Is(err, errRaced) || mysqlCode(err) == errDeadlock) {
			return err
		}
		pause := time.Duration(rand.Int64N(int64(min(maxTxPause, time.Millisecond<<min(run, 16)))))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
	}
}

func (s *Store) txOnce(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.checkSchema(ctx, s.own); err != nil {
		return err
	}
	tx, err := s.own.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// t names a table of the store: its prefix and name.
func (s *Store) t(name string) string { return s.prefix + name }

// q puts the store's prefix where a query says {{prefix}}.
func (s *Store) q(query string) string { return strings.ReplaceAll(query, "{{prefix}}", s.prefix) }

// nullTime maps the zero time to NULL, and any other to a DATETIME(6)'s
// value.
func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: sqlstore.Normalize(t), Valid: true}
}

// decode reads the rows of the tables this store shares with SQLite. The
// driver reads a DATETIME(6) as a time.Time (parseTime).
var decode = sqlstore.NewDecoder(time.Time.UTC)

// placeholders returns n comma-separated question marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
