package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
)

// hostileNames are names an attacker or a careless operator might send.
// ok says whether the store must accept them (and give them back byte for
// byte) or refuse them with ErrInvalidArgument.
var hostileNames = []struct {
	label, name string
	ok          bool
}{
	{"quotes", `it's a "quoted" \name\`, true},
	{"sql", `'; DROP TABLE cronfence_runs; --`, true},
	{"sql2", `x'); DELETE FROM cronfence_leases; --`, true},
	{"newlines", "line1\nline2\r\nline3", true},
	{"rtl", "\u202Eevil\u202C\u200F", true},
	{"emoji", "⏰ backup 🚀👩‍👩‍👧", true},
	{"combining", "e\u0301\u0301\u0301 ç", true},
	{"dotdot", "../../etc/passwd", true},
	{"escaped-slash", "a%2Fb%00", true},
	{"slash", "reports/daily", true},
	{"like-wildcards", `%_\`, true},
	{"max-length", strings.Repeat("é", store.MaxNameLength/2), true},
	{"nul", "a\x00b", false},
	{"empty", "", false},
	{"invalid-utf8", "\xff\xfe", false},
	{"over-max", strings.Repeat("é", store.MaxNameLength/2) + "x", false},
	{"10KB", strings.Repeat("x", 10<<10), false},
}

// dumpTables returns every row of every table in the file, as text, so a
// rejected call can be shown to have written nothing.
func dumpTables(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		rs, err := db.Query(`SELECT * FROM "` + n + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rs.Columns()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s %q", n, vals))
		}
		if err := rs.Close(); err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// wantRefused checks a refusal: ErrInvalidArgument, a message naming field,
// and no row changed.
func wantRefused(t *testing.T, db *sql.DB, before, call, field string, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
		t.Errorf("%s: got %v, want ErrInvalidArgument naming %q", call, err, field)
	}
	if after := dumpTables(t, db); after != before {
		t.Errorf("%s was refused but changed the tables:\nbefore:\n%s\nafter:\n%s", call, before, after)
	}
}

// Every store call that takes a name either keeps a hostile name exactly
// or refuses it, naming the field, with nothing written.
func TestHostileNames(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileNames {
		t.Run(tc.label, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := migrated(t)
			db := s.DB()
			slot := time.Date(2026, 9, 25, 3, 0, 0, 0, time.UTC)
			before := dumpTables(t, db)

			lease, acquired, err := s.LeaseAcquire(ctx, store.LeaseAcquireParams{Name: tc.name, Owner: tc.name, TTL: time.Minute})
			if !tc.ok {
				wantRefused(t, db, before, "LeaseAcquire", "lease name", err)
			} else if err != nil || !acquired || lease.Name != tc.name || lease.Owner != tc.name {
				t.Errorf("LeaseAcquire: %+v %v %v", lease, acquired, err)
			} else if got, err := s.LeaseGet(ctx, tc.name); err != nil || got.Name != tc.name || got.Owner != tc.name {
				t.Errorf("LeaseGet: %q %q %v", got.Name, got.Owner, err)
			} else if ok, err := s.LeaseRelease(ctx, lease.Ref()); !ok || err != nil {
				t.Errorf("LeaseRelease: %v %v", ok, err)
			}

			before = dumpTables(t, db)
			claim, err := s.SlotClaim(ctx, store.SlotClaimParams{
				Job: tc.name, Slot: slot, LeaseName: tc.name, Owner: "owner-1", TTL: time.Minute, MaxAttempts: 1,
			})
			if !tc.ok {
				wantRefused(t, db, before, "SlotClaim", "job", err)
			} else if err != nil || !claim.Claimed || claim.Slot.Job != tc.name || claim.Lease.Name != tc.name {
				t.Errorf("SlotClaim: %+v %v", claim, err)
			} else if got, err := s.SlotGet(ctx, tc.name, slot); err != nil || got.Job != tc.name || got.LeaseName != tc.name {
				t.Errorf("SlotGet: %q %q %v", got.Job, got.LeaseName, err)
			}

			before = dumpTables(t, db)
			off := false
			st, err := s.JobStateSet(ctx, store.JobStateSetParams{Job: tc.name, Enabled: &off, By: "ops", Note: tc.name})
			switch {
			case !tc.ok:
				wantRefused(t, db, before, "JobStateSet", "job", err)
			case err != nil || st.Job != tc.name || st.Note != tc.name:
				t.Errorf("JobStateSet: %+v %v", st, err)
			default:
				states, err := s.JobStateList(ctx)
				if err != nil || len(states) != 1 || states[0].Job != tc.name || states[0].Note != tc.name {
					t.Errorf("JobStateList: %+v %v", states, err)
				}
			}

			before = dumpTables(t, db)
			run, err := s.RunInsert(ctx, store.Run{Job: tc.name, Slot: slot, Owner: "owner-1", Skipped: true, Success: true, Reason: "x"})
			switch {
			case !tc.ok:
				wantRefused(t, db, before, "RunInsert", "job", err)
			case err != nil || run.Job != tc.name:
				t.Errorf("RunInsert: %+v %v", run, err)
			default:
				runs, err := s.RunList(ctx, store.RunListParams{Job: tc.name})
				if err != nil || len(runs) != 1 || runs[0].Job != tc.name || runs[0].ID != run.ID {
					t.Errorf("RunList: %+v %v", runs, err)
				}
			}
		})
	}
}

