package cronfence

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/clock"
	"github.com/cronfence/cronfence/internal/peers"
	"github.com/cronfence/cronfence/internal/wait"
	"github.com/cronfence/cronfence/store"
)

// Preferred claims need a store that tells the replicas of each other's
// claims; SQLite does not, and every replica there claims every slot.
func needNotices(t *testing.T, c *cluster) {
	t.Helper()
	if c.kind != "postgres" {
		t.Skip("SQLite tells no notices: every replica claims every slot at once")
	}
}

// claimsSent counts the claims each replica sends, by their events.
type claimsSent struct {
	mu    sync.Mutex
	sent  map[string]int // owner → claims sent
	byJob map[string]int // job → claims sent, all replicas
}

func newClaimsSent() *claimsSent {
	return &claimsSent{sent: map[string]int{}, byJob: map[string]int{}}
}

func (cc *claimsSent) observer(owner string) Observer {
	return ObserverFunc(func(e Event) {
		if c, ok := e.(ClaimEvent); ok {
			cc.mu.Lock()
			cc.sent[owner]++
			cc.byJob[c.Job]++
			cc.mu.Unlock()
		}
	})
}

// hearEachOther waits until every replica counts every other as live.
func hearEachOther(t *testing.T, replicas ...*Scheduler) {
	t.Helper()
	wait.For(t, 10*time.Second, func() bool {
		for _, s := range replicas {
			if n := len(s.loop.peers.Alive()); n != len(replicas)-1 {
				return false
			}
		}
		return true
	}, func() string { return "the replicas did not hear each other's heartbeats" })
}

// heardSettled waits until every replica heard that each job's slot was
// settled.
func heardSettled(t *testing.T, slot time.Time, jobs []string, replicas ...*Scheduler) {
	t.Helper()
	wait.For(t, 10*time.Second, func() bool {
		for _, s := range replicas {
			for _, j := range jobs {
				if !s.loop.peers.Settled(j, slot) {
					return false
				}
			}
		}
		return true
	}, func() string { return "the replicas did not hear every claim" })
}

// startGhost records a replica "ghost" that heartbeats (so counts as
// live) and never claims.
func startGhost(t *testing.T, c *cluster) {
	t.Helper()
	if _, err := c.open(t).ReplicaHeartbeat(context.Background(), store.Replica{Owner: "ghost", Host: "h", Timers: true}); err != nil {
		t.Fatal(err)
	}
}

// hearsGhost waits until s counts the ghost replica as live.
func hearsGhost(t *testing.T, s *Scheduler) {
	t.Helper()
	wait.For(t, 10*time.Second, func() bool {
		return slices.Contains(s.loop.peers.Alive(), "ghost")
	}, func() string { return s.e.cfg.Owner + " did not hear the ghost replica" })
}

// besideGhost starts replica "b" beside the ghost replica, with one job
// every 10 s, whose next slot (within 10 s, the ghost's heartbeat still
// fresh) the ghost is preferred for; b runs it into l and counts its
// claims in cc, and hears the ghost.
func besideGhost(t *testing.T, c *cluster) (slot time.Time, job string, l *ledger, cc *claimsSent, b *Scheduler) {
	t.Helper()
	startGhost(t, c)
	slot = c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
	job = ghostsJob(slot)
	l, cc = newLedger(), newClaimsSent()
	b = c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: cc.observer("b")},
		Job{Name: job, Schedule: "*/10 * * * * *", Handler: l.handler(c.db)})
	hearsGhost(t, b)
	return slot, job, l, cc, b
}

// preferredOf is the replica the ranking prefers for the job's slot.
func preferredOf(job string, slot time.Time, owners ...string) string {
	best, bestScore := "", uint64(0)
	for _, o := range owners {
		if h := peers.Score(o, job, slot); best == "" || h > bestScore || (h == bestScore && o < best) {
			best, bestScore = o, h
		}
	}
	return best
}

// ghostsJob is the first of job-0, job-1, … whose slot the ghost replica
// is preferred for, beside replica "b".
func ghostsJob(slot time.Time) string {
	for i := 0; ; i++ {
		if name := fmt.Sprintf("job-%d", i); preferredOf(name, slot, "ghost", "b") == "ghost" {
			return name
		}
	}
}

