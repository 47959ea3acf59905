package mysql

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

func TestParseDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in       string
		addr, db string
		user, pw string
		param    string // a parameter that must survive, "k=v"
	}{
		{in: "mysql://root@127.0.0.1/cron", addr: "127.0.0.1:3306", db: "cron", user: "root"},
		{in: "mysql://app:s%40cret@db.internal:3307/cron?tls=preferred", addr: "db.internal:3307", db: "cron", user: "app", pw: "s@cret", param: "tls=preferred"},
		{in: "mariadb://app:pw@[::1]:3306/cron", addr: "[::1]:3306", db: "cron", user: "app", pw: "pw"},
		{in: "app:pw@tcp(10.0.0.1:3306)/cron", addr: "10.0.0.1:3306", db: "cron", user: "app", pw: "pw"},
	} {
		cfg, err := parseDSN(tc.in)
		if err != nil {
			t.Errorf("parseDSN(%q): %v", tc.in, err)
			continue
		}
		if cfg.Addr != tc.addr || cfg.DBName != tc.db || cfg.User != tc.user || cfg.Passwd != tc.pw {
			t.Errorf("parseDSN(%q) = addr %q db %q user %q password %q; want %q %q %q %q", tc.in, cfg.Addr, cfg.DBName, cfg.User, cfg.Passwd, tc.addr, tc.db, tc.user, tc.pw)
		}
		if tc.param != "" && !strings.Contains(cfg.FormatDSN(), tc.param) {
			t.Errorf("parseDSN(%q) lost %s: %s", tc.in, tc.param, cfg.FormatDSN())
		}
	}
}

func TestParseDSNRefusesWhatNamesNoDatabase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, says string }{
		{"mysql://root@127.0.0.1", "must name one database"},
		{"mysql://root@127.0.0.1/", "must name one database"},
		{"mysql://root@127.0.0.1/a/b", "must name one database"},
		{"mysql:///cron", "names no host"},
		{"mysql://root:topsecret@127.0.0.1:notaport/cron", "does not parse"},
		{"root@tcp(127.0.0.1:3306)/", "names no database"},
	} {
		_, err := parseDSN(tc.in)
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("parseDSN(%q) = %v; want ErrInvalidArgument saying %q", tc.in, err, tc.says)
		}
		if err != nil && strings.Contains(err.Error(), "topsecret") {
			t.Errorf("parseDSN(%q) repeats the password: %v", tc.in, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  Config
		says string
	}{
		{Config{Prefix: "Cron_"}, "Prefix"},
		{Config{Prefix: "a-b"}, "Prefix"},
		{Config{Prefix: strings.Repeat("a", 33)}, "Prefix"},
		{Config{LockWait: 500 * time.Millisecond}, "LockWait"},
		{Config{LockWait: 1500 * time.Millisecond}, "LockWait"},
		{Config{LivenessCheckEvery: time.Microsecond}, "LivenessCheckEvery"},
		{Config{MaxConns: 1}, "MaxConns"},
		{Config{MaxConns: -3}, "MaxConns"},
	} {
		cfg := tc.cfg
		err := cfg.withDefaults().validate()
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("validate(%+v) = %v; want ErrInvalidArgument naming %s", tc.cfg, err, tc.says)
		}
	}
	if err := (*Config)(nil).withDefaults().validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

// TestPrefixesKeepInstallationsApart: two installations in one database,
// told apart by their prefixes, neither see nor touch each other's rows.
func TestPrefixesKeepInstallationsApart(t *testing.T) {
	t.Parallel()
	url := newDatabase(t)
	a := openStore(t, url, nil)
	b := openStore(t, url, &Config{Prefix: "other_"})
	for _, s := range []*Store{a, b} {
		if err := s.Migrate(bg()); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := a.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "a", TTL: time.Hour}); err != nil || !ok {
		t.Fatalf("acquire in a: %v, %v", ok, err)
	}
	l, ok, err := b.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "b", TTL: time.Hour})
	if err != nil || !ok || l.Generation != 1 {
		t.Fatalf("acquire of the same name in b = %+v, %v, %v; want its own generation 1", l, ok, err)
	}
	var tables int
	if err := a.DB().QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE 'other\_%'`).Scan(&tables); err != nil || tables == 0 {
		t.Fatalf("tables of prefix other_: %d, %v", tables, err)
	}
}

// TestOldSchemaRefused: a store on a database that was never migrated
// refuses its calls with a SchemaVersionError naming what to run.
func TestOldSchemaRefused(t *testing.T) {
	t.Parallel()
	s := openStore(t, newDatabase(t), nil)
	_, err := s.LeaseGet(bg(), "job:x")
	var sv *store.SchemaVersionError
	if !errors.As(err, &sv) || sv.Database != 0 {
		t.Fatalf("LeaseGet before Migrate = %v; want a SchemaVersionError at version 0", err)
	}
	if _, _, err := s.LeaseAcquire(bg(), store.LeaseAcquireParams{Name: "job:x", Owner: "a", TTL: time.Hour}); !errors.As(err, &sv) {
		t.Fatalf("LeaseAcquire before Migrate = %v; want a SchemaVersionError", err)
	}
}
