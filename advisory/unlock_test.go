package advisory

import (
	"context"
	"strings"
	"testing"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// TestUnlockNotHeldDestroysConnection drives the path a transaction-mode
// pooler would take: the session asked to unlock does not hold the lock. The
// connection must not return to the pool, where a lock possibly held by it
// would outlive the call.
func TestUnlockNotHeldDestroysConnection(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pc := conn.Conn()

	err = unlock(context.Background(), conn, "never-taken", Key("never-taken"))
	if err == nil || !strings.Contains(err.Error(), "was not held") {
		t.Errorf("unlock = %v, want a not-held error", err)
	}
	if !pc.IsClosed() {
		t.Error("connection still open; want it closed")
	}
	if n := pool.Stat().TotalConns(); n != 0 {
		t.Errorf("pool still counts %d connections; want the connection gone from it", n)
	}
}
