// Package postgres is the cronfence store on PostgreSQL, through pgx v5.
//
// All lease timing uses the database clock: now() in the single statement
// that acquires, renews, claims or finishes, and clock_timestamp() in a fence
// check, which runs inside a caller's possibly long transaction. Every
// operation of store.Store is one round trip on the happy path.
//
// The store works in one schema (DefaultSchema unless Config.Schema says
// otherwise), created by Migrate. Queries always name the schema, so the
// pool's search_path does not matter.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"

	"github.com/cronfence/cronfence/store"
)

// DefaultSchema is the schema cronfence uses when Config.Schema is empty.
const DefaultSchema = "cronfence"

// Config configures a Store. The zero value is valid.
type Config struct {
	// Schema is the PostgreSQL schema holding cronfence's tables: lower-case
	// letters, digits and underscores, starting with a letter or underscore,
	// at most 63 bytes. Defaults to DefaultSchema ("cronfence").
	Schema string

	// NowFunc, when set, replaces the database clock for every call that
	// does not pin its own Now, fences included. It exists for tests that
	// move a whole cluster's time by hand; production leaves it nil, and the
	// database clock decides. Defaults to nil.
	NowFunc func() time.Time

	// LivenessCheckEvery is how often a liveness hold (LivenessHold)
	// whose connection broke tries to take its lock again on a new one,
	// the first try included (a break itself is noticed at once). Defaults
	// to DefaultLivenessCheckEvery (1s).
	LivenessCheckEvery time.Duration
}

// DefaultLivenessCheckEvery is the default of Config.LivenessCheckEvery.
const DefaultLivenessCheckEvery = time.Second

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

func (c *Config) validate() error {
	if !schemaPattern.MatchString(c.Schema) {
		return fmt.Errorf("postgres: Schema must be lower-case letters, digits and underscores, starting with a letter or underscore, at most 63 bytes, got %q: %w", c.Schema, store.ErrInvalidArgument)
	}
	if c.LivenessCheckEvery < time.Millisecond {
		return fmt.Errorf("postgres: LivenessCheckEvery must be at least 1ms, got %s: %w", c.LivenessCheckEvery, store.ErrInvalidArgument)
	}
	return nil
}

// Store is a store.Store on a pgx connection pool.
type Store struct {
	pool   *pgxpool.Pool
	schema string
	q      queries
	nowFn  func() time.Time
	closed atomic.Bool

	livenessCheckEvery time.Duration
	liveHolds          sync.Map // int64 key → *livenessHold, this store's liveness locks
}

var _ store.Store = (*Store)(nil)

// New returns a Store on pool. It does no I/O: call Migrate before use. The
// pool stays the caller's: Close does not close it.
func New(pool *pgxpool.Pool, cfg *Config) (*Store, error) {
	if pool == nil {
		return nil, fmt.Errorf("postgres: pool must not be nil: %w", store.ErrInvalidArgument)
	}
	c := Config{}
	if cfg != nil {
		c = *cfg
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.LivenessCheckEvery == 0 {
		c.LivenessCheckEvery = DefaultLivenessCheckEvery
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return &Store{pool: pool, schema: c.Schema, q: newQueries(c.Schema), nowFn: c.NowFunc, livenessCheckEvery: c.LivenessCheckEvery}, nil
}

// Schema returns the schema the store works in.
func (s *Store) Schema() string { return s.schema }

// Pool returns the pool the store was built on.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close marks the store closed. The pool is the caller's and stays open.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// Now returns the database clock.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := s.usable(); err != nil {
		return time.Time{}, err
	}
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
		return time.Time{}, s.translate("read the database clock", err)
	}
	if s.nowFn != nil {
		// Pinned, but still a round trip: callers read the clock to learn
		// whether the database answers, too (the scheduler probes an
		// unreachable store with it).
		return s.nowFn().UTC().Truncate(time.Microsecond), nil
	}
	return now.UTC(), nil
}

func (s *Store) usable() error {
	if s.closed.Load() {
		return fmt.Errorf("postgres: %w", store.ErrClosed)
	}
	return nil
}

// withSchema puts the quoted schema name where a query says {{schema}}.
func withSchema(schema, sql string) string {
	return strings.ReplaceAll(sql, "{{schema}}", pgx.Identifier{schema}.Sanitize())
}

// translate is describe for the error of a statement the store sent on its
// own pool. A write refused there as read-only (read_only_sql_transaction:
// the server is a standby, or an old primary demoted after a failover) also
// lets every pooled connection go: they all lead to that server, and the
// pool would keep them for their whole lifetime. New connections follow the
// URL again, so with several hosts and target_session_attrs=read-write the
// next call reaches the writable one. The liveness locks move with them
// (see moveLiveness). (In a caller's transaction the same refusal may be
// the caller's own READ ONLY: see fence, which uses describe.)
func (s *Store) translate(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "25006" {
		s.pool.Reset()
		s.moveLiveness()
		return fmt.Errorf("postgres: %s: the server is read-only (a standby, or a primary demoted by a failover); the pool reconnects: %w", what, err)
	}
	return s.describe(what, err)
}

