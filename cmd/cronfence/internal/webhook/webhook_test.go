package webhook_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/webhook"
	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/sqlite"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// receiver is a real HTTP endpoint; answer decides each request's fate
// from its 1-based number.
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []request
	seen   chan request
	answer func(n int, w http.ResponseWriter, r *http.Request)
}

type request struct {
	payload  webhook.Payload
	header   http.Header
	received time.Time
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{answer: answer, seen: make(chan request, 1000)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("receiver: bad JSON: %v", err)
		}
		req := request{payload: p, header: r.Header.Clone(), received: time.Now()}
		rc.mu.Lock()
		rc.got = append(rc.got, req)
		n := len(rc.got)
		rc.mu.Unlock()
		rc.seen <- req
		rc.answer(n, w, r)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]request(nil), rc.got...)
}

func newSender(t *testing.T, cfg webhook.Config) *webhook.Sender {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet
	}
	s, err := webhook.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.Close(ctx)
	})
	return s
}

var raisedAt = time.Date(2026, 3, 2, 2, 0, 5, 0, time.UTC)

func alert(id int64) store.Alert {
	return store.Alert{
		ID: id, Kind: store.AlertDeadlineMissed, Subject: "nightly-close",
		Message:  "slot 2026-03-01T00:05:00Z not completed by its deadline (2h)",
		Details:  map[string]string{"slot": "2026-03-01T00:05:00Z", "deadline": "2h0m0s"},
		RaisedBy: "host-a:12:abc", RaisedAt: raisedAt, LastSeenAt: raisedAt,
	}
}

// waitStats polls the sender's counts until cond holds.
func waitStats(t *testing.T, s *webhook.Sender, what string, cond func(webhook.Stats) bool) webhook.Stats {
	t.Helper()
	var st webhook.Stats
	wait.For(t, 10*time.Second, func() bool {
		st = s.Stats()
		return cond(st)
	}, func() string {
		return fmt.Sprintf("for %s; stats %+v", what, st)
	})
	return st
}

// A receiver that fails twice then accepts gets three attempts of one
// delivery, the same payload and delivery id each time, the configured
// headers, and the alert delivered once.
func TestFailsTwiceThenSucceeds(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= 2 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
		}
	})
	s := newSender(t, webhook.Config{URL: rc.srv.URL, Retries: 3, Backoff: 5 * time.Millisecond, Replica: "host-b:7:def",
		Headers: map[string]string{"Authorization": "Bearer s3cret"}})
	s.Observe(cronfence.RunEndEvent{Job: "ignored"}) // not an alert: nothing sent
	s.Observe(cronfence.AlertEvent{Alert: alert(42), Raised: true})
	st := waitStats(t, s, "the delivery", func(st webhook.Stats) bool { return st.Delivered == 1 })
	if st != (webhook.Stats{Delivered: 1, Retried: 2}) {
		t.Fatalf("stats = %+v, want 1 delivered after 2 retries", st)
	}
	got := rc.requests()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	want := webhook.Payload{
		DeliveryID: "alert-42-raised", State: "raised", Kind: "deadline_missed", Subject: "nightly-close",
		Message: alert(42).Message, Details: alert(42).Details, AlertID: 42, RaisedBy: "host-a:12:abc",
		RaisedAt: raisedAt, LastSeenAt: raisedAt, Replica: "host-b:7:def",
	}
	for i, r := range got {
		p := r.payload
		if p.ObservedAt.IsZero() {
			t.Errorf("attempt %d: observedAt missing", i+1)
		}
		p.ObservedAt = time.Time{}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("attempt %d payload (-want +got):\n%s", i+1, diff)
		}
		for k, v := range map[string]string{
			"Authorization": "Bearer s3cret", "Content-Type": "application/json",
			"X-Cronfence-Delivery": "alert-42-raised", "X-Cronfence-Attempt": string(rune('1' + i)),
		} {
			if h := r.header.Get(k); h != v {
				t.Errorf("attempt %d header %s = %q, want %q", i+1, k, h, v)
			}
		}
	}
	// Backoff doubles: 5ms, then 10ms.
	if gap := got[2].received.Sub(got[1].received); gap < 10*time.Millisecond {
		t.Errorf("second retry came %s after the first, want at least the doubled backoff 10ms", gap)
	}
}

