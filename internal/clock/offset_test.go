package clock

import (
	"testing"
	"time"
)

func TestOffsetShiftsReadingsNotTimers(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := NewFake(start)
	behind := Offset{Base: base, By: -3 * time.Minute}
	if got, want := behind.Now(), start.Add(-3*time.Minute); !got.Equal(want) {
		t.Fatalf("Now() = %s, want %s", got, want)
	}
	timer := behind.NewTimer(time.Second)
	base.Advance(999 * time.Millisecond)
	select {
	case <-timer.C():
		t.Fatal("the timer fired before its duration passed on the base clock")
	default:
	}
	base.Advance(time.Millisecond)
	if got := <-timer.C(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("timer fired with %s, want the base clock's %s", got, start.Add(time.Second))
	}
	if got, want := behind.Now(), start.Add(time.Second-3*time.Minute); !got.Equal(want) {
		t.Fatalf("after Advance, Now() = %s, want %s", got, want)
	}
}

func TestOffsetNilBaseIsRealClock(t *testing.T) {
	ahead := Offset{By: time.Hour}
	before := time.Now()
	got := ahead.Now()
	after := time.Now()
	if got.Before(before.Add(time.Hour)) || got.After(after.Add(time.Hour)) {
		t.Fatalf("Now() = %s, want between %s and %s", got, before.Add(time.Hour), after.Add(time.Hour))
	}
	if got := <-ahead.NewTimer(time.Millisecond).C(); got.Before(before) {
		t.Fatalf("a real timer fired at %s, before it was made (%s)", got, before)
	}
}
