package pgtest

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RoundTrips is a pgx tracer that counts a pool's exchanges with the server,
// for the benchmarks' round-trip figures: each statement (Query, QueryRow,
// Exec), batch (one pipeline) and COPY FROM counts as one, and so do a
// statement preparation that reached the server and the pool's liveness
// ping on acquire (ShouldPing; pings bypass the tracer). Opening a
// connection takes several round trips; it is counted apart (Connects).
// While recording (Record), it also keeps the start of each exchange's SQL,
// to name what a figure counted. Install it with Trace.
type RoundTrips struct {
	statements, batches, copies, prepares, pings, connects atomic.Int64

	mu        sync.Mutex
	recording bool
	seen      []string
}

var (
	_ pgx.QueryTracer    = (*RoundTrips)(nil)
	_ pgx.BatchTracer    = (*RoundTrips)(nil)
	_ pgx.CopyFromTracer = (*RoundTrips)(nil)
	_ pgx.PrepareTracer  = (*RoundTrips)(nil)
	_ pgx.ConnectTracer  = (*RoundTrips)(nil)
)

// Trace installs r on a pool configuration: as its connections' tracer,
// and as its liveness rule (pgxpool's default: ping a connection idle for
// more than a second as it is acquired), counting the pings.
func (r *RoundTrips) Trace(cfg *pgxpool.Config) {
	cfg.ConnConfig.Tracer = r
	cfg.ShouldPing = r.shouldPing
}

// Total is the round trips counted so far, connections aside.
func (r *RoundTrips) Total() int64 {
	return r.statements.Load() + r.batches.Load() + r.copies.Load() + r.prepares.Load() + r.pings.Load()
}

// Prepares is the statement preparations that reached the server.
func (r *RoundTrips) Prepares() int64 { return r.prepares.Load() }

// Connects is the connections opened.
func (r *RoundTrips) Connects() int64 { return r.connects.Load() }

// Record turns recording on (clearing what was kept) or off, and returns
// what was kept.
func (r *RoundTrips) Record(on bool) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := r.seen
	r.recording, r.seen = on, nil
	return seen
}

func (r *RoundTrips) note(kind, sql string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.recording {
		return
	}
	sql = strings.Join(strings.Fields(sql), " ")
	if len(sql) > 70 {
		sql = sql[:70] + "…"
	}
	r.seen = append(r.seen, kind+": "+sql)
}

func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.statements.Add(1)
	r.note("query", d.SQL)
	return ctx
}

func (*RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	r.note("batch", "")
	return ctx
}

func (*RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (*RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *RoundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.copies.Add(1)
	r.note("copy", "")
	return ctx
}

func (*RoundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (*RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

// TracePrepareEnd counts a preparation only when it went to the server: pgx
// also reports one it found already prepared on the connection.
func (r *RoundTrips) TracePrepareEnd(_ context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		r.prepares.Add(1)
		r.note("prepare", "")
	}
}

func (*RoundTrips) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return ctx
}

func (r *RoundTrips) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) { r.connects.Add(1) }

func (r *RoundTrips) shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	if p.IdleDuration > time.Second {
		r.pings.Add(1)
		r.note("ping", "")
		return true
	}
	return false
}
