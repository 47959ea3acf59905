package mysql

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"

	"github.com/cronfence/cronfence/store"
)

// DefaultPrefix is the prefix of every table when Config.Prefix is empty.
const DefaultPrefix = "cronfence_"

// DefaultLockWait is the default of Config.LockWait.
const DefaultLockWait = time.Second

// DefaultLivenessCheckEvery is the default of Config.LivenessCheckEvery.
const DefaultLivenessCheckEvery = time.Second

// DefaultMaxConns is the default of Config.MaxConns.
const DefaultMaxConns = 10

// Config configures a Store. A nil *Config means all defaults.
type Config struct {
	// Prefix begins the name of every table and procedure the store
	// creates: lower-case letters, digits and underscores, starting with a
	// letter or underscore, at most 32 bytes. Two installations in one
	// database differ by it. Defaults to DefaultPrefix ("cronfence_").
	Prefix string

	// LockWait is how long the store's own statements wait for a lease row
	// another transaction locks before giving up on it: the session's
	// innodb_lock_wait_timeout on the store's connections, in whole seconds
	// (at least 1s). The store's own transactions hold a row for
	// milliseconds; a handler's fenced transaction holds its lease row
	// until it commits. A claim that waits this long for a lease whose
	// holder is gone is refused store.ClaimLeaseBusy (its deposed writer is
	// still inside a fenced transaction) and tried again later, rather than
	// waiting for that writer. Defaults to DefaultLockWait (1s).
	LockWait time.Duration

	// NowFunc, when set, replaces the database clock for every call that
	// does not pin its own Now, fences included. It exists for tests that
	// move a whole cluster's time by hand; production leaves it nil, and the
	// database clock decides. Defaults to nil.
	NowFunc func() time.Time

	// LivenessCheckEvery is how often a liveness hold (LivenessHold)
	// checks that its connection still holds its lock, and takes it again
	// on a new connection once it does not. Defaults to
	// DefaultLivenessCheckEvery (1s).
	LivenessCheckEvery time.Duration

	// MaxConns bounds the connections the store's own operations (claims,
	// finishes, renewals, the rest) hold open at once; an operation that
	// finds them all busy waits for one, within its context. A liveness
	// hold keeps one of them for as long as it lasts. The pool of DB, on
	// which handlers run their fenced transactions, is not bounded here.
	// Without a bound a replica whose runs end by the hundred opened a
	// connection for each, past the server's max_connections (151 by
	// default), and was refused. At least 2. Defaults to DefaultMaxConns
	// (10).
	MaxConns int
}

var prefixPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,31}$`)

// withDefaults returns a copy of cfg (which may be nil) with zero fields set
// to their defaults.
func (cfg *Config) withDefaults() Config {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.LockWait == 0 {
		c.LockWait = DefaultLockWait
	}
	if c.LivenessCheckEvery == 0 {
		c.LivenessCheckEvery = DefaultLivenessCheckEvery
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	return c
}

func (c Config) validate() error {
	if !prefixPattern.MatchString(c.Prefix) {
		return fmt.Errorf("mysql: Prefix must be lower-case letters, digits and underscores, starting with a letter or underscore, at most 32 bytes, got %q: %w", c.Prefix, store.ErrInvalidArgument)
	}
	if c.LockWait < time.Second || c.LockWait%time.Second != 0 {
		return fmt.Errorf("mysql: LockWait must be a whole number of seconds, at least 1s (innodb_lock_wait_timeout), got %s: %w", c.LockWait, store.ErrInvalidArgument)
	}
	if c.MaxConns < 2 {
		return fmt.Errorf("mysql: MaxConns must be at least 2 (a liveness hold keeps one), got %d: %w", c.MaxConns, store.ErrInvalidArgument)
	}
	if c.LivenessCheckEvery < time.Millisecond {
		return fmt.Errorf("mysql: LivenessCheckEvery must be at least 1ms, got %s: %w", c.LivenessCheckEvery, store.ErrInvalidArgument)
	}
	return nil
}

// IsURL reports whether s is a MySQL URL (mysql://…), the form the
// cronfence binary takes beside postgres:// URLs.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "mysql://") || strings.HasPrefix(s, "mariadb://")
}

// parseDSN reads where to connect: a URL, mysql://user:password@host:port/database?param=value
// (mariadb:// too; the port defaults to 3306; parameters are the driver's,
// as in its DSN), or a DSN of github.com/go-sql-driver/mysql,
// user:password@tcp(host:port)/database?param=value. A database must be
// named: the store's tables live in it.
func parseDSN(dsn string) (*driver.Config, error) {
	if IsURL(dsn) {
		native, err := urlToDSN(dsn)
		if err != nil {
			return nil, err
		}
		dsn = native
	}
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w: %w", err, store.ErrInvalidArgument)
	}
	if cfg.DBName == "" {
		return nil, fmt.Errorf("mysql: the URL names no database (mysql://user:password@host/DATABASE): %w", store.ErrInvalidArgument)
	}
	return cfg, nil
}

// urlToDSN turns mysql://user:password@host:port/database?params into the
// driver's DSN.
func urlToDSN(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL, password included: say what is wrong
		// without it.
		return "", fmt.Errorf("mysql: the URL does not parse (mysql://user:password@host:port/database): %w", store.ErrInvalidArgument)
	}
	if u.Host == "" {
		return "", fmt.Errorf("mysql: the URL names no host (mysql://user:password@HOST/database): %w", store.ErrInvalidArgument)
	}
	host := u.Host
	if u.Port() == "" {
		host += ":3306"
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return "", fmt.Errorf("mysql: the URL must name one database (mysql://user:password@host/DATABASE), got path %q: %w", u.Path, store.ErrInvalidArgument)
	}
	cfg := driver.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", host, db
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	dsn := cfg.FormatDSN()
	if u.RawQuery != "" {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + u.RawQuery
	}
	return dsn, nil
}