// The table list Migrate and SchemaVersion check is the list Migrate
// creates: a migration that adds a table without adding it there fails here.
func TestHostileTableListMatchesMigrations(t *testing.T) {
	t.Parallel()
	s, _ := migrated(t)
	rows, err := s.DB().Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'cronfence\_%' ESCAPE '\' AND name <> 'cronfence_schema_migrations' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		got = append(got, n)
	}
	want, err := tables(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(want)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Migrate creates %v, the checked list is %v", got, want)
	}
}

// A file with one of its tables dropped by hand is refused by
// SchemaVersion and Migrate, naming the table, instead of looking healthy
// and failing on every write.
func TestHostileMissingTable(t *testing.T) {
	t.Parallel()
	all, err := tables(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range all {
		t.Run(table, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, path := migrated(t)
			if _, err := s.DB().Exec(`DROP TABLE ` + table); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.SchemaVersion(ctx); err == nil || !strings.Contains(err.Error(), table) {
				t.Errorf("SchemaVersion: %v, want an error naming %s", err, table)
			}
			// A fresh process, as `cronfence migrate` would be.
			other := openStore(t, path, nil)
			before := dumpTables(t, other.DB())
			if err := other.Migrate(ctx); err == nil || !strings.Contains(err.Error(), table) || !strings.Contains(err.Error(), "missing") {
				t.Errorf("Migrate: %v, want an error naming the missing %s", err, table)
			}
			if after := dumpTables(t, other.DB()); after != before {
				t.Errorf("a refused Migrate changed the file")
			}
		})
	}
}

// A file migrated by a newer binary is refused by Migrate with
// ErrSchemaTooNew and left as it was; SchemaVersion reports both versions.
func TestHostileForeignSchemaVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, path := migrated(t)
	if _, err := s.DB().Exec(`INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (99, 0)`); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, path, nil)
	before := dumpTables(t, other.DB())
	err := other.Migrate(ctx)
	var sv *store.SchemaVersionError
	if !errors.Is(err, store.ErrSchemaTooNew) || !errors.As(err, &sv) || sv.Database != 99 || !strings.Contains(err.Error(), "99") {
		t.Errorf("Migrate: %v, want ErrSchemaTooNew naming version 99", err)
	}
	if after := dumpTables(t, other.DB()); after != before {
		t.Errorf("a refused Migrate changed the file")
	}
	db, bin, err := other.SchemaVersion(ctx)
	if err != nil || db != 99 || bin >= 99 {
		t.Errorf("SchemaVersion = %d, %d, %v", db, bin, err)
	}
}
