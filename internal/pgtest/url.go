package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/goleak"
)

const (
	// EnvURL names the environment variable that points tests at a database.
	EnvURL = "TEST_DATABASE_URL"

	// DefaultURL is the database tests use when EnvURL is unset.
	DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

	// probeTimeout bounds the check that a server answers: long enough for a
	// loaded CI machine, short enough that a missing server costs little.
	probeTimeout = 2 * time.Second
)

var (
	// mainCalled is set by Main, which promises to remove a throwaway
	// cluster after the tests. Without it URL refuses to start one, since it
	// would outlive the test binary.
	mainCalled atomic.Bool

	resolveOnce sync.Once
	resolved    resolution

	sharedMu sync.Mutex
	shared   *Cluster // the throwaway cluster URL started, if any
)

// resolution is the outcome of looking for the test database, computed once
// per test binary.
type resolution struct {
	url  string
	skip string // non-empty: skip database tests, saying why
	err  error
}

// URL returns the PostgreSQL URL for tests: TEST_DATABASE_URL, else
// DefaultURL. If nothing answers at the default and PostgreSQL server
// binaries are installed, it starts one throwaway cluster for the whole test
// binary (removed by Main) and returns its URL; otherwise it fails the test
// with a message saying what to install or set. Under go test -short a
// missing database skips the test instead.
func URL(t testing.TB) string {
	t.Helper()
	resolveOnce.Do(func() {
		var c *Cluster
		resolved, c = resolve(resolveEnv{
			envURL:     os.Getenv(EnvURL),
			defaultURL: DefaultURL,
			short:      testing.Short(),
			mainCalled: mainCalled.Load(),
			findBin:    findBinDir,
		})
		sharedMu.Lock()
		shared = c
		sharedMu.Unlock()
	})
	if resolved.err != nil {
		t.Fatal(resolved.err)
	}
	if resolved.skip != "" {
		t.Skip(resolved.skip)
	}
	return resolved.url
}

// Main runs the tests, checks that no goroutine leaked, then stops and
// removes the throwaway cluster if URL started one, and exits with the
// tests' code. Call it from TestMain.
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	sharedMu.Lock()
	c := shared
	sharedMu.Unlock()
	if c != nil {
		if err := c.destroy(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			if code == 0 {
				code = 1
			}
		}
	}
	if code == 0 {
		// Every test has cleaned up by now: a goroutine still running was
		// leaked by the code under test (a keeper never stopped, a pool
		// never closed) and fails the package.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: goroutines leaked by the tests:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// resolveEnv is everything resolve depends on, so each outcome can be tested.
type resolveEnv struct {
	envURL     string
	defaultURL string
	short      bool
	mainCalled bool
	findBin    func() (string, error)
}

// resolve decides which database the tests use. It returns the cluster it
// started, if any, for Main to remove.
func resolve(env resolveEnv) (resolution, *Cluster) {
	if env.envURL != "" {
		// An explicit URL is never second-guessed: silently testing against
		// another database would hide the misconfiguration.
		if err := probe(env.envURL); err != nil {
			return resolution{err: fmt.Errorf("pgtest: %s is set but the database does not accept connections: %w; fix or unset it", EnvURL, err)}, nil
		}
		return resolution{url: env.envURL}, nil
	}
	err := probe(env.defaultURL)
	if err == nil {
		return resolution{url: env.defaultURL}, nil
	}
	if answered(err) {
		return resolution{err: fmt.Errorf("pgtest: the PostgreSQL server at %s answered but refused the connection: %w; create the database that URL names (createdb -h 127.0.0.1 -U postgres test), or set %s to a database tests may use", env.defaultURL, err, EnvURL)}, nil
	}
	if env.short {
		return resolution{skip: fmt.Sprintf("pgtest: -short and no PostgreSQL answers at %s; set %s to run database tests", env.defaultURL, EnvURL)}, nil
	}
	bin, binErr := env.findBin()
	if binErr != nil {
		return resolution{err: fmt.Errorf("pgtest: nothing answers at %s (%w) and no PostgreSQL server binaries were found (%w): install them (apt-get install postgresql) so tests can start a throwaway server, or set %s to a database tests may use", env.defaultURL, err, binErr, EnvURL)}, nil
	}
	if !env.mainCalled {
		return resolution{err: fmt.Errorf("pgtest: nothing answers at %s and this package's TestMain does not call pgtest.Main, which must remove the throwaway server tests would start: add func TestMain(m *testing.M) { pgtest.Main(m) }", env.defaultURL)}, nil
	}
	c, startErr := newCluster(bin, nil)
	if startErr != nil {
		return resolution{err: fmt.Errorf("pgtest: nothing answers at %s, and starting a throwaway server failed: %w", env.defaultURL, startErr)}, nil
	}
	return resolution{url: c.URL()}, c
}

// probe connects once to url and closes the connection.
func probe(url string) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = probeTimeout
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// answered reports whether a connection error came from a server (wrong
// password, missing database, too many clients) rather than from nothing
// listening: only the latter justifies starting a server of our own.
func answered(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}
