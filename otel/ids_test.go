package otel_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"testing"
	"time"

	cfotel "github.com/cronfence/cronfence/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

var _ sdktrace.IDGenerator = cfotel.IDGenerator()

func TestIDs(t *testing.T) {
	slot := time.Date(2026, 9, 25, 0, 5, 0, 0, time.UTC)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip(err)
	}

	sum := sha256.Sum256([]byte("cronfence/trace\x00daily-close\x002026-09-25T00:05:00Z"))
	if got, want := cfotel.TraceID("daily-close", slot).String(), hex.EncodeToString(sum[:16]); got != want {
		t.Errorf("TraceID = %s, want %s", got, want)
	}
	sum = sha256.Sum256([]byte("cronfence/span\x00daily-close\x002026-09-25T00:05:00Z\x002"))
	if got, want := cfotel.SpanID("daily-close", slot, 2).String(), hex.EncodeToString(sum[:8]); got != want {
		t.Errorf("SpanID = %s, want %s", got, want)
	}

	// The same instant in another zone is the same slot.
	if cfotel.TraceID("j", slot) != cfotel.TraceID("j", slot.In(ny)) || cfotel.SpanID("j", slot, 1) != cfotel.SpanID("j", slot.In(ny), 1) {
		t.Error("IDs depend on the slot's zone")
	}
	// Any other job, slot or attempt differs.
	tids := map[trace.TraceID]bool{}
	sids := map[trace.SpanID]bool{}
	for _, job := range []string{"j", "k", "j\x00"} {
		for _, s := range []time.Time{slot, slot.Add(time.Nanosecond), slot.Add(time.Second)} {
			tids[cfotel.TraceID(job, s)] = true
			for attempt := range 4 {
				sids[cfotel.SpanID(job, s, attempt)] = true
			}
		}
	}
	if len(tids) != 9 || len(sids) != 36 {
		t.Errorf("%d trace IDs of 9, %d span IDs of 36 distinct", len(tids), len(sids))
	}
	for id := range tids {
		if !id.IsValid() {
			t.Errorf("invalid trace ID %s", id)
		}
	}

	tp := cfotel.Traceparent("daily-close", slot, 2)
	if !regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`).MatchString(tp) {
		t.Fatalf("Traceparent = %q", tp)
	}
	if want := "00-" + cfotel.TraceID("daily-close", slot).String() + "-" + cfotel.SpanID("daily-close", slot, 2).String() + "-01"; tp != want {
		t.Errorf("Traceparent = %q, want %q", tp, want)
	}
}

func TestIDGeneratorRandom(t *testing.T) {
	g := cfotel.IDGenerator()
	ctx := context.Background()
	t1, s1 := g.NewIDs(ctx)
	t2, s2 := g.NewIDs(ctx)
	s3 := g.NewSpanID(ctx, t1)
	if !t1.IsValid() || !s1.IsValid() || !s3.IsValid() || t1 == t2 || s1 == s2 || s1 == s3 {
		t.Errorf("not random: %s %s %s %s %s", t1, t2, s1, s2, s3)
	}
}
