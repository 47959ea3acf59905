// Package webhook delivers cronfence alerts to an HTTP endpoint as JSON
// POSTs.
//
// A Sender is a cronfence.Observer that keeps only AlertEvents. Observe
// never waits on the network: it puts the alert on a bounded queue that one
// goroutine drains, one delivery at a time, in order. A full queue drops the
// alert (a log line and the Dropped count say so) rather than stall the
// scheduler goroutine that observed it. Each attempt has its own timeout;
// a failed attempt (network error, timeout, 408, 429 or 5xx) is retried
// with exponential backoff, any other 4xx is not. A receiver may see an
// alert twice (an attempt that timed out after the receiver acted on it):
// the delivery id, in the payload and the X-Cronfence-Delivery header,
// lets it ignore the repeat.
//
// An alert an operator acknowledged is not delivered again while it stays
// the same (the scheduler raises it once); when it changes, the scheduler
// raises it again, and it is delivered as "raised" under a delivery id of
// its own, with the acknowledgement that ended ("endedAck").
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/store"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds one delivery attempt.
	DefaultTimeout = 5 * time.Second
	// DefaultRetries is the retries after a failed first attempt that the
	// config file's webhook: section uses when it sets none.
	DefaultRetries = 3
	// DefaultBackoff is the wait before the first retry; it doubles for
	// each further one, up to MaxBackoff.
	DefaultBackoff = time.Second
	// MaxBackoff caps the wait between attempts.
	MaxBackoff = 30 * time.Second
	// DefaultQueueSize is how many alerts may wait for delivery.
	DefaultQueueSize = 256
	// maxResponseBytes is how much of a response is read (and kept for
	// the log line) before the connection is reused.
	maxResponseBytes = 4 << 10
)

// Config configures a Sender. URL is required.
type Config struct {
	// URL receives the POSTs: http:// or https://.
	URL string
	// Timeout bounds each attempt, connection to response headers and
	// body. Defaults to DefaultTimeout (5s).
	Timeout time.Duration
	// Retries is how many times a failed delivery is tried again. Zero
	// means none (the config file defaults to DefaultRetries).
	Retries int
	// Backoff is the wait before the first retry, doubled for each next
	// one up to MaxBackoff. Defaults to DefaultBackoff (1s).
	Backoff time.Duration
	// Headers are added to every request, e.g. Authorization. Defaults to
	// none.
	Headers map[string]string
	// QueueSize bounds the alerts waiting for delivery; beyond it new ones
	// are dropped. Defaults to DefaultQueueSize (256).
	QueueSize int
	// Replica names this replica in the payload. Defaults to
	// cronfence.OwnerID().
	Replica string
	// Logger receives delivery failures and drops. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// Client sends the requests. Defaults to a client of its own; the
	// per-attempt timeout applies either way.
	Client *http.Client
}

// Payload is the JSON body of one delivery.
type Payload struct {
	// DeliveryID is the same for every attempt of one delivery:
	// "alert-<id>-raised" or "alert-<id>-resolved", and for an alert
	// raised again because it changed since it was acknowledged,
	// "alert-<id>-raised-<when, Unix microseconds>".
	DeliveryID string `json:"deliveryId"`
	// State is "raised" or "resolved".
	State   string            `json:"state"`
	Kind    string            `json:"kind"`    // e.g. "deadline_missed"
	Subject string            `json:"subject"` // a job name or a replica owner, per kind
	Message string            `json:"message"`
	Details map[string]string `json:"details,omitempty"`
	AlertID int64             `json:"alertId"`
	// RaisedBy is the replica whose check raised the alert.
	RaisedBy   string     `json:"raisedBy"`
	RaisedAt   time.Time  `json:"raisedAt"`
	LastSeenAt time.Time  `json:"lastSeenAt"`
	ResolvedAt *time.Time `json:"resolvedAt,omitempty"`
	// Ack is the alert's acknowledgement, when it has one (a resolved
	// alert that was acknowledged).
	Ack *Ack `json:"ack,omitempty"`
	// EndedAck, on a "raised" delivery, is the acknowledgement the alert
	// had until it changed: it is raised again.
	EndedAck *Ack `json:"endedAck,omitempty"`
	// Replica is the replica sending this delivery (whose check changed
	// the alert's state).
	Replica string `json:"replica"`
	// ObservedAt is when this replica queued the delivery, by its clock.
	ObservedAt time.Time `json:"observedAt"`
}

