package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/store"
	"github.com/cronfence/cronfence/store/postgres"
)

// listener collects one store's notices.
type listener struct {
	ch      chan store.Notice
	markers int
}

// listen starts Listen on s until the test ends and waits for its first
// NoticeGap: from then on every committed notice reaches it.
func listen(t *testing.T, s *postgres.Store) *listener {
	t.Helper()
	l := &listener{ch: make(chan store.Notice, 10000)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Listen(ctx, func(n store.Notice) { l.ch <- n }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("Listen returned %v, want context.Canceled", err)
		}
	})
	if n := l.next(t); n.Kind != store.NoticeGap {
		t.Fatalf("first notice %+v, want a gap", n)
	}
	return l
}

func (l *listener) next(t *testing.T) store.Notice {
	t.Helper()
	select {
	case n := <-l.ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no notice within 10s")
		return store.Notice{}
	}
}

// noneBefore fails if a notice is waiting ahead of a marker published
// after it by s: notices arrive in commit order, so the marker's arrival
// first proves nothing came before it.
func (l *listener) noneBefore(t *testing.T, s *postgres.Store, what string) {
	t.Helper()
	l.markers++
	marker := fmt.Sprintf("marker-%d", l.markers)
	if _, err := s.ReplicaHeartbeat(ctx(t), store.Replica{Owner: marker, Host: "h", Timers: true}); err != nil {
		t.Fatal(err)
	}
	if n := l.next(t); n.Kind != store.NoticeAlive || n.Owner != marker {
		t.Fatalf("%s published %+v", what, n)
	}
}

// Every replica learns, with no statement of its own, which slots the
// others claimed, settled and ended, and which replicas live: what lets a
// replica that is not a slot's preferred skip its claim.
func TestNoticesTellClaimsEndsAndReplicas(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	l := listen(t, s)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Second).Truncate(time.Microsecond)
	claimAs := func(st *postgres.Store, owner string, at time.Time) store.SlotClaimResult {
		t.Helper()
		r, err := st.SlotClaim(ctx(t), store.SlotClaimParams{Job: "report", Slot: at, LeaseName: "job:report",
			Owner: owner, TTL: time.Hour, MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	want := func(kind store.NoticeKind, job string, at time.Time, owner string) {
		t.Helper()
		n := l.next(t)
		if n.Kind != kind || n.Job != job || !n.Slot.Equal(at) || n.Owner != owner {
			t.Fatalf("notice %+v, want kind %d job %q slot %s owner %q", n, kind, job, at, owner)
		}
	}

	won := claimAs(other, "replica-b", slot)
	if !won.Claimed {
		t.Fatalf("claim refused: %+v", won)
	}
	want(store.NoticeClaimed, "report", slot, "replica-b")

	// A claim refused because the slot runs: settled, by the refused.
	if r := claimAs(s, "replica-a", slot); r.Refusal != store.ClaimHeld {
		t.Fatalf("second claim %+v, want held", r)
	}
	want(store.NoticeSettled, "report", slot, "replica-a")

	// Not due: the claimer tries again; nothing is told.
	if r := claimAs(s, "replica-a", now.Add(time.Hour).Truncate(time.Microsecond)); r.Refusal != store.ClaimNotDue {
		t.Fatalf("claim of a future slot %+v, want not_due", r)
	}
	l.noneBefore(t, s, "a not_due refusal")

	if _, err := other.SlotFinish(ctx(t), store.SlotFinishParams{Job: "report", Slot: slot, LeaseName: "job:report",
		Owner: "replica-b", Generation: won.Lease.Generation, Status: store.SlotCompleted, Run: store.Run{Success: true}}); err != nil {
		t.Fatal(err)
	}
	want(store.NoticeEnded, "report", slot, "replica-b")

	// A slot recorded skipped, nobody to run it (passed over after a
	// stall): settled, by the recorder. One already recorded is not told
	// again: whoever recorded it told it.
	passed := slot.Add(-time.Minute)
	skip := store.SlotSkipParams{Job: "report", Slot: passed, LeaseName: "job:report", Owner: "replica-b", After: passed,
		Reason: store.SkipPassedOver}
	if runs, err := other.SlotSkip(ctx(t), []store.SlotSkipParams{skip}); err != nil || len(runs) != 1 {
		t.Fatalf("skip: %d runs, %v", len(runs), err)
	}
	want(store.NoticeSettled, "report", passed, "replica-b")
	if runs, err := s.SlotSkip(ctx(t), []store.SlotSkipParams{skip}); err != nil || len(runs) != 0 {
		t.Fatalf("the same skip again: %d runs, %v", len(runs), err)
	}
	l.noneBefore(t, s, "a skip of a slot already recorded")

	// A manual run (no slot) ends without a notice.
	lease, ok, err := s.LeaseAcquire(ctx(t), store.LeaseAcquireParams{Name: "job:report", Owner: "replica-a", TTL: time.Hour})
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.SlotFinish(ctx(t), store.SlotFinishParams{Job: "report", LeaseName: "job:report", Owner: "replica-a",
		Generation: lease.Generation, Status: store.SlotCompleted, Run: store.Run{Manual: true, Success: true}}); err != nil {
		t.Fatal(err)
	}
	l.noneBefore(t, s, "a manual run's finish")

	// An API-only replica (no timers) is no candidate for slots: its
	// heartbeat tells nothing. A removal tells, whoever it was.
	if _, err := other.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "api", Host: "h"}); err != nil {
		t.Fatal(err)
	}
	l.noneBefore(t, s, "an API-only heartbeat")
	if _, err := other.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "replica-b", Host: "h", Timers: true}); err != nil {
		t.Fatal(err)
	}
	want(store.NoticeAlive, "", time.Time{}, "replica-b")
	if err := other.ReplicaRemove(ctx(t), "replica-b"); err != nil {
		t.Fatal(err)
	}
	want(store.NoticeGone, "", time.Time{}, "replica-b")

	// The listener's session ends (a network cut, a restarted server):
	// it listens again, and says notices may have been missed.
	var terminated bool
	if err := other.Pool().QueryRow(ctx(t), `SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE query = $1`,
		"LISTEN "+`"`+postgres.NoticeChannel(schema)+`"`).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("terminating the listener: %v, %v", terminated, err)
	}
	if n := l.next(t); n.Kind != store.NoticeLost {
		t.Fatalf("notice after the listener's session ended: %+v, want lost", n)
	}
	if n := l.next(t); n.Kind != store.NoticeGap {
		t.Fatalf("notice once listening again: %+v, want a gap", n)
	}
	if _, err := other.ReplicaHeartbeat(ctx(t), store.Replica{Owner: "replica-c", Host: "h", Timers: true}); err != nil {
		t.Fatal(err)
	}
	want(store.NoticeAlive, "", time.Time{}, "replica-c")
}