// A receiver slower than the timeout has its attempt cut at the timeout,
// and the retry delivers.
func TestSlowReceiverTimesOutAndRetries(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			<-r.Context().Done() // slower than the sender waits
		}
	})
	s := newSender(t, webhook.Config{URL: rc.srv.URL, Timeout: timeout, Retries: 1, Backoff: time.Millisecond})
	start := time.Now()
	s.Observe(cronfence.AlertEvent{Alert: alert(7), Raised: false})
	st := waitStats(t, s, "the delivery", func(st webhook.Stats) bool { return st.Delivered+st.Failed == 1 })
	if st.Delivered != 1 || st.Retried != 1 {
		t.Fatalf("stats = %+v, want delivered on the retry", st)
	}
	if d := time.Since(start); d < timeout {
		t.Fatalf("delivered after %s, before the first attempt could have timed out", d)
	}
	got := rc.requests()
	if len(got) != 2 || got[1].payload.State != "resolved" || got[1].payload.DeliveryID != "alert-7-resolved" {
		t.Fatalf("requests = %+v; want two attempts of alert-7-resolved", got)
	}
}

// A 4xx other than 408 and 429 is the receiver refusing the payload: not
// retried.
func TestClientErrorIsNotRetried(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad token", http.StatusUnauthorized)
	})
	s := newSender(t, webhook.Config{URL: rc.srv.URL, Retries: 5, Backoff: time.Millisecond})
	s.Observe(cronfence.AlertEvent{Alert: alert(1), Raised: true})
	st := waitStats(t, s, "the failure", func(st webhook.Stats) bool { return st.Failed == 1 })
	if st.Retried != 0 || len(rc.requests()) != 1 {
		t.Fatalf("stats %+v after %d requests; want one attempt", st, len(rc.requests()))
	}
}

