package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// hostileNames are names an attacker or a careless operator might send.
// ok says whether the store must accept them (and give them back byte for
// byte) or refuse them with ErrInvalidArgument.
var hostileNames = []struct {
	label, name string
	ok          bool
}{
	{"quotes", `it's a "quoted" \name\`, true},
	{"sql", `'; DROP TABLE runs; --`, true},
	{"sql2", `x'); DELETE FROM leases; --`, true},
	{"dollar-quote", `$$; DROP SCHEMA public; $$`, true},
	{"newlines", "line1\nline2\r\nline3", true},
	{"rtl", "\u202Eevil\u202C\u200F", true},
	{"emoji", "⏰ backup 🚀👩‍👩‍👧", true},
	{"combining", "e\u0301\u0301\u0301 ç", true},
	{"dotdot", "../../etc/passwd", true},
	{"escaped-slash", "a%2Fb%00", true},
	{"like-wildcards", `%_\`, true},
	{"max-length", strings.Repeat("é", store.MaxNameLength/2), true},
	{"nul", "a\x00b", false},
	{"empty", "", false},
	{"invalid-utf8", "\xff\xfe", false},
	{"over-max", strings.Repeat("é", store.MaxNameLength/2) + "x", false},
	{"10KB", strings.Repeat("x", 10<<10), false},
}

// schemaTables lists the tables in schema.
func schemaTables(t *testing.T, s *postgres.Store, schema string) []string {
	t.Helper()
	rows, err := s.Pool().Query(ctx(t), `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// dumpSchema returns every row of every table in schema, as text, so a
// rejected call can be shown to have written nothing.
func dumpSchema(t *testing.T, s *postgres.Store, schema string) string {
	t.Helper()
	var out []string
	for _, table := range schemaTables(t, s, schema) {
		rows, err := s.Pool().Query(ctx(t), `SELECT r::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` r ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out = append(out, table+" "+l)
		}
	}
	return strings.Join(out, "\n")
}

// Every store call that takes a name either keeps a hostile name exactly
// or refuses it, naming the field, with nothing written.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileNames {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			c := ctx(t)
			s, schema := newStore(t)
			slot := time.Date(2026, 9, 25, 3, 0, 0, 0, time.UTC)
			refused := func(before, call, field string, err error) {
				t.Helper()
				if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
					t.Errorf("%s: got %v, want ErrInvalidArgument naming %q", call, err, field)
				}
				if after := dumpSchema(t, s, schema); after != before {
					t.Errorf("%s was refused but changed the tables:\nbefore:\n%s\nafter:\n%s", call, before, after)
				}
			}

			before := dumpSchema(t, s, schema)
			lease, acquired, err := s.LeaseAcquire(c, store.LeaseAcquireParams{Name: tc.name, Owner: tc.name, TTL: time.Minute})
			if !tc.ok {
				refused(before, "LeaseAcquire", "lease name", err)
			} else if err != nil || !acquired || lease.Name != tc.name || lease.Owner != tc.name {
				t.Errorf("LeaseAcquire: %+v %v %v", lease, acquired, err)
			} else if got, err := s.LeaseGet(c, tc.name); err != nil || got.Name != tc.name || got.Owner != tc.name {
				t.Errorf("LeaseGet: %q %q %v", got.Name, got.Owner, err)
			} else if ok, err := s.LeaseRelease(c, lease.Ref()); !ok || err != nil {
				t.Errorf("LeaseRelease: %v %v", ok, err)
			}

			before = dumpSchema(t, s, schema)
			claim, err := s.SlotClaim(c, store.SlotClaimParams{
				Job: tc.name, Slot: slot, LeaseName: tc.name, Owner: "owner-1", TTL: time.Minute, MaxAttempts: 1,
			})
			if !tc.ok {
				refused(before, "SlotClaim", "job", err)
			} else if err != nil || !claim.Claimed || claim.Slot.Job != tc.name || claim.Lease.Name != tc.name {
				t.Errorf("SlotClaim: %+v %v", claim, err)
			} else if got, err := s.SlotGet(c, tc.name, slot); err != nil || got.Job != tc.name || got.LeaseName != tc.name {
				t.Errorf("SlotGet: %q %q %v", got.Job, got.LeaseName, err)
			}

			before = dumpSchema(t, s, schema)
			off := false
			st, err := s.JobStateSet(c, store.JobStateSetParams{Job: tc.name, Enabled: &off, By: "ops", Note: tc.name})
			switch {
			case !tc.ok:
				refused(before, "JobStateSet", "job", err)
			case err != nil || st.Job != tc.name || st.Note != tc.name:
				t.Errorf("JobStateSet: %+v %v", st, err)
			default:
				states, err := s.JobStateList(c)
				if err != nil || len(states) != 1 || states[0].Job != tc.name || states[0].Note != tc.name {
					t.Errorf("JobStateList: %+v %v", states, err)
				}
			}

			before = dumpSchema(t, s, schema)
			run, err := s.RunInsert(c, store.Run{Job: tc.name, Slot: slot, Owner: "owner-1", Skipped: true, Success: true, Reason: "x"})
			switch {
			case !tc.ok:
				refused(before, "RunInsert", "job", err)
			case err != nil || run.Job != tc.name:
				t.Errorf("RunInsert: %+v %v", run, err)
			default:
				runs, err := s.RunList(c, store.RunListParams{Job: tc.name})
				if err != nil || len(runs) != 1 || runs[0].Job != tc.name || runs[0].ID != run.ID {
					t.Errorf("RunList: %+v %v", runs, err)
				}
			}
		})
	}
}

