package cronfence

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
	"github.com/cronfence/cronfence/store/sqlite"
)

// hostileJobNames are job names an attacker or a careless operator might
// declare. ok says whether Register must accept them (and every interface
// give them back byte for byte) or refuse them naming the field.
var hostileJobNames = []struct {
	label, name string
	ok          bool
}{
	{"quotes", `it's a "quoted" \name\`, true},
	{"sql", `'; DROP TABLE runs; --`, true},
	{"newlines", "line1\nline2\r\n", true},
	{"rtl", "\u202Eevil\u202C\u200F", true},
	{"emoji", "⏰ backup 🚀👩‍👩‍👧", true},
	{"combining", "e\u0301\u0301\u0301", true},
	{"dotdot", "../../etc/passwd", true},
	{"escaped-slash", "a%2Fb", true},
	{"slash", "reports/daily", true},
	{"max-length", strings.Repeat("é", MaxJobNameLength/2), true},
	{"nul", "a\x00b", false},
	{"empty", "", false},
	{"invalid-utf8", "\xff\xfe", false},
	{"over-max", strings.Repeat("é", MaxJobNameLength/2) + "x", false},
	{"10KB", strings.Repeat("x", 10<<10), false},
}

// hostileStores opens a fresh, migrated store of each kind, and a way to
// run raw SQL on it (for breaking it on purpose).
var hostileStores = []struct {
	name string
	open func(t *testing.T) (store.Store, func(sql string) error)
}{
	{"sqlite", func(t *testing.T) (store.Store, func(string) error) {
		s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func(q string) error { _, err := s.DB().Exec(q); return err }
	}},
	{"postgres", func(t *testing.T) (store.Store, func(string) error) {
		pool, schema := pgtest.Schema(t)
		s, err := postgres.New(pool, &postgres.Config{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s, func(q string) error {
			_, err := pool.Exec(context.Background(), strings.ReplaceAll(q, "cronfence_", pgx.Identifier{schema}.Sanitize()+"."))
			return err
		}
	}},
}

// Register takes a hostile name exactly or refuses it naming the field;
// an accepted name comes back unchanged from Jobs, the handler's Run,
// Trigger, SetEnabled and the store's run rows.
func TestHostileJobNames(t *testing.T) {
	t.Parallel()
	for _, kind := range hostileStores {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st, _ := kind.open(t)
			seen := make(chan string, len(hostileJobNames))
			s, err := New(Config{Store: st, Logger: quiet, DisableTimers: true, Owner: "hostile-1", ShutdownGrace: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Stop(context.Background()) })
			for _, tc := range hostileJobNames {
				before := len(s.Jobs())
				err := s.Register(Job{Name: tc.name, Schedule: "@daily", Handler: func(ctx context.Context, run *Run) error {
					seen <- run.Job
					return nil
				}})
				if !tc.ok {
					if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "name") {
						t.Errorf("%s: Register: %v, want ErrInvalidArgument naming the name", tc.label, err)
					}
					if len(s.Jobs()) != before {
						t.Errorf("%s: a refused Register added a job", tc.label)
					}
					if _, err := s.Trigger(ctx, tc.name); !errors.Is(err, ErrUnknownJob) {
						t.Errorf("%s: Trigger of a refused name: %v, want ErrUnknownJob", tc.label, err)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s: Register: %v", tc.label, err)
					continue
				}
				found := false
				for _, info := range s.Jobs() {
					found = found || info.Job.Name == tc.name
				}
				if !found {
					t.Errorf("%s: Jobs() lacks the name", tc.label)
				}
				off := false
				js, err := s.SetEnabled(ctx, tc.name, &off, tc.name, tc.name)
				if err != nil || js.Job != tc.name || js.OverrideBy != tc.name || js.Note != tc.name {
					t.Errorf("%s: SetEnabled: %+v %v", tc.label, js, err)
				}
				if _, err := s.SetEnabled(ctx, tc.name, nil, "ops", ""); err != nil {
					t.Errorf("%s: SetEnabled(nil): %v", tc.label, err)
				}
				mr, err := s.Trigger(ctx, tc.name)
				if err != nil || mr.Job != tc.name {
					t.Errorf("%s: Trigger: %+v %v", tc.label, mr, err)
					continue
				}
				select {
				case got := <-seen:
					if got != tc.name {
						t.Errorf("%s: the handler's Run.Job is %q", tc.label, got)
					}
				case <-ctx.Done():
					t.Fatalf("%s: the manual run never started", tc.label)
				}
				for {
					runs, err := st.RunList(ctx, store.RunListParams{Job: tc.name})
					if err != nil {
						t.Fatal(err)
					}
					if len(runs) == 1 {
						if runs[0].Job != tc.name || !runs[0].Manual {
							t.Errorf("%s: run row %+v", tc.label, runs[0])
						}
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("%s: no run row", tc.label)
					}
					time.Sleep(time.Millisecond)
				}
			}
		})
	}
}

// Start refuses a database with a table dropped by hand or migrated by a
// newer binary, with an error saying which, promptly.
func TestHostileStartBrokenSchema(t *testing.T) {
	t.Parallel()
	for _, kind := range hostileStores {
		for _, tc := range []struct {
			name, breakSQL, want string
			is                   error
		}{
			{"missing table", `DROP TABLE cronfence_runs`, "runs", nil},
			{"foreign version", `INSERT INTO cronfence_schema_migrations (version, applied_at) VALUES (99, 0)`, "99", store.ErrSchemaTooNew},
		} {
			t.Run(kind.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				st, exec := kind.open(t)
				q := tc.breakSQL
				if kind.name == "postgres" {
					q = strings.ReplaceAll(q, "(version, applied_at) VALUES (99, 0)", "(version, name) VALUES (99, 'future')")
				}
				if err := exec(q); err != nil {
					t.Fatal(err)
				}
				s, err := New(Config{Store: st, Logger: quiet})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Register(Job{Name: "nightly", Schedule: "@daily", Handler: func(context.Context, *Run) error { return nil }}); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err = s.Start(ctx)
				if err == nil {
					_ = s.Stop(context.Background())
					t.Fatal("Start succeeded")
				}
				if ctx.Err() != nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
					t.Fatalf("Start: %v, want an error naming %q", err, tc.want)
				}
			})
		}
	}
}