// describe turns driver errors into the store's, so callers never see pgx
// types: a closed pool becomes store.ErrClosed, a missing schema or table a
// SchemaVersionError telling the operator to migrate.
func (s *Store) describe(what string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, puddle.ErrClosedPool):
		return fmt.Errorf("postgres: %s: pool is closed: %w", what, store.ErrClosed)
	case errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("postgres: %s: %w", what, store.ErrNotFound)
	case errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "3F000" || pgErr.Code == "42883"):
		// undefined_table, invalid_schema_name, undefined_function: the
		// schema was never migrated here (or was dropped).
		return fmt.Errorf("postgres: %s: %w (%s)", what, &store.SchemaVersionError{Database: 0, Binary: latestVersion()}, pgErr.Message)
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// nowArg is the value for a coalesce($n::timestamptz, now()) parameter: the
// pinned time, else Config.NowFunc's, else NULL for the database clock.
func (s *Store) nowArg(t time.Time) any {
	switch {
	case !t.IsZero():
		return t
	case s.nowFn != nil:
		return s.nowFn()
	}
	return nil
}

// micros is a duration as the integer microseconds the SQL multiplies by an
// interval of one microsecond.
func micros(d time.Duration) int64 { return d.Microseconds() }

// slotTime normalises a slot instant the way PostgreSQL stores it.
func slotTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// genericPlanMax is the largest batch a batch statement (a claim, a
// finish) runs with the pool's usual plan: the statement prepared once per
// connection and, on a tuned pool (TunePool) or after its fifth run,
// planned once for any batch ("generic"). That plan cannot know how many
// items a batch has, guesses a few, and joins the statement's parts to one
// another by scanning one for each row of the other: harmless for a few
// items, quadratic for thousands (a claim of 1,000 items ran 0.4 to 1.2 s
// so, 60 to 80 ms planned for its size). A larger batch is planned for its
// size (see querySized).
const genericPlanMax = 100

// largeBatchSQL makes the statements after it, up to the end of their
// transaction, planned for their arguments whatever the connection's
// plan_cache_mode, and never compiled to machine code (JIT) whatever its
// jit: a plan for hundreds of items passes jit_above_cost, and on a pool
// that leaves jit on (an application's own, not set up by TunePool)
// compiling a claim of 1,000 items took seconds against tens of
// milliseconds of work; 10,000 jobs due at once took 54 s to run on three
// replicas, 3 s without. One statement sets both, for the transaction.
const largeBatchSQL = "SELECT set_config('plan_cache_mode', 'force_custom_plan', true), set_config('jit', 'off', true)"

// querySized runs a batch statement of n items. A batch larger than
// genericPlanMax is sent in one round trip behind largeBatchSQL, both in
// the implicit transaction a pipeline runs in until its end, so that the
// server plans it for its size and does not compile it. It is not sent
// with the simple protocol, its arrays written into the statement's text:
// writing and escaping that text takes 17 % of a replica's CPU at 5,000
// jobs a second.
func (s *Store) querySized(ctx context.Context, sql string, n int, args []any) (pgx.Rows, error) {
	if n <= genericPlanMax {
		return s.pool.Query(ctx, sql, args...)
	}
	return s.queryBehind(ctx, []string{largeBatchSQL}, sql, args)
}

