package sqlite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := newWriteGate(20 * time.Millisecond)
	leave, err := g.enter(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Held: a second writer gives up after the timeout, or when its context ends.
	if _, err := g.enter(ctx); err == nil || !strings.Contains(err.Error(), "BusyTimeout") {
		t.Errorf("enter while held = %v, want the BusyTimeout error", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.enter(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("enter with a cancelled context = %v, want context.Canceled", err)
	}

	// Given back, the next writer gets it; and it excludes: many writers
	// incrementing a plain counter under the gate lose no update (the race
	// detector also watches this).
	leave()
	g = newWriteGate(time.Minute)
	var (
		wg      sync.WaitGroup
		counter int
	)
	for range 50 {
		wg.Go(func() {
			leave, err := g.enter(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer leave()
			counter++
		})
	}
	wg.Wait()
	if counter != 50 {
		t.Errorf("counter = %d, want 50", counter)
	}
}