// A receiver that never answers: Observe still returns at once, the queue
// fills and the overflow is dropped and counted, and a real scheduler
// whose observer raises an alert on every run keeps running every slot.
func TestNeverAnsweringReceiverNeverBlocksScheduling(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	defer close(hang)
	const queue = 4
	s := newSender(t, webhook.Config{URL: rc.srv.URL, Timeout: time.Hour, Retries: 3, QueueSize: queue})
	s.Observe(cronfence.AlertEvent{Alert: alert(1), Raised: true})
	<-rc.seen // in flight, and stuck there

	// The scheduler's observer raises an alert on every run it sees, as an
	// absence check would, through the stuck sender.
	var runs atomic.Int32
	obs := cronfence.ObserverFunc(func(e cronfence.Event) {
		s.Observe(e)
		if end, ok := e.(cronfence.RunEndEvent); ok {
			s.Observe(cronfence.AlertEvent{Alert: alert(int64(100 + end.Slot.Minute())), Raised: true})
			runs.Add(1) // after the alert: the test reads the stats once it counts the last run
		}
	})
	fake := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "cronfence.db"), &sqlite.Config{NowFunc: fake.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	sched, err := cronfence.New(cronfence.Config{Store: st, Owner: "a", Logger: quiet, Clock: fake, Retention: -1, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if err := sched.Register(cronfence.Job{Name: "tick", Schedule: "* * * * *", Handler: func(context.Context, *cronfence.Run) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	if err := sched.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sched.Stop(context.Background()) }()
	const minutes = 10
	for i := 1; i <= minutes; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := fake.WaitForTimers(ctx, 1); err != nil {
			t.Fatal("the scheduler never slept")
		}
		cancel()
		fake.Advance(time.Minute)
		deadline := time.Now().Add(10 * time.Second)
		for runs.Load() < int32(i) {
			if time.Now().After(deadline) {
				t.Fatalf("minute %d: the scheduler stopped running (%d runs) behind a stuck webhook", i, runs.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
	stats := s.Stats()
	if want := uint64(minutes - queue); stats.Dropped != want || stats.Delivered != 0 {
		t.Fatalf("stats = %+v; want %d dropped (%d alerts, %d queued, 1 in flight) and none delivered", stats, want, minutes, queue)
	}
	// Observe stays immediate with the queue full.
	start := time.Now()
	for i := range 1000 {
		s.Observe(cronfence.AlertEvent{Alert: alert(int64(1000 + i)), Raised: true})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("1000 Observe calls on a full queue took %s", d)
	}
	if got := s.Stats().Dropped; got != stats.Dropped+1000 {
		t.Fatalf("dropped %d, want %d", got, stats.Dropped+1000)
	}
	// Close gives up at its context and counts what it abandoned.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Close(ctx); err == nil {
		t.Fatal("Close returned nil with deliveries stuck")
	}
}

// Close delivers what is queued before returning.
func TestCloseDeliversTheQueue(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	s, err := webhook.New(webhook.Config{URL: rc.srv.URL, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		s.Observe(cronfence.AlertEvent{Alert: alert(int64(i)), Raised: true})
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Delivered != 20 || len(rc.requests()) != 20 {
		t.Fatalf("after Close: %+v, %d requests; want all 20 delivered", st, len(rc.requests()))
	}
	// Delivered in order, one at a time.
	for i, r := range rc.requests() {
		if r.payload.AlertID != int64(i) {
			t.Fatalf("request %d carried alert %d", i, r.payload.AlertID)
		}
	}
	s.Observe(cronfence.AlertEvent{Alert: alert(99), Raised: true})
	if st := s.Stats(); st.Dropped != 1 {
		t.Fatalf("an alert after Close: %+v, want it dropped", st)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []webhook.Config{
		{},
		{URL: "ftp://example.com/hook"},
		{URL: "http:///path-only"},
		{URL: "http://example.com", Timeout: -time.Second},
		{URL: "http://example.com", Retries: -1},
		{URL: "http://example.com", QueueSize: -1},
	} {
		if s, err := webhook.New(cfg); err == nil {
			_ = s.Close(context.Background())
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}

// 408 and 429 are the receiver asking to be tried later: retried, unlike
// other 4xx.
func TestTooManyRequestsAndRequestTimeoutAreRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []int{http.StatusRequestTimeout, http.StatusTooManyRequests} {
		rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
			if n == 1 {
				http.Error(w, "later", code)
			}
		})
		s := newSender(t, webhook.Config{URL: rc.srv.URL, Retries: 1, Backoff: time.Millisecond})
		s.Observe(cronfence.AlertEvent{Alert: alert(3), Raised: true})
		st := waitStats(t, s, "the delivery", func(st webhook.Stats) bool { return st.Delivered+st.Failed == 1 })
		if st != (webhook.Stats{Delivered: 1, Retried: 1}) || len(rc.requests()) != 2 {
			t.Errorf("%d then 200: stats %+v after %d requests; want delivered on the retry", code, st, len(rc.requests()))
		}
	}
}

// An alert raised again because it changed since it was acknowledged is a
// delivery of its own (a receiver that drops repeats by delivery id keeps
// it), "raised", naming the acknowledgement that ended; the resolve of an
// acknowledged alert carries its acknowledgement.
func TestRaisedAgainAfterItsAcknowledgementIsADeliveryOfItsOwn(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int, http.ResponseWriter, *http.Request) {})
	s := newSender(t, webhook.Config{URL: rc.srv.URL})
	ack := store.AlertAck{By: "ops", At: raisedAt.Add(time.Minute), Note: "known"}
	first := alert(9)
	changed := alert(9)
	changed.LastSeenAt = raisedAt.Add(5 * time.Minute)
	resolved := changed
	resolved.ResolvedAt, resolved.Ack = raisedAt.Add(9*time.Minute), ack
	s.Observe(cronfence.AlertEvent{Alert: first, Raised: true})
	s.Observe(cronfence.AlertEvent{Alert: changed, Raised: true, EndedAck: ack})
	s.Observe(cronfence.AlertEvent{Alert: resolved})
	waitStats(t, s, "three deliveries", func(st webhook.Stats) bool { return st.Delivered == 3 })
	got := rc.requests()
	ids := map[string]bool{}
	for _, r := range got {
		ids[r.payload.DeliveryID] = true
	}
	if len(ids) != 3 {
		t.Fatalf("delivery ids %v, want three distinct", ids)
	}
	again := got[1].payload
	wantAck := &webhook.Ack{By: "ops", At: ack.At, Note: "known"}
	if again.State != "raised" || again.DeliveryID != fmt.Sprintf("alert-9-raised-%d", changed.LastSeenAt.UnixMicro()) ||
		!cmp.Equal(again.EndedAck, wantAck) || again.Ack != nil {
		t.Fatalf("raised again: %+v; want state raised, a delivery id of its own and the ended acknowledgement", again)
	}
	if p := got[0].payload; p.EndedAck != nil || p.Ack != nil {
		t.Fatalf("first raise carries %+v / %+v, want no acknowledgement", p.EndedAck, p.Ack)
	}
	if p := got[2].payload; p.State != "resolved" || !cmp.Equal(p.Ack, wantAck) || p.EndedAck != nil {
		t.Fatalf("resolve: %+v; want its acknowledgement", p)
	}
}
