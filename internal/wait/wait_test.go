package wait

import (
	"strings"
	"testing"
	"time"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	n := 0
	For(t, time.Minute, func() bool { n++; return n == 5 }, func() string { return "never" })
	if n != 5 {
		t.Fatalf("cond called %d times, want 5", n)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records and stops the
// goroutine, as the real one does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	for _, a := range args {
		if s, ok := a.(string); ok {
			f.msg += " " + s
		}
	}
	panic(f)
}

func TestForFailsWithWhatAfterTheTimeout(t *testing.T) {
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != rec {
				panic(r)
			}
		}()
		For(rec, 20*time.Millisecond, func() bool { return false }, func() string { return "the file was never written" })
	}()
	if !strings.Contains(rec.msg, "the file was never written") {
		t.Fatalf("failure message %q does not say what was waited for", rec.msg)
	}
}