// recordedPassedOver is the job's slots recorded skipped as passed over,
// newest first.
func recordedPassedOver(t *testing.T, st store.Store, job string) []time.Time {
	t.Helper()
	var passed []time.Time
	for _, r := range skipRuns(t, st, job) {
		if r.Reason == string(store.SkipPassedOver) {
			passed = append(passed, r.Slot)
		}
	}
	return passed
}

// startThreeReplicas starts three replicas with the same 30 jobs on
// schedule, their runs in l and their claims in cc, and waits until each
// counts the others as live.
func startThreeReplicas(t *testing.T, c *cluster, schedule string, l *ledger, cc *claimsSent) (names, owners []string, replicas []*Scheduler) {
	t.Helper()
	var jobs []Job
	for i := range 30 {
		name := fmt.Sprintf("job-%d", i)
		names = append(names, name)
		jobs = append(jobs, Job{Name: name, Schedule: schedule, Handler: l.handler(c.db)})
	}
	owners = []string{"replica-a", "replica-b", "replica-c"}
	for _, o := range owners {
		replicas = append(replicas, c.startWith(Config{Owner: o, Clock: offsetClock{c.db, 0}, Retention: -1, Observer: cc.observer(o)}, jobs...))
	}
	hearEachOther(t, replicas...)
	return names, owners, replicas
}

// With three replicas, each slot is claimed by one: its preferred replica,
// and only it. The others hear the claim and send nothing, so a slot costs
// one claim whatever the number of replicas, and the runs spread.
func TestEachSlotIsClaimedOnlyByItsPreferredReplica(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		l := newLedger()
		cc := newClaimsSent()
		names, owners, replicas := startThreeReplicas(t, c, "*/10 * * * * *", l, cc)
		// Within Alerts.ReplicaStale of the start-up heartbeats: every
		// replica still counts the others as live.
		slot := c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		c.advance(slot.Sub(c.db.Now()), time.Minute) // the preferred replicas claim and run
		heardSettled(t, slot, names, replicas...)
		c.advance(time.Second, 100*time.Millisecond) // past every fallback's grace

		l.mu.Lock()
		defer l.mu.Unlock()
		cc.mu.Lock()
		defer cc.mu.Unlock()
		won := map[string]int{}
		for _, name := range names {
			by := l.runs[name][slot]
			if len(by) != 1 {
				t.Fatalf("%s's slot ran on %v, want once", name, by)
			}
			if want := preferredOf(name, slot, owners...); by[0] != want {
				t.Errorf("%s's slot ran on %s, want its preferred replica %s", name, by[0], want)
			}
			won[by[0]]++
			if n := cc.byJob[name]; n != 1 {
				t.Errorf("%s's slot was claimed %d times, want once: a replica that heard the claim claimed anyway", name, n)
			}
		}
		for _, o := range owners {
			if won[o] == 0 {
				t.Errorf("%s ran none of 30 slots (%v): the runs do not spread", o, won)
			}
		}
		c.wantNeverDown()
	})
}

// A live-looking replica that does not claim (it died a moment ago, or
// hangs) costs the slots it is preferred for ClaimGrace, never the slot:
// the next replica claims once the grace passed without the claim told,
// and not before.
func TestSlotOfASilentPreferredReplicaRunsAfterTheGrace(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		slot, job, l, cc, _ := besideGhost(t, c)

		c.advance(slot.Sub(c.db.Now()), time.Minute)
		c.advance(DefaultClaimGrace-time.Millisecond, DefaultClaimGrace-time.Millisecond)
		cc.mu.Lock()
		early := cc.sent["b"]
		cc.mu.Unlock()
		if n := l.ran(job, slot); n != 0 || early != 0 {
			t.Fatalf("b ran the slot %d times (%d claims) before its preferred replica's grace passed", n, early)
		}
		c.advance(time.Millisecond, time.Millisecond)
		if n := l.ran(job, slot); n != 1 {
			t.Fatalf("the slot ran %d times once the grace passed, want once, by b", n)
		}
		c.wantNeverDown()
	})
}

