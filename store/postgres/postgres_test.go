package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// newStore returns a migrated store in a fresh schema, and that schema.
func newStore(t *testing.T) (*postgres.Store, string) {
	return newStoreWith(t, postgres.Config{})
}

// newStoreWith is newStore with a config of the test's own (its Schema is
// set to the fresh one).
func newStoreWith(t *testing.T, cfg postgres.Config) (*postgres.Store, string) {
	pool, schema := pgtest.Schema(t)
	cfg.Schema = schema
	s, err := postgres.New(pool, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return s, schema
}

// tunedStore returns a migrated store in a fresh schema on a pool tuned as
// the cronfence binary tunes its own (TunePool), the schema's own untuned
// pool, and the schema.
func tunedStore(t *testing.T) (*postgres.Store, *pgxpool.Pool, string) {
	base, schema := pgtest.Schema(t)
	cfg := base.Config()
	postgres.TunePool(cfg)
	tuned, err := pgxpool.NewWithConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tuned.Close)
	s, err := postgres.New(tuned, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	return s, base, schema
}

// openOn returns another store on the same schema over a pool of its own.
func openOn(t *testing.T, schema string) *postgres.Store {
	return openOnWith(t, schema, nil)
}

// openOnWith is openOn with the pool's config changed by tune.
func openOnWith(t *testing.T, schema string, tune func(*pgxpool.Config)) *postgres.Store {
	s, err := postgres.New(pgtest.NewPoolWith(t, tune), &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Bundle {
		s, schema := newStore(t)
		probe := pgx.Identifier{schema, "fence_probe"}.Sanitize()
		if _, err := s.Pool().Exec(ctx(t), `CREATE TABLE `+probe+` (key text PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		return storetest.Bundle{
			Store: s,
			Open:  func(t *testing.T) store.Store { return openOn(t, schema) },
			FencedWrite: func(ctx context.Context, name string, generation int64, key string) error {
				return pgx.BeginFunc(ctx, s.Pool(), func(tx pgx.Tx) error {
					if err := s.LeaseFence(ctx, tx, name, generation); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO `+probe+` (key) VALUES ($1)`, key)
					return err
				})
			},
			WriteTx: func(ctx context.Context, key string, commit bool, guard func(tx any) error) error {
				tx, err := s.Pool().Begin(ctx)
				if err != nil {
					return err
				}
				defer tx.Rollback(context.Background())
				if err := guard(tx); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO `+probe+` (key) VALUES ($1)`, key); err != nil {
					return err
				}
				if !commit {
					return tx.Rollback(ctx)
				}
				return tx.Commit(ctx)
			},
			Written: func(ctx context.Context, key string) bool {
				var n int
				if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM `+probe+` WHERE key = $1`, key).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n == 1
			},
			Dump: func(t *testing.T) string { return dumpSchema(t, s, schema) },
			RenameTable: func(t *testing.T, table string, back bool) {
				from, to := table, table+"_aside"
				if back {
					from, to = to, from
				}
				if _, err := s.Pool().Exec(context.Background(), `ALTER TABLE `+pgx.Identifier{schema, from}.Sanitize()+` RENAME TO `+pgx.Identifier{to}.Sanitize()); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, schema := range []string{"Upper", "1starts_with_digit", "has-dash", "has space", `quo"te`, "a234567890123456789012345678901234567890123456789012345678901234"} {
		_, err := postgres.New(pool, &postgres.Config{Schema: schema})
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("schema %q: error = %v, want ErrInvalidArgument", schema, err)
		}
	}
	if _, err := postgres.New(nil, nil); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("nil pool: error = %v, want ErrInvalidArgument", err)
	}
	s, err := postgres.New(pool, nil)
	if err != nil || s.Schema() != postgres.DefaultSchema {
		t.Fatalf("nil config: schema %q, %v; want %q", s.Schema(), err, postgres.DefaultSchema)
	}
}

// A takeover is turned down, at once, while a fenced transaction holds the
// lease row (FOR KEY SHARE), and succeeds only after that transaction
// commits: the write is then ordered before the new owner's.
func TestFenceHoldsOffTakeoverUntilCommit(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	// A's lease expires 2 seconds from now by the database clock.
	a, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: 2 * time.Second, Now: now})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	tx, err := s.Pool().Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := s.LeaseFence(ctx(t), tx, "x", a.Generation); err != nil {
		t.Fatal(err)
	}

	// B tries to take over as if the lease had expired.
	takeover := store.LeaseAcquireParams{Name: "x", Owner: "b", TTL: time.Minute, Now: now.Add(time.Hour)}
	if r := awaitWithoutLockWait(t, s.Pool(), schema, func() acquired { return tryAcquire(t, other, takeover) }); r.err != nil || r.ok || r.lease.Owner != "a" || r.lease.Generation != a.Generation {
		t.Fatalf("takeover during the fenced transaction = %+v; want turned down, naming a's lease", r)
	}
	if _, err := tx.Exec(ctx(t), `SELECT 1`); err != nil { // the fenced write
		t.Fatal(err)
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	l, ok, err := other.LeaseAcquire(ctx(t), takeover)
	if err != nil || !ok || l.Generation != a.Generation+1 {
		t.Fatalf("takeover after the commit = %+v, %v, %v", l, ok, err)
	}
}

