package advisory_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cronfence/cronfence/advisory"
	"github.com/cronfence/cronfence/internal/pgtest"
)

// keyTable was computed once, outside Go, with
// printf 'cronfence/advisory:NAME' | sha256sum (first 16 hex digits as a
// signed 64-bit integer). A change here breaks mutual exclusion between
// versions during a rolling upgrade.
var keyTable = []struct {
	name string
	key  int64
}{
	{"job", -6398023778586278367},
	{"nightly-report", -8288490305732056608},
	{"fechamento/2026-09-25/loja-42", 1226239530838417419},
	{"pied_poll", -2377994455797645060},
	{"pied_reconciliacao", -2260625999678138313},
	{"ção 日本", -2685229311626560598},
}

func TestKeyIsStable(t *testing.T) {
	t.Parallel()
	for _, tt := range keyTable {
		if got := advisory.Key(tt.name); got != tt.key {
			t.Errorf("Key(%q) = %d, want %d", tt.name, got, tt.key)
		}
	}
}

// TestKeyMatchesDocumentedSQL checks that the SQL in the package
// documentation, which operators use to find a lock's holder in pg_locks,
// computes the same keys.
func TestKeyMatchesDocumentedSQL(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	for _, tt := range keyTable {
		var got int64
		err := pool.QueryRow(context.Background(),
			`SELECT ('x' || encode(substr(sha256(convert_to('cronfence/advisory:' || $1, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint`,
			tt.name).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.key {
			t.Errorf("SQL key of %q = %d, want %d", tt.name, got, tt.key)
		}
	}
}

func TestKeyDistinctNamesDistinctKeys(t *testing.T) {
	t.Parallel()
	seen := make(map[int64]string)
	add := func(name string) {
		k := advisory.Key(name)
		if other, ok := seen[k]; ok {
			t.Fatalf("Key(%q) = Key(%q) = %d", name, other, k)
		}
		seen[k] = name
	}
	for _, tt := range keyTable {
		add(tt.name)
	}
	// Near neighbours: one character apart, a prefix of each other.
	for i := range 100_000 {
		add(fmt.Sprintf("job-%d", i))
	}
	add("jo")
	add("job ")
}