// A schema with any one of its tables dropped by hand is refused by
// SchemaVersion and Migrate, naming the table, instead of looking healthy
// and failing on every write.
func TestHostileMissingTable(t *testing.T) {
	t.Parallel()
	probe, probeSchema := newStore(t)
	var tables []string
	for _, table := range schemaTables(t, probe, probeSchema) {
		if table != "schema_migrations" {
			tables = append(tables, table)
		}
	}
	if len(tables) < 4 {
		t.Fatalf("Migrate created only %v", tables)
	}
	for _, table := range tables {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			c := ctx(t)
			s, schema := newStore(t)
			if _, err := s.Pool().Exec(c, `DROP TABLE `+pgx.Identifier{schema, table}.Sanitize()+` CASCADE`); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SchemaVersion(c); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("SchemaVersion: %v, want an error naming %s", err, table)
			}
			other := openOn(t, schema) // a fresh process, as `cronfence migrate` would be
			before := dumpSchema(t, s, schema)
			if err := other.Migrate(c); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("Migrate: %v, want an error naming the missing %s", err, table)
			}
			if after := dumpSchema(t, s, schema); after != before {
				t.Errorf("a refused Migrate changed the schema")
			}
		})
	}
}

// A schema migrated by a newer binary is refused by Migrate with
// ErrSchemaTooNew and left as it was; SchemaVersion reports both versions.
func TestHostileForeignSchemaVersion(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s, schema := newStore(t)
	if _, err := s.Pool().Exec(c, `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+` (version, name) VALUES (99, 'future')`); err != nil {
		t.Fatal(err)
	}
	other := openOn(t, schema)
	before := dumpSchema(t, s, schema)
	err := other.Migrate(c)
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 || !strings.Contains(err.Error(), "99") {
		t.Errorf("Migrate: %v, want ErrSchemaTooNew naming version 99", err)
	}
	if after := dumpSchema(t, s, schema); after != before {
		t.Errorf("a refused Migrate changed the schema")
	}
	db, bin, err := other.SchemaVersion(c)
	if err != nil || db != 99 || bin >= 99 {
		t.Errorf("SchemaVersion = %d, %d, %v", db, bin, err)
	}
}
