// Package mytest gives tests a MySQL or MariaDB database of their own: the
// counterpart of pgtest for store/mysql. Under -short, a server that does
// not answer skips the test instead of failing it. The server is the machine's
// (CRONFENCE_TEST_MYSQL_URL, by default MariaDB on 127.0.0.1:3306 as root
// with no password, as this machine and CI run it); each test gets a new
// database on it, dropped at cleanup. Tests never stop or reconfigure the
// server.
package mytest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// ServerURL is the server the tests create their databases on, as a
// mysql:// URL naming a database the user may connect to: a user that may
// create and drop databases.
func ServerURL() string {
	if u := os.Getenv("CRONFENCE_TEST_MYSQL_URL"); u != "" {
		return u
	}
	return "mysql://root@127.0.0.1:3306/mysql"
}

// Database creates an empty database of the test's own on the server and
// returns its mysql:// URL; the database is dropped at cleanup.
func Database(t testing.TB) string {
	t.Helper()
	admin := Admin(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cf_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		if testing.Short() {
			// As pgtest does: a quick loop (make test-short) on a machine
			// without the server passes over the database tests.
			t.Skipf("-short: no MySQL or MariaDB to create a database on at %s: %v", redacted(ServerURL()), err)
		}
		t.Fatalf("create database %s on %s (set CRONFENCE_TEST_MYSQL_URL to the URL of a MySQL 8 or MariaDB 10.6+ server): %v", name, redacted(ServerURL()), err)
	}
	t.Cleanup(func() {
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// Admin is a pool on the server's URL, closed at cleanup.
func Admin(t testing.TB) *sql.DB {
	t.Helper()
	u, err := url.Parse(ServerURL())
	if err != nil {
		t.Fatalf("CRONFENCE_TEST_MYSQL_URL: %v", err)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
	if u.Port() == "" {
		cfg.Addr += ":3306"
	}
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// redacted is u without its password, for messages.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(an unparsable URL)"
	}
	return p.Redacted()
}