// A preferred replica that stalled records the slots it passed over as
// skipped; a fallback waiting to claim one hears it and sends nothing.
// Before, the skip was not told: under overload, where every loop stalls,
// each fallback claimed the slots its preferred replica had passed over,
// refused skipped, one claim in eight of all the claims sent.
func TestAFallbackDropsASlotItsPreferredReplicaPassedOver(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		slot, job, l, cc, b := besideGhost(t, c)

		c.advance(slot.Sub(c.db.Now()), time.Minute)
		c.advance(DefaultClaimGrace/2, DefaultClaimGrace/2)
		if _, err := c.open(t).SlotSkip(context.Background(), []store.SlotSkipParams{{Job: job, Slot: slot, LeaseName: "job:" + job,
			Owner: "ghost", After: c.db.Now(), Reason: store.SkipPassedOver}}); err != nil {
			t.Fatal(err)
		}
		heardSettled(t, slot, []string{job}, b)
		c.advance(2*DefaultClaimGrace, DefaultClaimGrace/4)
		cc.mu.Lock()
		sent := cc.sent["b"]
		cc.mu.Unlock()
		if n := l.ran(job, slot); n != 0 || sent != 0 {
			t.Fatalf("b sent %d claims (the slot ran %d times) of a slot its preferred replica recorded passed over", sent, n)
		}
		c.wantNeverDown()
	})
}

// A replica that stops hearing the notices (its listening connection
// broke) does without them until it hears again: it claims every slot at
// once rather than wait for a claim it could not hear.
func TestAReplicaThatStopsHearingClaimsAtOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		startGhost(t, c)
		slot := c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		job := ghostsJob(slot)
		l := newLedger()
		b := c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1},
			Job{Name: job, Schedule: "*/10 * * * * *", Handler: l.handler(c.db)})
		wait.For(t, 10*time.Second, func() bool {
			return slices.Contains(b.loop.peers.Alive(), "ghost") && b.loop.peers.Hearing()
		}, func() string { return "b did not hear the ghost replica" })
		b.loop.peers.Heard(context.Background(), store.Notice{Kind: store.NoticeLost}) // as Listen says when its connection breaks

		c.advance(slot.Sub(c.db.Now()), time.Minute)
		if n := l.ran(job, slot); n != 1 {
			t.Fatalf("the slot ran %d times at its instant on a replica not hearing notices, want once, without waiting for the ghost", n)
		}
		c.wantNeverDown()
	})
}

// A fallback whose preferred replica's claim was not heard (here: the
// preferred never claims) comes due with the job's next slot, which this
// replica is preferred for. Both are claimed at that instant, the earlier
// first, in consecutive round trips: the fallback must not push the job's
// own slot back (it went to a retry 20 ms later, and behind notices that
// lag, slot after slot, so that a slot was still unclaimed when the test
// harness stopped, or found the lease taken by the late run and was
// skipped: TestEverySlotOnceAcrossThreeReplicas failed under load).
func TestAFallbackDoesNotHoldBackItsJobsNextSlot(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		startGhost(t, c)
		// A slot the ghost is preferred for, followed by one b is.
		first := c.db.Now().Truncate(time.Second).Add(2 * time.Second)
		for preferredOf("tick", first, "ghost", "b") != "ghost" || preferredOf("tick", first.Add(time.Second), "ghost", "b") != "b" {
			first = first.Add(time.Second)
		}
		if first.Sub(c.db.Now()) > 20*time.Second {
			t.Fatalf("no such pair of slots within 20 s (from %s)", first)
		}
		next := first.Add(time.Second)
		var mu sync.Mutex
		claimed := map[time.Time]int{}
		obs := ObserverFunc(func(e Event) {
			if ce, ok := e.(ClaimEvent); ok {
				mu.Lock()
				claimed[ce.Slot]++
				mu.Unlock()
			}
		})
		// ClaimGrace 1 s: the fallback of the ghost's slot falls due with
		// b's next one.
		b := c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1, ClaimGrace: time.Second, Observer: obs},
			Job{Name: "tick", Schedule: "* * * * * *", Handler: func(context.Context, *Run) error { return nil }})
		hearsGhost(t, b)

		c.advance(next.Sub(c.db.Now()), time.Second) // to next, and not a moment further
		mu.Lock()
		defer mu.Unlock()
		if claimed[first] != 1 || claimed[next] != 1 {
			t.Fatalf("by %s, b answered %d claims of the ghost's slot %s (its fallback) and %d of its own slot %s; want one each",
				next.Format(time.TimeOnly), claimed[first], first.Format(time.TimeOnly), claimed[next], next.Format(time.TimeOnly))
		}
	})
}

