package sqlite

import (
	"context"
	"fmt"
	"time"
)

// writeGate lets one write of a Store at a time reach SQLite.
//
// SQLite already allows one writer per file; the gate only changes how the
// others wait. Waiting for SQLite's lock is polling (see lockwait.go), so
// under a burst (k jobs of one replica due at the same instant) writers
// would retry in no particular order and wake a little after the lock is
// free. Queued on a channel they are handed the turn at once and in arrival
// order, and only the head of the queue polls for the file's lock against
// other processes. Between Stores (processes) the lock and beginImmediate's
// polling decide; that is what two Stores on one file in a test exercise.
type writeGate struct {
	turn    chan struct{}
	timeout time.Duration
}

func newWriteGate(timeout time.Duration) writeGate {
	return writeGate{turn: make(chan struct{}, 1), timeout: timeout}
}

// enter waits for the turn, at most as long as SQLite would wait for its
// lock (BusyTimeout), and returns the function that gives it back.
func (g writeGate) enter(ctx context.Context) (leave func(), err error) {
	leave = func() { <-g.turn }
	select {
	case g.turn <- struct{}{}:
		return leave, nil
	default:
	}
	timer := time.NewTimer(g.timeout)
	defer timer.Stop()
	select {
	case g.turn <- struct{}{}:
		return leave, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timer.C:
		return nil, fmt.Errorf("waited BusyTimeout (%s) behind this Store's other writes", g.timeout)
	}
}