// A batch of thousands of claims, with the longest names and names a
// payload line must escape, is told whole: split under the payload's
// 8000-byte limit, never failing the claim.
func TestNoticesOfALargeBatchArriveWhole(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	l := listen(t, s)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Second).Truncate(time.Microsecond)
	const n = 3000
	long := strings.Repeat("\x01", store.MaxNameLength-8) // escaped as \u0001: six bytes each
	items := make([]store.SlotClaimParams, n)
	names := map[string]bool{}
	for i := range items {
		name := fmt.Sprintf("%s\n%06d", long, i)
		if i%2 == 0 {
			name = fmt.Sprintf("job-%d", i)
		}
		names[name] = true
		items[i] = store.SlotClaimParams{Job: name, Slot: slot, LeaseName: "job:" + fmt.Sprint(i),
			Owner: strings.Repeat("\x02", store.MaxNameLength), TTL: time.Hour, MaxAttempts: 1}
	}
	res, err := s.SlotClaimBatch(ctx(t), items)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Claimed {
			t.Fatalf("item %d refused: %+v", i, r)
		}
	}
	for range n {
		got := l.next(t)
		if got.Kind != store.NoticeClaimed || !names[got.Job] || !got.Slot.Equal(slot) {
			t.Fatalf("notice %+v: not one of the batch's claims", got)
		}
		delete(names, got.Job)
	}
	if len(names) != 0 {
		t.Fatalf("%d claims were not told", len(names))
	}
}

// A listener that starts (or starts again) while runs are in progress has
// not heard their claims: right after its gap it is told each running
// slot as claimed, so a replica that starts beside a running one watches
// that run and finds it at once if its owner dies, rather than at the
// next backstop scan.
func TestGapIsFollowedByTheRunsInProgress(t *testing.T) {
	t.Parallel()
	s, schema := newStore(t)
	other := openOn(t, schema)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	slot := now.Add(-time.Second).Truncate(time.Microsecond)
	claim := func(job string) store.SlotClaimResult {
		t.Helper()
		r, err := other.SlotClaim(ctx(t), store.SlotClaimParams{Job: job, Slot: slot, LeaseName: "job:" + job,
			Owner: "replica-b", TTL: time.Hour, MaxAttempts: 1})
		if err != nil || !r.Claimed {
			t.Fatalf("claim of %s: %+v, %v", job, r, err)
		}
		return r
	}
	claim("running")
	ended := claim("ended")
	if _, err := other.SlotFinish(ctx(t), store.SlotFinishParams{Job: "ended", Slot: slot, LeaseName: "job:ended",
		Owner: "replica-b", Generation: ended.Lease.Generation, Status: store.SlotCompleted, Run: store.Run{Success: true}}); err != nil {
		t.Fatal(err)
	}
	l := listen(t, s) // past its gap
	if n := l.next(t); n.Kind != store.NoticeClaimed || n.Job != "running" || !n.Slot.Equal(slot) || n.Owner != "replica-b" {
		t.Fatalf("notice after the gap: %+v; want the running slot's claim", n)
	}
	l.noneBefore(t, s, "the gap (a slot that ended)")
}

// A backfill created is told to every replica, naming its job, so the one
// that registers the job takes it up at once; a second asked for while it
// runs is refused and told to nobody.
func TestNoticesTellBackfillsCreated(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	l := listen(t, s)
	now, err := s.Now(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	p := store.BackfillCreateParams{Job: `nightly "quoted"`, From: now.Add(-time.Hour), To: now, Total: 60, By: "ops"}
	if _, err := s.BackfillCreate(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	if n := l.next(t); n.Kind != store.NoticeBackfill || n.Job != p.Job {
		t.Fatalf("backfill created: told %+v, want NoticeBackfill of %q", n, p.Job)
	}
	var conflict *store.ConflictError
	if _, err := s.BackfillCreate(ctx(t), p); !errors.As(err, &conflict) {
		t.Fatalf("second backfill of the job: %v, want a conflict", err)
	}
	l.noneBefore(t, s, "a refused backfill")
}