// A preferred replica whose claims of a slot's instant are still being
// told (under load, a replica claims thousands of slots in statements one
// after another) is not overtaken by a fallback once the grace passes: the
// fallback waits until that replica went ClaimGrace without a claim of
// the instant told, and only then claims. Before, every fallback claimed
// at the grace, and under load the replicas claimed a third more slots
// than they ran, each refused after a lock wait, slowing the preferred
// replica's claims further. A replica that goes quiet still costs its
// slots about ClaimGrace.
func TestAFallbackWaitsWhileItsPreferredReplicaClaimsTheInstant(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		slot, job, l, cc, b := besideGhost(t, c)
		st := c.open(t)
		// The ghost claims a slot of another job at the instant, as it
		// works through its share of the instant's slots; b hears it.
		ghostClaims := func(other string) {
			t.Helper()
			r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{Job: other, Slot: slot, LeaseName: "job:" + other,
				Owner: "ghost", TTL: time.Minute, MaxAttempts: 3, Now: c.db.Now()})
			if err != nil || !r.Claimed {
				t.Fatalf("the ghost's claim of %s: %+v, %v", other, r, err)
			}
			wait.For(t, 10*time.Second, func() bool {
				return b.loop.peers.Settled(other, slot)
			}, func() string { return "b did not hear the ghost's claim of " + other })
		}

		c.advance(slot.Sub(c.db.Now()), time.Minute)
		c.advance(DefaultClaimGrace/2, DefaultClaimGrace/2)
		ghostClaims("other-1")
		c.advance(DefaultClaimGrace/2+time.Millisecond, time.Millisecond) // b's fallback falls due
		c.advance(DefaultClaimGrace/4, DefaultClaimGrace/4)
		ghostClaims("other-2")
		c.advance(DefaultClaimGrace-time.Millisecond, DefaultClaimGrace/4)
		cc.mu.Lock()
		early := cc.sent["b"]
		cc.mu.Unlock()
		if n := l.ran(job, slot); n != 0 || early != 0 {
			t.Fatalf("b sent %d claims (the slot ran %d times) while the ghost's claims of the instant were still told", early, n)
		}
		c.advance(2*time.Millisecond, time.Millisecond) // ClaimGrace since the ghost's last claim
		if n := l.ran(job, slot); n != 1 {
			t.Fatalf("the slot ran %d times once the ghost went ClaimGrace without a claim, want once, by b", n)
		}
		c.wantNeverDown()
	})
}

// After a stall (every replica's loop woke up late: the host was starved
// or stopped), each job's latest slot is claimed by its preferred replica
// alone and runs once, and the slots passed over are recorded as such,
// not run. Before, a stalled replica judged preference by the slot its
// timer was armed for, then claimed the latest one: the preferred replica
// of the passed slot claimed the latest at once beside that slot's own
// preferred replica, and the fallbacks of the passed slot claimed it late,
// after its preferred replica had recorded it passed over (refused), or
// before (so it ran, late, and its lease made the job's latest slot an
// overlap). Under overload, where every loop is a second behind, those
// claims were two in five of all the claims sent.
func TestAfterAStallEachJobsLatestSlotIsClaimedByItsPreferredReplicaAlone(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		l := newLedger()
		cc := newClaimsSent()
		names, owners, replicas := startThreeReplicas(t, c, "*/5 * * * * *", l, cc)
		// Half a second before a slot, every loop sleeps through two
		// slots and wakes at a third: within Alerts.ReplicaStale of the
		// last heartbeats, so every replica counts the others as live.
		first := c.db.Now().Truncate(5 * time.Second).Add(5 * time.Second)
		if first.Sub(c.db.Now()) < time.Second {
			first = first.Add(5 * time.Second)
		}
		c.advance(first.Add(-500*time.Millisecond).Sub(c.db.Now()), time.Second)
		cc.mu.Lock()
		clear(cc.byJob)
		cc.mu.Unlock()
		latest := first.Add(10 * time.Second)
		c.advance(latest.Sub(c.db.Now()), time.Minute)
		c.advance(time.Second, 50*time.Millisecond) // past every fallback's grace

		st := c.open(t)
		l.mu.Lock()
		defer l.mu.Unlock()
		cc.mu.Lock()
		defer cc.mu.Unlock()
		for _, name := range names {
			by := l.runs[name][latest]
			if len(by) != 1 {
				t.Fatalf("%s's latest slot ran on %v, want once", name, by)
			}
			if want := preferredOf(name, latest, owners...); by[0] != want {
				t.Errorf("%s's latest slot ran on %s, want its preferred replica %s", name, by[0], want)
			}
			if n := cc.byJob[name]; n != 1 {
				t.Errorf("%s: %d claims after the stall, want one, its latest slot's by its preferred replica", name, n)
			}
			passed := recordedPassedOver(t, st, name)
			if len(passed) != 2 || !passed[0].Equal(first.Add(5*time.Second)) || !passed[1].Equal(first) {
				t.Errorf("%s's slots recorded passed over: %v; want %s and %s", name, passed,
					first.Add(5*time.Second).Format(time.TimeOnly), first.Format(time.TimeOnly))
			}
			for _, slot := range []time.Time{first, first.Add(5 * time.Second)} {
				if by := l.runs[name][slot]; len(by) != 0 {
					t.Errorf("%s's slot %s, passed over, ran on %v", name, slot.Format(time.TimeOnly), by)
				}
			}
		}
		// Nothing kept once each latest slot was claimed: the claimer
		// took its slots passed over, the fallbacks that heard the claim
		// dropped theirs.
		for _, s := range replicas {
			s.mu.Lock()
			kept := len(s.timers.passedOver)
			s.mu.Unlock()
			if kept != 0 {
				t.Errorf("%s still keeps the slots passed over before %d latest slots", s.e.cfg.Owner, kept)
			}
		}
		c.wantNeverDown()
	})
}

