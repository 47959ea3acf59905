package cronfence

import (
	"container/heap"
	"context"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

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
//     before it is still told claiming slots of that instant (under load
//     a replica claims its share in statements one after another), a
//     fallback waits on, until that replica went ClaimGrace without one
//     (at most fallbackWaitMax past the slot). A replica that died, hangs
//     or never heard of the others costs a slot about that much delay,
//     never the slot: every claim is still the store's atomic statement.
//   - A run another replica started is watched by one replica (the first
//     by the same ranking, the run's owner left out); once the run has
//     gone on for Config.ResumeEvery without its end being told, the
//     watcher scans for dead runs every ResumeEvery until it is. Runs
//     shorter than that cost no scan at all. A scan also follows every
//     gap in the notices, after which the store tells every run in
//     progress as claimed (store.Notices), so those are watched too; one
//     replica scans every resumeBackstopEvery whatever it heard, and
//     another follows any scan that found dead runs. A replica's own run that ended leaving its slot running (for
//     a resume) or whose end could not be recorded is watched by itself.
//   - One replica, the first for "monitor", runs the absence checks.
//
// Live replicas are those heard from (a heartbeat's notice, or the
// registry read after every gap) within Alerts.ReplicaStale; a replica
// that stopped says so. Without notices, and while this replica does not
// hear them (before it first listens, and from a broken connection to
// the next gap), it claims every slot at once and scans every
// ResumeEvery, as before.

// resumeBackstopEvery is how often one replica scans for dead runs
// whatever it heard: notices are a saving, never a guarantee, and one
// lost on its way (store.Notices) leaves a run watched by nobody here.
const resumeBackstopEvery = 30 * time.Second

// settledKeep is how long a slot told as settled is remembered: longer
// than any fallback waits (fallbackWaitMax) plus a late notice.
const settledKeep = 10 * time.Second

// fallbackWaitMax bounds how long past its slot a fallback waits for a
// replica ranked before it that is still told claiming the slot's
// instant; past it, the fallback claims (at worst refused, a statement's
// cost). Well inside settledKeep, so a claim told is still remembered.
const fallbackWaitMax = 5 * time.Second

// notices is what this replica heard. Its mutex is taken after
// Scheduler.mu, never before.
type notices struct {
	mu       sync.Mutex
	on       bool                      // the store tells and this replica listens
	hearing  bool                      // listening now: between a gap and the connection's loss
	alive    map[string]time.Time      // other replicas with timers, by when last heard (schedule clock)
	settled  map[slotKey]time.Time     // slots told settled, by when heard
	claiming map[claimingKey]time.Time // other replicas' claims told, by replica and slot instant: when last heard
	watched  map[slotKey]watchedRun    // runs other replicas started and that are not told ended
	rescan   bool                      // a scan is wanted: notices may have been missed, or the last found dead runs
	backstop time.Time                 // the next backstop scan
	prune    time.Time                 // the next time settled is pruned

	cancel context.CancelFunc
	done   chan struct{}
}

type slotKey struct {
	job  string
	slot int64 // UnixNano
}

func keyOf(job string, slot time.Time) slotKey { return slotKey{job, slot.UnixNano()} }

// claimingKey is a replica's claims of one slot instant, whatever the job.
type claimingKey struct {
	owner string
	slot  int64 // UnixNano
}

type watchedRun struct {
	owner  string
	since  time.Time // schedule clock
	always bool      // this replica's own run, left to resume: watched here, whatever the ranking
}

// startNotices listens for the store's notices when it tells them and
// this replica fires. Called from Start.
func (s *Scheduler) startNotices() {
	ns, ok := s.store.(store.Notices)
	if !ok || s.cfg.DisableTimers || s.cfg.ClaimGrace < 0 {
		return
	}
	n := &s.notices
	n.mu.Lock()
	n.on = true
	n.alive, n.settled, n.watched = map[string]time.Time{}, map[slotKey]time.Time{}, map[slotKey]watchedRun{}
	n.claiming = map[claimingKey]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	n.mu.Unlock()
	go func() {
		defer close(n.done)
		_ = ns.Listen(ctx, func(no store.Notice) { s.heard(ctx, no) })
	}()
}

// stopNotices stops listening. Called as the loop ends.
func (s *Scheduler) stopNotices() {
	n := &s.notices
	n.mu.Lock()
	cancel, done := n.cancel, n.done
	n.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// heard takes one notice in.
func (s *Scheduler) heard(ctx context.Context, no store.Notice) {
	now := s.scheduleNow()
	switch no.Kind {
	case store.NoticeGap:
		s.noticeGap(ctx, now)
		return
	case store.NoticeLost:
		// Until the next gap, every replica here claims at once and scans
		// every ResumeEvery, as without notices: what it does not hear
		// it cannot wait for.
		s.notices.mu.Lock()
		s.notices.hearing = false
		s.notices.mu.Unlock()
		return
	}
	mine := no.Kind == store.NoticeClaimed && s.registered(no.Job) // before notices.mu: mu comes first
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	key := keyOf(no.Job, no.Slot)
	switch no.Kind {
	case store.NoticeAlive:
		if no.Owner != s.cfg.Owner {
			n.alive[no.Owner] = now
		}
	case store.NoticeGone:
		delete(n.alive, no.Owner)
	case store.NoticeClaimed:
		n.settled[key] = now
		n.heardClaiming(no, now)
		// A resume's claim: the run before it is over. (Not this
		// replica's own watch of a run of its own, left to resume, that
		// ended before the notice of its claim arrived.)
		if w, ok := n.watched[key]; ok && !(w.always && no.Owner == s.cfg.Owner) {
			delete(n.watched, key)
		}
		if no.Owner != s.cfg.Owner && mine {
			n.watched[key] = watchedRun{owner: no.Owner, since: now}
		}
	case store.NoticeSettled:
		n.settled[key] = now
		n.heardClaiming(no, now)
	case store.NoticeEnded:
		n.settled[key] = now
		// Only the run told: a deposed owner's late end must not end the
		// watch of the run that resumed its slot.
		if w, ok := n.watched[key]; ok && w.owner == no.Owner {
			delete(n.watched, key)
		}
	}
}

// heardClaiming notes that another replica is claiming slots of no's
// instant. Callers hold n.mu.
func (n *notices) heardClaiming(no store.Notice, now time.Time) {
	if no.Owner != "" {
		n.claiming[claimingKey{no.Owner, no.Slot.UnixNano()}] = now
	}
}

// noticeGap forgets the runs watched (their ends may have gone unheard;
// the scan that follows finds the dead ones) and reads the live replicas
// from the registry, in one round trip.
func (s *Scheduler) noticeGap(ctx context.Context, now time.Time) {
	ctx, cancel := s.bounded(ctx)
	replicas, err := s.store.ReplicaList(ctx)
	cancel()
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hearing, n.rescan = true, true
	clear(n.watched)
	if err != nil {
		return // the heartbeats' notices fill it in
	}
	for _, r := range replicas {
		// HeartbeatAt is by the database clock, as scheduleNow is.
		if r.Timers && r.Owner != s.cfg.Owner && now.Sub(r.HeartbeatAt) < s.cfg.Alerts.ReplicaStale {
			n.alive[r.Owner] = r.HeartbeatAt
		}
	}
}

func (s *Scheduler) registered(job string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[job] != nil
}

// rank is this replica's place, from 0, among the live replicas (itself
// included, except) ordered by the hash of (replica, key). Callers hold
// notices.mu.
func (s *Scheduler) rank(key string, now time.Time, except string) int {
	n := &s.notices
	mine := rendezvous(s.cfg.Owner, key)
	r := 0
	for owner, heard := range n.alive {
		if now.Sub(heard) >= s.cfg.Alerts.ReplicaStale {
			delete(n.alive, owner) // silent for too long: stopped, or cut off
			continue
		}
		if owner == except {
			continue
		}
		if h := rendezvous(owner, key); h > mine || (h == mine && owner < s.cfg.Owner) {
			r++
		}
	}
	return r
}

// claimingBefore is when the replicas ranked before this one for key, of
// those heard claiming slots of key's instant, will have gone
// Config.ClaimGrace without a claim of it told: the fallback for key
// waits until then. A time not after now means none is still claiming.
// Callers hold notices.mu.
func (s *Scheduler) claimingBefore(key slotKey, now time.Time) time.Time {
	n := &s.notices
	rankKey := key.rankKey()
	mine := rendezvous(s.cfg.Owner, rankKey)
	var until time.Time
	for owner := range n.alive {
		heard, ok := n.claiming[claimingKey{owner, key.slot}]
		if !ok {
			continue
		}
		if h := rendezvous(owner, rankKey); h > mine || (h == mine && owner < s.cfg.Owner) {
			if t := heard.Add(s.cfg.ClaimGrace); t.After(until) {
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

// rankKey is the slot as the ranking hashes it: the same text on every
// replica.
func (k slotKey) rankKey() string {
	return k.job + "\x00" + strconv.FormatInt(k.slot, 10)
}

// deferToPreferred takes out of due the scheduled slots another replica
// is preferred for, putting each back on the heap as a fallback claim
// ClaimGrace (twice that past second place) later, and drops the
// fallbacks whose slot was told settled. The rest are claimed now.
// Callers hold mu.
func (s *Scheduler) deferToPreferred(due []*entry, now time.Time) []*entry {
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.on {
		return due
	}
	if !n.hearing {
		// Claim the fallbacks now too: their preferred replica's claim
		// would not be heard.
		for _, e := range due {
			e.fallback = false
		}
		return due
	}
	if !now.Before(n.prune) {
		for k, heard := range n.settled {
			if now.Sub(heard) > settledKeep {
				delete(n.settled, k)
			}
		}
		for k, heard := range n.claiming {
			if now.Sub(heard) > settledKeep {
				delete(n.claiming, k)
			}
		}
		// An entry that kept slots passed over fires within
		// fallbackWaitMax of now; what is older lost its entry (its job
		// was replaced).
		for k := range s.passedOver {
			if now.Sub(time.Unix(0, k.slot)) > settledKeep {
				delete(s.passedOver, k)
			}
		}
		n.prune = now.Add(settledKeep)
	}
	keep := due[:0]
	for _, e := range due {
		switch {
		case e.fallback:
			key := keyOf(e.job.Name, e.slot)
			if _, told := n.settled[key]; told {
				// The replica that claimed it records what a stall
				// passed over before it: it stalled too (its timer was
				// armed for the same slot), or it was on time and ran
				// those slots.
				delete(s.passedOver, key)
				continue
			}
			if until := s.claimingBefore(key, now); until.After(now) && now.Before(e.slot.Add(fallbackWaitMax)) {
				heap.Push(&s.heap, &entry{job: e.job, slot: e.slot, fireAt: until,
					origin: e.origin, retry: true, fallback: true})
				continue
			}
		case e.origin == OriginScheduled && !e.retry:
			if r := s.rank(keyOf(e.job.Name, e.slot).rankKey(), now, ""); r > 0 {
				// The grace runs from the slot, or from now when this
				// loop woke late for it (passOver): the preferred
				// replica, late too, is only now claiming it.
				wait := s.cfg.ClaimGrace * time.Duration(min(r, 2))
				heap.Push(&s.heap, &entry{job: e.job, slot: e.slot, fireAt: latest(now, e.slot).Add(wait),
					origin: e.origin, retry: true, fallback: true})
				continue
			}
		}
		keep = append(keep, e)
	}
	return keep
}

// rescanSoon asks for a resume pass at the next due time: the last found
// dead runs, which may still be there (a claim refused lease_busy).
func (s *Scheduler) rescanSoon() {
	s.notices.mu.Lock()
	s.notices.rescan = true
	s.notices.mu.Unlock()
}

// watchOwn watches one of this replica's own runs that ended without
// ending its slot: left running for a resume, or its end not recorded
// (the slot is dead once its lease expires). Other replicas watch it too,
// but a replica alone has nobody else.
func (s *Scheduler) watchOwn(job string, slot time.Time) {
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.on {
		n.watched[keyOf(job, slot)] = watchedRun{owner: s.cfg.Owner, since: s.scheduleNow().Add(-s.cfg.ResumeEvery), always: true}
	}
	// (Not hearing, every pass scans anyway.)
}

// resumeWanted reports whether a resume pass due now has anything to
// find, for a replica that listens: a gap since the last, the backstop,
// or a run it watches that went on for ResumeEvery. Without notices every
// due pass is wanted.
func (s *Scheduler) resumeWanted(now time.Time) bool {
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.on || !n.hearing || n.rescan {
		n.rescan = false
		return true
	}
	if !now.Before(n.backstop) {
		n.backstop = now.Add(resumeBackstopEvery)
		if s.rank("resume", now, "") == 0 {
			return true
		}
	}
	for key, w := range n.watched {
		if now.Sub(w.since) >= s.cfg.ResumeEvery && (w.always || s.rank(key.rankKey(), now, w.owner) == 0) {
			return true
		}
	}
	return false
}

// runsChecks reports whether this replica is the one to run the absence
// checks: always without notices (the monitor lease decides), else the
// first live replica for "monitor".
func (s *Scheduler) runsChecks() bool {
	n := &s.notices
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.on || !n.hearing || s.rank("monitor", s.scheduleNow(), "") == 0
}
