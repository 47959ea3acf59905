// Package wait is the tests' one way to wait for something outside the
// test's control to happen: a real process writing a file, a real database
// replaying WAL, a real HTTP receiver being called. It polls; it never
// stands in for time a test can inject (a test that waits on the
// scheduler's clock moves a fake clock instead).
package wait

import (
	"testing"
	"time"
)

// For polls cond until it returns true, first every millisecond, then
// less often, up to every 50 ms. Once timeout has passed with cond still
// false it fails t with what() (called then, so it can show the state it
// gave up on). cond may itself fail t, when what it waits for can no
// longer happen (the process it waits on exited, say).
func For(t testing.TB, timeout time.Duration, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s: %s", timeout, what())
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// Forever is For without a deadline of its own, for a wait the test's own
// deadline (go test -timeout) bounds, and where a deadline here would only
// guess at how slow the machine is.
const Forever = time.Duration(1<<63 - 1)