// The fence also works in a *sql.Tx, for handlers whose data layer uses
// database/sql over pgx's stdlib driver, and as a SQL function for clients
// that only know their generation.
func TestFenceInDatabaseSQLAndSQLFunction(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	db := openStdlib(t, s.Pool())
	l, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Minute})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	tx, err := db.BeginTx(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseFence(ctx(t), tx, "x", l.Generation); err != nil {
		t.Fatalf("fence in *sql.Tx while held: %v", err)
	}
	_ = tx.Rollback()
	tx, err = db.BeginTx(ctx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.LeaseFence(ctx(t), tx, "x", l.Generation+1); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("fence in *sql.Tx at a wrong generation: %v, want ErrLeaseLost", err)
	}
	_ = tx.Rollback()

	fn := pgx.Identifier{schema, "fence"}.Sanitize()
	var got int64
	if err := s.Pool().QueryRow(ctx(t), `SELECT `+fn+`($1, $2)`, "x", l.Generation).Scan(&got); err != nil || got != l.Generation {
		t.Fatalf("SQL fence while held = %d, %v", got, err)
	}
	if _, err := s.LeaseRelease(ctx(t), l.Ref()); err != nil {
		t.Fatal(err)
	}
	err = s.Pool().QueryRow(ctx(t), `SELECT `+fn+`($1, $2)`, "x", l.Generation).Scan(&got)
	if err == nil || !containsAll(err.Error(), "CF001", "no longer held") {
		t.Fatalf("SQL fence after release: %v, want an error with SQLSTATE CF001", err)
	}
}

func TestFenceOutsideTransactionRefused(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	conn, err := s.Pool().Acquire(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, notTx := range []any{s.Pool(), conn, conn.Conn(), openStdlib(t, s.Pool()), nil} {
		if err := s.LeaseFence(ctx(t), notTx, "x", 1); !errors.Is(err, store.ErrUnsupportedTx) {
			t.Errorf("fence with %T: %v, want ErrUnsupportedTx", notTx, err)
		}
	}
}

func TestMigrateConcurrentReplicas(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	const replicas = 6
	errs := make(chan error, replicas)
	stores := make([]*postgres.Store, replicas)
	for i := range stores {
		stores[i] = openOn(t, schema)
	}
	start := make(chan struct{})
	for _, s := range stores {
		go func() { <-start; errs <- s.Migrate(ctx(t)) }()
	}
	close(start)
	for range replicas {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Migrate: %v", err)
		}
	}
	var applied int
	if err := stores[0].Pool().QueryRow(ctx(t), `SELECT count(*) FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if _, bin, _ := stores[0].SchemaVersion(ctx(t)); applied != bin {
		t.Fatalf("%d migration rows after %d concurrent Migrates, want %d", applied, replicas, bin)
	}
}

func TestSchemaNewerThanBinaryRefused(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	if _, err := s.Pool().Exec(ctx(t), `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, name) VALUES (99, 'from_the_future')`); err != nil {
		t.Fatal(err)
	}
	err := s.Migrate(ctx(t))
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 {
		t.Fatalf("Migrate on a newer schema: %v, want a SchemaVersionError at 99 wrapping ErrSchemaTooNew", err)
	}
	if db, _, _ := s.SchemaVersion(ctx(t)); db != 99 {
		t.Fatalf("the refused Migrate changed the version to %d", db)
	}
	if err := s.MigrateDown(ctx(t), 0); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Fatalf("MigrateDown on a newer schema: %v, want ErrSchemaTooNew", err)
	}
}

func TestUnmigratedSchema(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	s := openOn(t, schema)
	if db, bin, err := s.SchemaVersion(ctx(t)); err != nil || db != 0 || bin < 1 {
		t.Fatalf("SchemaVersion before Migrate = %d, %d, %v", db, bin, err)
	}
	_, _, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Second})
	if !errors.Is(err, store.ErrSchemaOutdated) {
		t.Fatalf("LeaseAcquire before Migrate: %v, want ErrSchemaOutdated", err)
	}
}

func TestMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	if err := s.MigrateDown(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := s.Pool().QueryRow(ctx(t), `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations'`, schema).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("after MigrateDown(0): %d tables left, %v", tables, err)
	}
	if err := s.Migrate(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Second}); err != nil || !ok {
		t.Fatalf("acquire after down and up: %v, %v", ok, err)
	}
}

func TestClosedPool(t *testing.T) {
	t.Parallel()
	_, schema := newStore(t)
	pool := pgtest.NewPool(t)
	s, err := postgres.New(pool, &postgres.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	pool.Close()
	_, _, err = s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "x", Owner: "a", TTL: time.Second})
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("LeaseAcquire on a closed pool: %v, want ErrClosed", err)
	}
}

func TestSchemaIsConfigurable(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	var n int
	if err := s.Pool().QueryRow(ctx(t), `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename IN ('leases', 'slots', 'runs')`, schema).Scan(&n); err != nil || n != 3 {
		t.Fatalf("tables in schema %q: %d, %v", schema, n, err)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
