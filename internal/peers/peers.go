// Package peers is what a replica hears of the others, on a store that
// tells every replica what the others did (store.Notices, PostgreSQL's
// LISTEN/NOTIFY), and the choices made from it: who claims a slot, who
// scans for dead runs, who runs the absence checks.
package peers

import (
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// Who claims, and who watches, on a store that tells every replica what
// the others did (store.Notices, PostgreSQL's LISTEN/NOTIFY):
//
//   - Each scheduled slot has a preferred replica: the first of the live
//     replicas ranked by a hash of (replica, job, slot) (rendezvous
//     hashing), so the runs of a slot spread evenly and every replica
//     agrees without a word. It claims at once. The second waits
//     Config.ClaimGrace for the claim to be told and claims only if it
//     was not; every other waits twice that. While a replica ranked
//     before it is still told claiming slots of that instant, a fallback
//     waits on, until that replica went ClaimGrace without one (at most
//     FallbackWaitMax past the slot). A replica that died or hangs costs a
//     slot that much delay, never the slot: every claim is still the
//     store's atomic statement.
//   - A run another replica started is watched by one replica (the first
//     by the same ranking, the run's owner left out); once it has gone on
//     for Config.ResumeEvery without its end told, the watcher scans for
//     dead runs every ResumeEvery until it is. A scan also follows every
//     gap in the notices, one replica scans every ResumeBackstopEvery
//     whatever it heard, and a replica watches its own runs that ended
//     leaving their slot running.
//   - One replica, the first for "monitor", runs the absence checks.
//
// Live replicas are those heard from within Alerts.ReplicaStale. Without
// notices, and while this replica does not hear them, it claims every slot
// at once and scans every ResumeEvery.

// ResumeBackstopEvery is how often one replica scans for dead runs
// whatever it heard: notices are a saving, never a guarantee.
const ResumeBackstopEvery = 30 * time.Second

// SettledKeep is how long a slot told as settled is remembered, from the
// last notice of its instant: longer than any fallback waits
// (FallbackWaitMax) plus a late notice.
const SettledKeep = 10 * time.Second

// FallbackWaitMax bounds how long past its slot a fallback waits for a
// replica ranked before it that is still told claiming the slot's
// instant; past it, the fallback claims (at worst refused).
const FallbackWaitMax = 5 * time.Second

// Peers is what this replica heard of the others, and the choices made
// from it. Set its exported fields before Start.
type Peers struct {
	*service.Base
	// Listen: this replica fires and prefers claims (Config.ClaimGrace
	// not negative), so it listens when the store tells.
	Listen       bool
	ClaimGrace   time.Duration // how long a fallback waits for the preferred replica's claim
	ResumeEvery  time.Duration // how long a run goes on before its watcher scans
	ReplicaStale time.Duration // a replica not heard from for this long is not live
	// Registered reports whether this replica registers the job: it
	// watches only the runs of its own jobs.
	Registered func(job string) bool
	// ScheduleChanged, when set, is told of a stored schedule's change
	// (its sequence number), and with 0 when changes may have been missed
	// (a gap in the notices).
	ScheduleChanged func(seq int64)
	// BackfillCreated, when set, is told of a backfill created, with its
	// job's name, and with "" when some may have been missed (a gap in
	// the notices).
	BackfillCreated func(job string)

	mu       sync.Mutex
	on       bool                      // the store tells and this replica listens
	hearing  bool                      // listening now: between a gap and the connection's loss
	alive    map[string]time.Time      // other replicas with timers, by when last heard
	settled  settledSlots              // slots told settled
	claiming map[claimingKey]time.Time // other replicas' claims told, by replica and slot instant
	watched  map[slotKey]watchedRun    // runs other replicas started that are not told ended
	rescan   bool                      // a scan is wanted: notices may have been missed, or the last found dead runs
	backstop time.Time                 // the next backstop scan
	prune    time.Time                 // the next time settled is pruned

	cancel context.CancelFunc
	done   chan struct{}
}

// claimingKey is a replica's claims of one slot instant, whatever the job.
type claimingKey struct {
	owner string
	slot  int64 // UnixNano
}

type watchedRun struct {
	owner  string
	since  time.Time
	always bool // this replica's own run, left to resume: watched here, whatever the ranking
}

// Start listens for the store's notices when it tells them and this
// replica fires.
func (n *Peers) Start() {
	ns, ok := n.Store.(store.Notices)
	if !ok || !n.Listen {
		return
	}
	n.mu.Lock()
	n.on = true
	n.alive, n.settled, n.watched = map[string]time.Time{}, settledSlots{}, map[slotKey]watchedRun{}
	n.claiming = map[claimingKey]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	n.mu.Unlock()
	go func() {
		defer close(n.done)
		_ = ns.Listen(ctx, func(no store.Notice) { n.Heard(ctx, no) })
	}()
}

// Stop stops listening.
func (n *Peers) Stop() {
	n.mu.Lock()
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Heard takes one notice in (the store's Listen calls it).
func (n *Peers) Heard(ctx context.Context, no store.Notice) {
	now, own := n.Now(), n.Owner
	switch no.Kind {
	case store.NoticeGap:
		n.gap(ctx, now)
		n.scheduleChanged(0)
		if n.BackfillCreated != nil {
			n.BackfillCreated("")
		}
		return
	case store.NoticeSchedule:
		n.scheduleChanged(no.Seq)
		return
	case store.NoticeBackfill:
		if n.BackfillCreated != nil {
			n.BackfillCreated(no.Job)
		}
		return
	case store.NoticeLost:
		// Until the next gap, claim at once and scan every ResumeEvery:
		// what this replica does not hear it cannot wait for.
		n.mu.Lock()
		n.hearing = false
		n.mu.Unlock()
		return
	}
	mine := no.Kind == store.NoticeClaimed && n.Registered(no.Job)
	n.mu.Lock()
	defer n.mu.Unlock()
	key := keyOf(no.Job, no.Slot)
	switch no.Kind {
	case store.NoticeAlive:
		if no.Owner != own {
			n.alive[no.Owner] = now
		}
	case store.NoticeGone:
		delete(n.alive, no.Owner)
	case store.NoticeClaimed:
		n.settled.add(key, now)
		n.heardClaiming(no, now)
		// A resume's claim: the run before it is over (but for this
		// replica's own watch of its own run, told after it ended).
		if w, ok := n.watched[key]; ok && !(w.always && no.Owner == own) {
			delete(n.watched, key)
		}
		if no.Owner != own && mine {
			n.watched[key] = watchedRun{owner: no.Owner, since: now}
		}
	case store.NoticeSettled:
		n.settled.add(key, now)
		n.heardClaiming(no, now)
	case store.NoticeEnded:
		n.settled.add(key, now)
		// Only the run told: a deposed owner's late end must not end the
		// watch of the run that resumed its slot.
		if w, ok := n.watched[key]; ok && w.owner == no.Owner {
			delete(n.watched, key)
		}
	}
}

func (n *Peers) scheduleChanged(seq int64) {
	if n.ScheduleChanged != nil {
		n.ScheduleChanged(seq)
	}
}

// heardClaiming notes that another replica is claiming slots of no's
// instant. Callers hold n.mu.
func (n *Peers) heardClaiming(no store.Notice, now time.Time) {
	if no.Owner != "" {
		n.claiming[claimingKey{no.Owner, no.Slot.UnixNano()}] = now
	}
}

// gap forgets the runs watched (their ends may have gone unheard; the
// scan that follows finds the dead ones) and reads the live replicas from
// the registry, in one round trip.
func (n *Peers) gap(ctx context.Context, now time.Time) {
	ctx, cancel := n.Bounded(ctx)
	replicas, err := n.Store.ReplicaList(ctx)
	cancel()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hearing, n.rescan = true, true
	clear(n.watched)
	if err != nil {
		return // the heartbeats' notices fill it in
	}
	for _, r := range replicas {
		// HeartbeatAt is by the database clock, as now is.
		if r.Timers && r.Owner != n.Owner && now.Sub(r.HeartbeatAt) < n.ReplicaStale {
			n.alive[r.Owner] = r.HeartbeatAt
		}
	}
}

// rank is this replica's place, from 0, among the live replicas (itself
// included, except left out) ordered by the hash of (replica, key).
// Callers hold n.mu.
func (n *Peers) rank(key string, now time.Time, except string) int {
	own := n.Owner
	mine := rendezvous(own, key)
	r := 0
	for owner, heard := range n.alive {
		if now.Sub(heard) >= n.ReplicaStale {
			delete(n.alive, owner) // silent for too long: stopped, or cut off
			continue
		}
		if owner == except {
			continue
		}
		if h := rendezvous(owner, key); h > mine || (h == mine && owner < own) {
			r++
		}
	}
	return r
}

// claimingBefore is when the replicas ranked before this one for key, of
// those heard claiming slots of key's instant, will have gone ClaimGrace
// without a claim of it told: the fallback for key waits until then.
// Callers hold n.mu.
func (n *Peers) claimingBefore(key slotKey, now time.Time) time.Time {
	own := n.Owner
	rankKey := key.rankKey()
	mine := rendezvous(own, rankKey)
	var until time.Time
	for owner := range n.alive {
		heard, ok := n.claiming[claimingKey{owner, key.slot}]
		if !ok {
			continue
		}
		if h := rendezvous(owner, rankKey); h > mine || (h == mine && owner < own) {
			if t := heard.Add(n.ClaimGrace); t.After(until) {
				until = t
			}
		}
	}
	return until
}

func rendezvous(owner, key string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(owner))
	h.Write([]byte{0})
	h.Write([]byte(key))
	return h.Sum64()
}

// Due is a slot due to be claimed, as Prefer judges it.
type Due struct {
	Job       string
	Slot      time.Time
	Scheduled bool // its timer fired it for the first time (not a retry, catch-up or resume)
	Fallback  bool // a fallback put back by an earlier Prefer
}

// Choice is Prefer's answer for one slot: claim it now (the zero Choice),
// fire it again as a fallback at Later, or drop it (Told: another
// replica's claim of it was told).
type Choice struct {
	Later time.Time
	Told  bool
}

// Prefer chooses, for each due slot, whether this replica claims it now:
// a scheduled slot another replica is preferred for waits ClaimGrace
// (twice that past second place); a fallback whose slot was told settled
// is dropped; a fallback waits on while a replica ranked before it is told
// claiming the slot's instant. A nil answer claims every slot now, as
// without notices. pruned says the slots told long ago were forgotten: a
// caller may forget what it keeps of them too (SettledKeep).
func (n *Peers) Prefer(due []Due, now time.Time) (choices []Choice, pruned bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.on || !n.hearing {
		// Without notices, or not hearing them now: claim at once, what
		// this replica does not hear it cannot wait for.
		return nil, false
	}
	if !now.Before(n.prune) {
		n.settled.forget(now, SettledKeep)
		for k, heard := range n.claiming {
			if now.Sub(heard) > SettledKeep {
				delete(n.claiming, k)
			}
		}
		n.prune, pruned = now.Add(SettledKeep), true
	}
	choices = make([]Choice, len(due))
	for i, d := range due {
		key := keyOf(d.Job, d.Slot)
		switch {
		case d.Fallback:
			if n.settled.has(key) {
				choices[i].Told = true
			} else if until := n.claimingBefore(key, now); until.After(now) && now.Before(d.Slot.Add(FallbackWaitMax)) {
				choices[i].Later = until
			}
		case d.Scheduled:
			if r := n.rank(key.rankKey(), now, ""); r > 0 {
				// The grace runs from the slot, or from now when this loop
				// woke late for it: the preferred replica, late too, is
				// only now claiming it.
				at := d.Slot
				if now.After(at) {
					at = now
				}
				choices[i].Later = at.Add(n.ClaimGrace * time.Duration(min(r, 2)))
			}
		}
	}
	return choices, pruned
}

// RescanSoon asks for a resume scan at the next due time: the last found
// dead runs, which may still be there (a claim refused lease_busy).
func (n *Peers) RescanSoon() {
	n.mu.Lock()
	n.rescan = true
	n.mu.Unlock()
}

// WatchOwn watches one of this replica's own runs that ended without
// ending its slot: left running for a resume, or its end not recorded.
// Other replicas watch it too, but a replica alone has nobody else.
func (n *Peers) WatchOwn(job string, slot time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.on {
		n.watched[keyOf(job, slot)] = watchedRun{owner: n.Owner, since: n.Now().Add(-n.ResumeEvery), always: true}
	}
}

// ResumeWanted reports whether a resume scan due now has anything to
// find: a gap since the last, the backstop, or a watched run that went on
// for ResumeEvery. Without notices every due scan is wanted.
func (n *Peers) ResumeWanted(now time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.on || !n.hearing || n.rescan {
		n.rescan = false
		return true
	}
	if !now.Before(n.backstop) {
		n.backstop = now.Add(ResumeBackstopEvery)
		if n.rank("resume", now, "") == 0 {
			return true
		}
	}
	for key, w := range n.watched {
		if now.Sub(w.since) >= n.ResumeEvery && (w.always || n.rank(key.rankKey(), now, w.owner) == 0) {
			return true
		}
	}
	return false
}

// RunsChecks reports whether this replica is the one to run the absence
// checks: always without notices (the monitor lease decides), else the
// first live replica for "monitor".
func (n *Peers) RunsChecks() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.on || !n.hearing || n.rank("monitor", n.Now(), "") == 0
}

type slotKey struct {
	job  string
	slot int64 // UnixNano
}

func keyOf(job string, slot time.Time) slotKey { return slotKey{job, slot.UnixNano()} }

// rankKey is the slot as the ranking hashes it: the same text on every
// replica.
func (k slotKey) rankKey() string {
	return k.job + "\x00" + strconv.FormatInt(k.slot, 10)
}

// What this replica heard, as it stands: for the tests that watch it.

// Hearing reports whether this replica hears the notices now.
func (n *Peers) Hearing() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hearing
}

// Alive returns the other replicas heard from lately.
func (n *Peers) Alive() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	owners := make([]string, 0, len(n.alive))
	for o := range n.alive {
		owners = append(owners, o)
	}
	return owners
}

// Settled reports whether the job's slot was told settled.
func (n *Peers) Settled(job string, slot time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.settled.has(keyOf(job, slot))
}

// Watched reports whether this replica watches the run of the job's slot.
func (n *Peers) Watched(job string, slot time.Time) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.watched[keyOf(job, slot)]
	return ok
}

// Score is the rank of owner for the job's slot: the replica with the
// highest score is the slot's preferred.
func Score(owner, job string, slot time.Time) uint64 {
	return rendezvous(owner, keyOf(job, slot).rankKey())
}
