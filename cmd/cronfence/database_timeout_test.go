package main

// A command's timeout bounds everything it waits on the database for:
// connecting, the TLS negotiation, the startup and the queries (issue 37,
// item 7: check --timeout 3s took 60 s against a PostgreSQL that accepted
// connections and never answered). Each peer here is real: a TCP listener
// that accepts and says nothing, one that answers PostgreSQL's TLS request
// and then says nothing, and the machine's PostgreSQL and MariaDB with the
// test's tables locked, so they answer the startup and stall every query.

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/mytest"
	"github.com/cronfence/cronfence/internal/pgtest"
)

// silentPeer listens on a local port and accepts connections, never
// writing a byte, as a hung server or a half-open network look to a
// client; with answerTLS it first answers PostgreSQL's SSLRequest with
// 'N' (no TLS, go on in plain text), then says nothing more. It returns
// host:port; everything closes at cleanup.
func silentPeer(t *testing.T, answerTLS bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			if answerTLS {
				go func() {
					// The SSLRequest: length 8, code 80877103.
					if _, err := io.ReadFull(c, make([]byte, 8)); err == nil {
						_, _ = c.Write([]byte{'N'})
					}
				}()
			}
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return ln.Addr().String()
}

// lockedPostgres returns the flags of a migrated PostgreSQL schema of the
// test's own whose every table is held ACCESS EXCLUSIVE until cleanup:
// the server answers the startup, and every query on the tables waits.
func lockedPostgres(t *testing.T) []string {
	t.Helper()
	pool, schema := pgtest.Schema(t)
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	if code, out, errOut := runCLI(t, t.TempDir(), args(db, "migrate")...); code != 0 {
		t.Fatalf("migrate: exit %d stdout %q stderr %q", code, out, errOut)
	}
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	rows, err := tx.Query(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) FROM pg_tables WHERE schemaname = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if rows.Err() != nil || len(tables) == 0 {
		t.Fatalf("the tables of %s: %v (%d)", schema, rows.Err(), len(tables))
	}
	if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return db
}

// lockedMySQL is lockedPostgres on the machine's MySQL or MariaDB: a
// migrated database of the test's own whose tables a session holds with
// LOCK TABLES … WRITE until cleanup.
func lockedMySQL(t *testing.T) []string {
	t.Helper()
	url := mytest.Database(t)
	db := []string{"--database", url}
	if code, out, errOut := runCLI(t, t.TempDir(), args(db, "migrate")...); code != 0 {
		t.Fatalf("migrate: exit %d stdout %q stderr %q", code, out, errOut)
	}
	name := url[strings.LastIndex(url, "/")+1:]
	ctx := context.Background()
	conn, err := mytest.Admin(t).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.ExecContext(ctx, "UNLOCK TABLES")
		_ = conn.Close()
	})
	rows, err := conn.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", name)
	if err != nil {
		t.Fatal(err)
	}
	var locks []string
	for rows.Next() {
		var table string
		if err := rows.Scan(&table); err != nil {
			t.Fatal(err)
		}
		locks = append(locks, "`"+name+"`.`"+table+"` WRITE")
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil || len(locks) == 0 {
		t.Fatalf("the tables of %s: %v (%d)", name, err, len(locks))
	}
	if _, err := conn.ExecContext(ctx, "LOCK TABLES "+strings.Join(locks, ", ")); err != nil {
		t.Fatal(err)
	}
	return db
}

// check --timeout ends check with its "cannot tell" status and an error
// naming the timeout, whatever the database stalls on.
func TestCheckTimeoutBoundsEveryWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		db   func(t *testing.T) []string
	}{
		{"postgres accepts and never answers", func(t *testing.T) []string {
			return []string{"--database", "postgres://cronfence@" + silentPeer(t, false) + "/cronfence?sslmode=disable"}
		}},
		{"postgres never answers the TLS request", func(t *testing.T) []string {
			return []string{"--database", "postgres://cronfence@" + silentPeer(t, false) + "/cronfence?sslmode=require"}
		}},
		{"postgres stalls after the TLS negotiation", func(t *testing.T) []string {
			return []string{"--database", "postgres://cronfence@" + silentPeer(t, true) + "/cronfence"}
		}},
		{"postgres stalls every query", lockedPostgres},
		{"mysql accepts and never answers", func(t *testing.T) []string {
			return []string{"--database", "mysql://root@" + silentPeer(t, false) + "/cronfence"}
		}},
		{"mysql stalls every query", lockedMySQL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, t.TempDir(), args(tc.db(t), "check", "--timeout", "2s")...)
			// Generous: the bound is 2s; the defect took 60s.
			code := p.wait(t, 45*time.Second)
			if errOut := p.stderr.String(); code != checkUnknown || !strings.Contains(errOut, "cannot tell: no answer within --timeout 2s") {
				t.Fatalf("exit %d, stderr %q; want exit %d naming --timeout 2s", code, errOut, checkUnknown)
			}
		})
	}
}

// A command without --timeout gives up connecting after connectTimeout,
// and says so.
func TestConnectTimeoutBoundsOpening(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		db   func(t *testing.T) []string
	}{
		{"postgres accepts and never answers", func(t *testing.T) []string {
			return []string{"--database", "postgres://cronfence@" + silentPeer(t, false) + "/cronfence"}
		}},
		{"postgres stalls every query", lockedPostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := start(t, t.TempDir(), args(tc.db(t), "pause", "nightly")...)
			code := p.wait(t, 60*time.Second) // the bound is 15s; the defect took 75s, or forever
			want := "no answer within " + connectTimeout.String()
			if errOut := p.stderr.String(); code != exitFailure || !strings.Contains(errOut, want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and %q", code, errOut, exitFailure, want)
			}
		})
	}
}
