package clock

import (
	"context"
	"testing"
	"time"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	late, early := f.NewTimer(2*time.Second), f.NewTimer(time.Second)
	f.Advance(999 * time.Millisecond)
	select {
	case <-early.C():
		t.Fatal("a timer fired before its deadline")
	default:
	}
	f.Advance(2 * time.Second)
	if got := <-early.C(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("early timer fired with %s", got)
	}
	if got := <-late.C(); !got.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("late timer fired with %s", got)
	}
	if f.Timers() != 0 {
		t.Fatalf("%d timers left after all fired", f.Timers())
	}
}

func TestFakeStopAndWait(t *testing.T) {
	f := NewFake(time.Unix(0, 0))
	stopped := f.NewTimer(time.Second)
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop should report true once, then false")
	}
	done := make(chan error, 1)
	go func() { done <- f.WaitForTimers(context.Background(), 1) }()
	f.NewTimer(time.Minute)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.WaitForTimers(ctx, 5); err == nil {
		t.Fatal("WaitForTimers ignored a cancelled context")
	}
	if c := f.NewTimer(0).C(); len(c) != 1 {
		t.Fatal("a zero-duration timer did not fire at once")
	}
}
