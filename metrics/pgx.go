package metrics

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// QueryTracer returns a pgx tracer that records every query's round trip,
// as the driver sees it (sent to last row read), as store_round_trip_seconds
// of the store operation that issued it (see InstrumentStore; "other" for
// queries outside one). Set it as the pool's ConnConfig.Tracer before the
// pool is built. A store call that needs two queries counts two round trips;
// a pipeline of statements sent together (a pgx batch: a statement behind
// the settings it runs with) counts one, sent to last result read.
func (c *Collector) QueryTracer() pgx.QueryTracer { return queryTracer{c} }

type queryTracer struct{ c *Collector }

type startKey struct{}

func (queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (t queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if start, ok := ctx.Value(startKey{}).(time.Time); ok {
		t.c.ObserveRoundTrip(opOf(ctx), time.Since(start))
	}
}

// The tracer is also a pgx.BatchTracer: without it a pipeline's round trip
// went uncounted.
var _ pgx.BatchTracer = queryTracer{}

func (queryTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return context.WithValue(ctx, startKey{}, time.Now())
}

func (queryTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (t queryTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	if start, ok := ctx.Value(startKey{}).(time.Time); ok {
		t.c.ObserveRoundTrip(opOf(ctx), time.Since(start))
	}
}
