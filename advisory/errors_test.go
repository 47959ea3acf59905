package advisory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/advisory"
	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestDoRejectsBadArgumentsWithoutTouchingTheDatabase(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: any attempt to reach a database would
	// fail with a dial error instead of the validation error.
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	g := advisory.New(pool)
	ok := func(context.Context) error { t.Error("fn ran"); return nil }

	tests := []struct {
		name, lock string
		fn         func(context.Context) error
		want       string
	}{
		{"empty", "", ok, "advisory lock name must not be empty"},
		{"too long", strings.Repeat("x", store.MaxNameLength+1), ok, "at most 200 bytes, got 201"},
		{"NUL", "a\x00b", ok, "must not contain NUL"},
		{"invalid UTF-8", "a\xffb", ok, "valid UTF-8"},
		{"nil fn", "job", nil, "fn must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran, err := g.Do(context.Background(), tt.lock, tt.fn)
			if ran || !errors.Is(err, store.ErrInvalidArgument) {
				t.Fatalf("Do = (%v, %v), want (false, an ErrInvalidArgument)", ran, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "advisory: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it prefixed \"advisory: \" and containing %q", msg, tt.want)
			}
		})
	}
	if n := pool.Stat().TotalConns(); n != 0 {
		t.Errorf("pool opened %d connections", n)
	}
}

func TestDoZeroGuard(t *testing.T) {
	t.Parallel()
	var g advisory.Guard
	ran, err := g.Do(context.Background(), "job", func(context.Context) error { return nil })
	if ran || !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "New") {
		t.Errorf("Do on a zero Guard = (%v, %v), want an error pointing at New", ran, err)
	}
}

func TestDoClosedPool(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	pool.Close()
	ran, err := advisory.New(pool).Do(context.Background(), "job", func(context.Context) error {
		t.Error("fn ran")
		return nil
	})
	if ran || !errors.Is(err, store.ErrClosed) || !strings.Contains(err.Error(), "pool is closed") {
		t.Errorf("Do = (%v, %v), want (false, a store.ErrClosed saying the pool is closed)", ran, err)
	}
}

func TestDoCancelledContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran, err := advisory.New(pgtest.NewPool(t)).Do(ctx, "job", func(context.Context) error {
		t.Error("fn ran")
		return nil
	})
	if ran || !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "advisory: ") {
		t.Errorf("Do = (%v, %v), want (false, context.Canceled wrapped)", ran, err)
	}
}
