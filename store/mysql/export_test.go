package mysql

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
)

// OpenCounting is Open with every round trip of the store's connections
// counted: each statement sent (a query, several statements at once
// included), BEGIN, COMMIT and ROLLBACK, and each connection opened.
func OpenCounting(ctx context.Context, dsn string, cfg *Config) (*Store, *RoundTrips, error) {
	trips := &RoundTrips{}
	s, err := open(ctx, dsn, cfg, func(c driver.Connector) driver.Connector { return countingConnector{c, trips} })
	return s, trips, err
}

// RoundTrips counts round trips; it is a storetest.Counter.
type RoundTrips struct{ total, connects atomic.Int64 }

func (r *RoundTrips) Total() int64    { return r.total.Load() }
func (r *RoundTrips) Connects() int64 { return r.connects.Load() }

type countingConnector struct {
	driver.Connector
	trips *RoundTrips
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	c.trips.connects.Add(1)
	return &countingConn{inner: conn, trips: c.trips}, nil
}

// countingConn forwards to the driver's connection what database/sql
// calls on it, counting each call that is a round trip. With
// interpolateParams every query and exec is one.
type countingConn struct {
	inner driver.Conn
	trips *RoundTrips
}

func (c *countingConn) Prepare(query string) (driver.Stmt, error) {
	c.trips.total.Add(1)
	return c.inner.Prepare(query)
}

func (c *countingConn) Close() error { return c.inner.Close() }

func (c *countingConn) Begin() (driver.Tx, error) { //nolint:staticcheck // the interface's
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.trips.total.Add(1)
	tx, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return countingTx{tx, c.trips}, nil
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.trips.total.Add(1)
	return c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.trips.total.Add(1)
	return c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.inner.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.inner.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool { return c.inner.(driver.Validator).IsValid() }

type countingTx struct {
	inner driver.Tx
	trips *RoundTrips
}

func (t countingTx) Commit() error   { t.trips.total.Add(1); return t.inner.Commit() }
func (t countingTx) Rollback() error { t.trips.total.Add(1); return t.inner.Rollback() }