// A replica that woke late for its slots gives the preferred replica of
// the latest one ClaimGrace from when it woke, not from the slot: the
// preferred replica, late too, is only now claiming it. When that one
// stays silent (it died a moment ago), the fallback claims the latest slot
// after the grace, runs it, and records the slot passed over before it.
func TestAFallbackThatWokeLateGivesTheGraceFromWhenItWoke(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		needNotices(t, c)
		startGhost(t, c)
		// Both slots within Alerts.ReplicaStale of the ghost's heartbeat.
		first := c.db.Now().Truncate(10 * time.Second).Add(10 * time.Second)
		latest := first.Add(10 * time.Second)
		job := ghostsJob(latest)
		l := newLedger()
		cc := newClaimsSent()
		b := c.startWith(Config{Owner: "b", Clock: offsetClock{c.db, 0}, Retention: -1, Observer: cc.observer("b")},
			Job{Name: job, Schedule: "*/10 * * * * *", Handler: l.handler(c.db)})
		hearsGhost(t, b)
		c.advance(first.Add(-500*time.Millisecond).Sub(c.db.Now()), time.Second)

		woke := latest.Add(time.Second)
		c.advance(woke.Sub(c.db.Now()), time.Minute) // one wake-up, past first and latest
		c.advance(DefaultClaimGrace-time.Millisecond, time.Millisecond)
		cc.mu.Lock()
		early := cc.sent["b"]
		cc.mu.Unlock()
		if n := l.ran(job, latest); n != 0 || early != 0 {
			t.Fatalf("b sent %d claims (the latest slot ran %d times) within ClaimGrace of waking, before the preferred replica's grace", early, n)
		}
		c.advance(time.Millisecond, time.Millisecond)
		if n := l.ran(job, latest); n != 1 {
			t.Fatalf("the latest slot ran %d times once the grace passed, want once, by b", n)
		}
		if n := l.ran(job, first); n != 0 {
			t.Fatalf("the slot passed over ran %d times", n)
		}
		passed := recordedPassedOver(t, c.open(t), job)
		if len(passed) != 1 || !passed[0].Equal(first) {
			t.Fatalf("slots recorded passed over: %v; want %s, recorded by the fallback that ran the latest", passed, first.Format(time.TimeOnly))
		}
		c.wantNeverDown()
	})
}