// Ack is an operator's acknowledgement of an alert.
type Ack struct {
	By   string    `json:"by"`
	At   time.Time `json:"at"`
	Note string    `json:"note,omitempty"`
}

func ackOf(a store.AlertAck) *Ack {
	if a.IsZero() {
		return nil
	}
	return &Ack{By: a.By, At: a.At, Note: a.Note}
}

// Stats count deliveries since the Sender was made.
type Stats struct {
	Delivered uint64 // accepted by the receiver (2xx)
	Failed    uint64 // given up after the last attempt, or refused with a 4xx
	Dropped   uint64 // never sent: the queue was full or the Sender closed
	Retried   uint64 // attempts after the first
}

// Sender delivers alerts. It is safe for concurrent use.
type Sender struct {
	cfg   Config
	url   string
	log   *slog.Logger
	queue chan Payload

	ctx    context.Context // ends when Close gives up waiting
	cancel context.CancelFunc
	stop   chan struct{}
	done   chan struct{}
	// mu orders Observe against Close: once closed is set under the write
	// lock, no alert enters the queue that the goroutine would not drain.
	mu     sync.RWMutex
	closed bool

	delivered, failed, dropped, retried atomic.Uint64
}

var _ cronfence.Observer = (*Sender)(nil)

// New validates cfg and starts the Sender's delivery goroutine. Close it
// to stop.
func New(cfg Config) (*Sender, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		return nil, errors.New("webhook: URL is required")
	case err != nil:
		return nil, fmt.Errorf("webhook: URL: %w", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("webhook: URL must be http:// or https://, got scheme %q", u.Scheme)
	case u.Host == "":
		return nil, errors.New("webhook: URL has no host")
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("webhook: Timeout must not be negative, got %s", cfg.Timeout)
	case cfg.Retries < 0:
		return nil, fmt.Errorf("webhook: Retries must not be negative, got %d", cfg.Retries)
	case cfg.Backoff < 0:
		return nil, fmt.Errorf("webhook: Backoff must not be negative, got %s", cfg.Backoff)
	case cfg.QueueSize < 0:
		return nil, fmt.Errorf("webhook: QueueSize must not be negative, got %d", cfg.QueueSize)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.QueueSize == 0 {
		cfg.QueueSize = DefaultQueueSize
	}
	if cfg.Replica == "" {
		cfg.Replica = cronfence.OwnerID()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	s := &Sender{
		cfg: cfg, url: cfg.URL, queue: make(chan Payload, cfg.QueueSize),
		// The URL may carry a secret (a token in its path or query): logs
		// name the host only.
		log:  cfg.Logger.With("webhook", u.Scheme+"://"+u.Host),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.run()
	return s, nil
}

// Observe queues an AlertEvent for delivery and ignores every other event.
// It never blocks: when the queue is full the alert is dropped, logged and
// counted.
func (s *Sender) Observe(e cronfence.Event) {
	ae, ok := e.(cronfence.AlertEvent)
	if !ok {
		return
	}
	p := s.payload(ae)
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		s.drop(p, "the webhook sender is closed")
		return
	}
	select {
	case s.queue <- p:
	default:
		s.drop(p, "the delivery queue is full")
	}
}

func (s *Sender) drop(p Payload, why string) {
	s.dropped.Add(1)
	s.log.Warn("cronfence: alert dropped, not delivered to the webhook: "+why,
		"delivery", p.DeliveryID, "kind", p.Kind, "subject", p.Subject, "queue", s.cfg.QueueSize)
}

func (s *Sender) payload(e cronfence.AlertEvent) Payload {
	a := e.Alert
	state := "raised"
	if !e.Raised {
		state = "resolved"
	}
	p := Payload{
		DeliveryID: "alert-" + strconv.FormatInt(a.ID, 10) + "-" + state,
		State:      state, Kind: string(a.Kind), Subject: a.Subject, Message: a.Message, Details: a.Details,
		AlertID: a.ID, RaisedBy: a.RaisedBy, RaisedAt: a.RaisedAt, LastSeenAt: a.LastSeenAt,
		Ack: ackOf(a.Ack), EndedAck: ackOf(e.EndedAck),
		Replica: s.cfg.Replica, ObservedAt: time.Now().UTC(),
	}
	if p.EndedAck != nil {
		// Raised again: a delivery of its own, the refresh that changed
		// the alert (its LastSeenAt) telling it from the first.
		p.DeliveryID += "-" + strconv.FormatInt(a.LastSeenAt.UnixMicro(), 10)
	}
	if !a.ResolvedAt.IsZero() {
		t := a.ResolvedAt
		p.ResolvedAt = &t
	}
	return p
}

// Stats returns the delivery counts so far.
func (s *Sender) Stats() Stats {
	return Stats{Delivered: s.delivered.Load(), Failed: s.failed.Load(), Dropped: s.dropped.Load(), Retried: s.retried.Load()}
}

// Close stops accepting alerts and delivers those queued, until ctx ends;
// then it abandons the rest (counted as dropped) and returns ctx's error.
func (s *Sender) Close(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stop)
	}
	s.mu.Unlock()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		s.cancel()
		<-s.done
		return ctx.Err()
	}
}