// queryBehind runs sql behind the settings statements (SET LOCAL, or
// set_config with is_local), in one round trip and in the one implicit
// transaction a pipeline runs in until its end: the settings hold for sql
// alone.
func (s *Store) queryBehind(ctx context.Context, settings []string, sql string, args []any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	for _, set := range settings {
		b.Queue(set)
	}
	b.Queue(sql, args...)
	br := s.pool.SendBatch(ctx, b)
	// After an error, closing the pipeline reports that error again: the
	// first one is the one to return.
	for range settings {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &pipelinedRows{Rows: rows, results: br}, nil
}

// pipelinedRows are a statement's rows read from a pipeline: the pipeline
// ends (its transaction commits, its connection goes back to the pool)
// once they are read, and an error there (a commit refused) is the rows'
// error.
type pipelinedRows struct {
	pgx.Rows
	results pgx.BatchResults
	ended   bool
	err     error
}

func (r *pipelinedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *pipelinedRows) Close() {
	if r.ended {
		return
	}
	r.ended = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if err := r.results.Close(); r.err == nil {
		r.err = err // the pipeline's end: its commit
	}
}

func (r *pipelinedRows) Err() error {
	if r.ended {
		return r.err
	}
	return r.Rows.Err()
}

// TunePool sets, on the config of a pool that only this store uses, what
// its statements run best with:
//
//   - plan_cache_mode=force_generic_plan. Every statement of the store is
//     prepared once per connection and planned once: PostgreSQL otherwise
//     plans each of a connection's first five executions anew with their
//     arguments (a "custom plan"), and the claim, a statement of many
//     parts, takes 3 to 6 ms to plan against about 1 ms to run. A job that
//     fires rarely meets a fresh connection on most fires and so pays that
//     on most claims. (Batches of more than a hundred items are still
//     planned for their size; see genericPlanMax.)
//   - jit=off. The store's statements read and write a few rows per item;
//     compiling one (which PostgreSQL does once a plan's estimated cost
//     passes jit_above_cost, as a large batch's does) took 3 s against
//     tens of ms of work.
//   - random_page_cost=1.1, the figure commonly given for SSDs and data
//     that fits in memory (the default, 4, is a spinning disk's). With 4,
//     a finish of 500 runs read and hashed the whole slots table (26,000
//     rows: 26 ms) rather than look 500 slots up by key (3 ms), and went
//     on doing so until the table was several times larger.
//
// Do not call it for a pool the application shares: the settings hold for
// every statement on the pool's connections. The cronfence binary calls it
// for its own pool.
func TunePool(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
	cfg.ConnConfig.RuntimeParams["jit"] = "off"
	cfg.ConnConfig.RuntimeParams["random_page_cost"] = "1.1"
}

// warmIdleConns is how many idle connections WarmPool keeps open: a slot's
// claim and a run's end find one ready, rather than open one (and prepare
// their statements on it) while the slot waits.
const warmIdleConns = 2

// WarmPool readies the connections of a pool that cfg configures, and that
// a Store on schema will use, for a slot's path: it keeps warmIdleConns
// connections idle (opened in the background), and on each connection as
// it opens it prepares and plans the claim (both ways it is sent), the
// finishes and the batched renewal, running each once inside a
// transaction it rolls back. A claim
// sent on a connection that had not run the claim statement prepared and
// planned it first: about 13 ms, against under a millisecond once ready.
// (It is not what made the slowest slot starts measured slow: autovacuum's
// analyses, which make every connection plan again, were; see migration
// 005.) A warm-up that fails (a schema not migrated yet) leaves the
// connection as it was. Call it after TunePool, before the pool is
// created; like TunePool, for a pool that is the store's alone. An empty
// schema is DefaultSchema.
func WarmPool(cfg *pgxpool.Config, schema string) {
	if schema == "" {
		schema = DefaultSchema
	}
	// A store of no pool: only its statements and argument builders are
	// used, on the connection being opened.
	s := &Store{schema: schema, q: newQueries(schema)}
	cfg.MinIdleConns = max(cfg.MinIdleConns, warmIdleConns)
	next := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if next != nil {
			if err := next(ctx, conn); err != nil {
				return err
			}
		}
		s.warm(ctx, conn)
		return nil
	}
}

// warmName names the job, lease and owner of the warm-up's items: a name
// no replica uses (the "cronfence:" prefix is the store's own).
const warmName = "cronfence:warm-up"

// warm runs the statements on a slot's path once on conn, with the
// arguments the store's own methods build, for items that touch no row of
// anyone's (a claim of a slot not due yet, an empty finish batch, the end
// and renewal of a holding nobody has), in a transaction it rolls back:
// pgx prepares each (and keeps it), and the server plans it. Errors leave
// conn as cold as it was.
func (s *Store) warm(ctx context.Context, conn *pgx.Conn) {
	claimArgs := s.claimArgs([]store.SlotClaimParams{{Job: warmName, Slot: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		LeaseName: warmName, Owner: warmName, TTL: time.Second, MaxAttempts: 1}})
	finishBatchArgs, err := s.finishBatchArgs(nil, nil)
	if err != nil {
		return
	}
	finishArgs, err := s.finishArgs(store.SlotFinishParams{Job: warmName, LeaseName: warmName, Owner: warmName, Generation: 1,
		Status: store.SlotCompleted, Run: store.Run{Manual: true}})
	if err != nil {
		return
	}
	renewArgs := s.renewBatchArgs([]store.LeaseRenewParams{{LeaseRef: store.LeaseRef{Name: warmName, Owner: warmName, Generation: 1}, TTL: time.Second}})
	// The claim claim_committed runs, prepared under the name it is run by
	// (claimCommitted), and run once here by that name.
	if _, err := conn.Prepare(ctx, s.q.claimJSON.name, s.q.claimJSON.sql); err != nil {
		return
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // rolled back whatever happened
	for _, st := range []struct {
		sql  string
		args []any
	}{
		{s.q.slotClaim, claimArgs},
		{s.q.claimJSON.name, claimArgs},
		{s.q.slotFinishBatch, finishBatchArgs},
		{s.q.slotFinish, finishArgs},
		{s.q.leaseRenewBatch, renewArgs},
	} {
		rows, err := tx.Query(ctx, st.sql, st.args...)
		if err != nil {
			return
		}
		rows.Close()
		if rows.Err() != nil {
			return
		}
	}
}