// While the store is unreachable a replica probes it once a tick, not in a
// tight loop: the resume scan it skips meanwhile must not leave its loop
// sleeping for zero (the chaos suite saw 220,000 probes in 6 s, and the
// spinning replica starved its neighbours' lease renewals).
func TestStoreOutageDoesNotSpinTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		var down atomic.Bool
		var probes atomic.Int64
		open := c.open
		// On demand the store is cut off (claims and clock reads fail);
		// the clock probes the replica sends meanwhile are counted.
		c.open = func(t *testing.T) store.Store {
			st := intercept(open(t))
			st.before = func(call *call) {
				if down.Load() && (call.method == "Now" || call.method == "SlotClaimBatch") {
					if call.method == "Now" {
						probes.Add(1)
					}
					call.err = errCut
				}
			}
			return st
		}
		job := Job{Name: "tick", Schedule: "* * * * * *", Handler: nopHandler}
		c.start("replica", 0, job)
		c.advance(3*time.Second, time.Second)

		down.Store(true)
		c.advance(10*time.Second, time.Second)
		// One probe at the failed fire and at most a couple a tick after.
		if n := probes.Load(); n == 0 || n > 40 {
			t.Fatalf("%d clock probes during a 10 s outage; want a few a second, not a spin", n)
		}
		down.Store(false)
		c.advance(2*time.Second, time.Second)
	})
}

// exactClock is the cluster clock with the real clock's SleepExactly: a
// sleep moves the fake time on by its length, and is recorded.
type exactClock struct {
	*clock.Fake
	mu    sync.Mutex
	until []time.Time // where each exact sleep ended
}

func (e *exactClock) SleepExactly(d time.Duration) {
	e.Advance(d)
	e.mu.Lock()
	e.until = append(e.until, e.Now())
	e.mu.Unlock()
}

func (e *exactClock) sleptUntil(t time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, u := range e.until {
		if u.Equal(t) {
			return true
		}
	}
	return false
}

// TestLoopSleepsTheLastMomentsBeforeAFireExactly: a real timer wakes up to
// a millisecond late (the Go runtime waits for timers in whole
// milliseconds), and every claim of the slot with it. On a clock that can
// sleep exactly (clock.Real), the loop sets its timer clock.TimerSlack
// before the fire and sleeps the rest exactly; here a fake clock records
// that sleep, which must end on the slot's instant, where the slot then
// runs.
func TestLoopSleepsTheLastMomentsBeforeAFireExactly(t *testing.T) {
	// 300 ms past the second, so the wait for the fire (not MaxSleep's)
	// ends on the slot.
	start := time.Date(2026, 3, 1, 12, 0, 0, 300_000_000, time.UTC)
	eachStoreFrom(t, start, func(t *testing.T, c *cluster) {
		ec := &exactClock{Fake: c.db}
		l := newLedger()
		c.startWith(Config{Owner: "a", Clock: ec, Retention: -1, HeartbeatEvery: -1},
			Job{Name: "ten", Schedule: "*/10 * * * * *", Handler: l.handler(c.db)})
		slot := time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC)
		// To the timer's deadline, TimerSlack before the slot, and no
		// further: the loop's own sleep takes the clock the rest of the
		// way.
		c.advance(slot.Add(-clock.TimerSlack).Sub(c.db.Now()), time.Second)
		wait.For(t, 10*time.Second, func() bool { return l.ran("ten", slot) == 1 }, func() string {
			return "the slot did not run"
		})
		if !ec.sleptUntil(slot) {
			t.Fatalf("no exact sleep ended on the slot (%s); the loop's exact sleeps ended at %v", slot, ec.until)
		}
		l.wantNoneTwiceOrEarly(t)
	})
}

// The replica that prunes goes on firing while the prune runs: it used to
// prune on its loop and fire nothing until the prune ended (up to
// StoreTimeout, every PruneEvery).
func TestAPruneDoesNotHoldUpTheLoop(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		// The store's Prune waits at a gate: a prune of a large history
		// (an hour of thousands of runs a second is millions of rows).
		held := newGate()
		st := intercept(c.open(t))
		st.before = func(call *call) {
			if call.method == "Prune" {
				held.pass()
			}
		}
		start := c.db.Now()
		l := newLedger()
		s, err := New(Config{Store: st, Owner: "a", Logger: quiet, Clock: offsetClock{c.db, 0}, Retention: 24 * time.Hour,
			StoreTimeout: time.Hour}) // the held prune is not cut short: it ends when released
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Register(Job{Name: "secondly", Schedule: "* * * * * *", Handler: l.handler(c.db)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		defer func() {
			close(held.release)
			_ = s.Stop(context.Background())
		}()
		// The first tick comes at once, at 12:00:00 (the first resume pass
		// is due at start): it prunes.
		select {
		case <-held.entered:
		case <-time.After(30 * time.Second):
			t.Fatal("no prune started at the first tick")
		}
		// The clock moves only once the loop sleeps on its timer for
		// 12:00:01, beside the prune step's timeout (waitForTimers): moved
		// before, it left the slot waiting a second more, and the test
		// failed under -race.
		c.waitForTimers(2)
		c.db.Advance(time.Second) // fires 12:00:01
		slot := start.Add(time.Second)
		for deadline := time.Now().Add(30 * time.Second); l.ran("secondly", slot) == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("secondly's slot %s did not run while the prune was under way", slot.Format(time.TimeOnly))
			}
		}
	})
}