func (s *Sender) run() {
	defer close(s.done)
	defer s.cancel()
	for {
		select {
		case p := <-s.queue:
			s.deliver(p)
		case <-s.stop:
			for {
				select {
				case p := <-s.queue:
					if s.ctx.Err() != nil {
						s.drop(p, "the webhook sender closed before delivering it")
						continue
					}
					s.deliver(p)
				default:
					return
				}
			}
		}
	}
}

// deliver tries p until it is accepted, refused for good, or out of
// attempts.
func (s *Sender) deliver(p Payload) {
	body, err := json.Marshal(p)
	if err != nil { // a map of strings and times always encodes
		s.failed.Add(1)
		s.log.Error("cronfence: could not encode an alert for the webhook", "delivery", p.DeliveryID, "error", err)
		return
	}
	wait := s.cfg.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := s.attempt(body, p.DeliveryID, attempt)
		if err == nil {
			s.delivered.Add(1)
			if attempt > 1 {
				s.log.Info("cronfence: alert delivered to the webhook after retries", "delivery", p.DeliveryID, "attempts", attempt)
			}
			return
		}
		if !retry || attempt > s.cfg.Retries {
			s.failed.Add(1)
			s.log.Error("cronfence: alert not delivered to the webhook", "delivery", p.DeliveryID,
				"kind", p.Kind, "subject", p.Subject, "attempts", attempt, "error", err)
			return
		}
		s.log.Warn("cronfence: webhook attempt failed; retrying", "delivery", p.DeliveryID,
			"attempt", attempt, "retry_in", wait, "error", err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			s.failed.Add(1)
			s.log.Error("cronfence: alert not delivered to the webhook: shutting down", "delivery", p.DeliveryID, "attempts", attempt)
			return
		}
		s.retried.Add(1)
		wait = min(wait*2, MaxBackoff)
	}
}

// attempt makes one POST. It reports whether a failure is worth retrying.
func (s *Sender) attempt(body []byte, delivery string, n int) (retry bool, err error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cronfence-webhook")
	for k, v := range s.cfg.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("X-Cronfence-Delivery", delivery)
	req.Header.Set("X-Cronfence-Attempt", strconv.Itoa(n))
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil && s.ctx.Err() == nil {
			return true, fmt.Errorf("no response within %s", s.cfg.Timeout)
		}
		return true, err
	}
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return false, nil
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return true, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(snippet))
	default:
		return false, fmt.Errorf("%s (not retried): %s", resp.Status, bytes.TrimSpace(snippet))
	}
}