// A prune is not cut off at StoreTimeout, which bounds the loop's round
// trips: it runs beside the loop, and an hour of a busy cluster's history
// takes longer (a million slots and runs took 19 s on PostgreSQL on a
// 2-core machine). Cut off, it was rolled back whole, hour after hour, and
// the history grew without bound. It now runs in steps for as long as it
// holds its lease (TestAPruneRenewsItsLeaseAtEveryStep), with no deadline.
func TestAPruneIsNotCutOffAtTheStoreTimeout(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		// How long each Prune was given to finish: time.Until the
		// context's deadline; -1 for none.
		var mu sync.Mutex
		var left []time.Duration
		st := intercept(c.open(t))
		st.before = func(call *call) {
			if call.method != "Prune" {
				return
			}
			d := time.Duration(-1)
			if dl, ok := call.ctx.Deadline(); ok {
				d = time.Until(dl)
			}
			mu.Lock()
			left = append(left, d)
			mu.Unlock()
		}
		c.startWith(Config{Owner: "a", Clock: offsetClock{c.db, 0}, Retention: 24 * time.Hour, Store: st, StoreTimeout: time.Second},
			Job{Name: "daily", Schedule: "@daily", Handler: nopHandler})
		c.advance(time.Second, time.Second) // the first tick prunes
		mu.Lock()
		defer mu.Unlock()
		if len(left) != 1 || left[0] != -1 {
			t.Fatalf("the prunes had %v to finish; want one, with no deadline (-1), not StoreTimeout's 1s", left)
		}
	})
}

func TestRetentionPrunesOnOneReplicaKeepingTheLatestClaim(t *testing.T) {
	eachStore(t, func(t *testing.T, c *cluster) {
		st := c.open(t)
		day := 24 * time.Hour
		now := c.db.Now()
		writeDailyHistory(t, st, now)
		noop := func(context.Context, *Run) error { return nil }
		for _, name := range []string{"a", "b"} {
			c.startWith(Config{Owner: name, Clock: offsetClock{c.db, 0}, Retention: 7 * day},
				Job{Name: "daily", Schedule: "@daily", Handler: noop})
		}
		c.advance(time.Second, time.Second) // the first tick prunes, on one replica
		runs, err := st.RunList(context.Background(), store.RunListParams{Job: "daily"})
		if err != nil {
			t.Fatal(err)
		}
		// The runs 0.5 to 6.5 days old stay.
		if len(runs) != 7 {
			t.Fatalf("%d runs left after pruning, want the 7 younger than the retention", len(runs))
		}
		if _, err := st.SlotGet(context.Background(), "daily", now.Add(-10*day+12*time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a 10-day-old claim survived: %v", err)
		}
	})
}

// writeDailyHistory writes ten days of a daily job's history: "daily"
// claimed and ran a slot each day at noon, 9.5 to 0.5 days before now.
func writeDailyHistory(t *testing.T, st store.Store, now time.Time) {
	t.Helper()
	for age := 10; age >= 1; age-- {
		at := now.Add(-time.Duration(age)*24*time.Hour + 12*time.Hour)
		r, err := st.SlotClaim(context.Background(), store.SlotClaimParams{
			Job: "daily", Slot: at, LeaseName: "job:daily", Owner: "old", TTL: time.Minute, MaxAttempts: 1, Now: at,
		})
		if err != nil || !r.Claimed {
			t.Fatal(r, err)
		}
		if _, err := st.SlotFinish(context.Background(), store.SlotFinishParams{
			Job: "daily", Slot: at, LeaseName: r.Lease.Name, Owner: "old", Generation: r.Lease.Generation,
			Status: store.SlotCompleted, Now: at, Run: store.Run{Success: true, StartedAt: at},
		}); err != nil {
			t.Fatal(err)
		}
	}
}
