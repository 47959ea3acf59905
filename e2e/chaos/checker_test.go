package chaos

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// report is what the checker found: the run's figures and every violation
// of a guarantee.
type report struct {
	Seed        uint64
	Duration    time.Duration
	Replicas    int
	Faults      map[faultKind]int
	SlotsDue    int // scheduled slots inside the checked window
	Completed   int // slots completed
	Skipped     int // slots recorded as skipped (overlap)
	Starts      int // handler starts
	DoubleRuns  int // (job, slot)s whose handler started more than once (retries included)
	Effects     int // ledger rows: committed inserts
	Retries     int // handler runs that found their slot's effect already committed (fence-once only)
	Refusals    int // fenced writes refused
	Duplicates  int // (job, slot)s with more than one effect
	StaleCommit int // effects committed after their generation was superseded
	Missed      int // due slots with no claim while a healthy replica could reach the database
	Excused     int // due slots with no claim inside a fault window
	CaughtUp    int // slots claimed by a catch-up (a run row with catch_up)
	CatchUpLost int // excused slots a replica's catch-up should have claimed
	Failed      int // slots whose final status is failed
	// Unrecorded are completed slots with no run row of the generation
	// that completed them: complete() committed the slot's completion with
	// its effect, and the run's serve stopped (killed) before recording
	// the run's end. The slot is done, and was not resumed.
	Unrecorded  int
	LeftRunning int // slots still running (or buffered) after the settle phase
	// TakenOverRuns are successful run rows of a generation that lost its
	// slot before finishing (history shows two successes; see Notes).
	TakenOverRuns int
	Violations    []string
	Notes         []string // findings that break no guarantee
}

func (r *report) violate(format string, args ...any) {
	r.Violations = append(r.Violations, fmt.Sprintf(format, args...))
}

func (r *report) String() string {
	kinds := make([]string, 0, len(r.Faults))
	for _, k := range slices.Concat(allFaults, []faultKind{faultFailover}) {
		if n := r.Faults[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
	}
	return fmt.Sprintf("seed=%d duration=%s replicas=%d faults[%s] slots_due=%d completed=%d skipped=%d failed=%d left_running=%d unrecorded=%d starts=%d double_runs=%d effects=%d retries_found_effect=%d fence_refusals=%d duplicates=%d stale_commits=%d missed=%d excused=%d caught_up=%d catch_up_lost=%d taken_over_runs=%d violations=%d",
		r.Seed, r.Duration.Round(time.Second), r.Replicas, strings.Join(kinds, " "), r.SlotsDue, r.Completed, r.Skipped, r.Failed, r.LeftRunning, r.Unrecorded,
		r.Starts, r.DoubleRuns, r.Effects, r.Retries, r.Refusals, r.Duplicates, r.StaleCommit, r.Missed, r.Excused, r.CaughtUp, r.CatchUpLost, r.TakenOverRuns, len(r.Violations))
}

// window is the span whose slots must all be claimed: from the replicas'
// start to shortly before they were stopped.
type window struct{ From, To time.Time }

type slotKey struct {
	Job  string
	Slot int64 // UnixNano
}

type genKey struct {
	slotKey
	Generation int64
}

func keyOf(job string, slot time.Time) slotKey { return slotKey{job, slot.UnixNano()} }

// check runs every check of the suite over the evidence.
func check(ev *evidence, faults []fault, win window, replicas int) *report {
	r := &report{Replicas: replicas, Faults: map[faultKind]int{}, Duration: win.To.Sub(win.From)}
	for _, f := range faults {
		r.Faults[f.Kind]++
	}
	checkEffects(ev, r)
	checkCompletions(ev, r)
	checkUnfinished(ev, win, r)
	checkCommitsUnderLease(ev, r)
	checkRefusals(ev, r)
	checkPauses(ev, faults, r)
	checkMissed(ev, faults, win, replicas, r)
	noteRecoveries(ev, faults, r)
	return r
}

// noteRecoveries notes, for each failover, how long after it began the
// first effect committed on the new primary, and that effect's generation
// (above (timeline − 1) · 2^40 once its lease was taken on the new
// timeline): the time to recover, which no rule judges.
func noteRecoveries(ev *evidence, faults []fault, r *report) {
	for _, f := range faults {
		if f.Kind != faultFailover {
			continue
		}
		var first *effect
		for i := range ev.ledger {
			e := &ev.ledger[i]
			if e.CommittedAt.After(f.Start) && (first == nil || e.CommittedAt.Before(first.CommittedAt)) {
				first = e
			}
		}
		if first == nil {
			r.Notes = append(r.Notes, fmt.Sprintf("failover at %s (%s): no effect committed after it", f.Start.Format("15:04:05.000"), f.Note))
			continue
		}
		r.Notes = append(r.Notes, fmt.Sprintf("failover at %s (%s): first effect committed %d ms after it began (%s slot %s, generation %d)",
			f.Start.Format("15:04:05.000"), f.Note, first.CommittedAt.Sub(f.Start).Milliseconds(), first.Job,
			first.Slot.UTC().Format("15:04:05"), first.Generation))
	}
}

// checkEffects: no (job, slot) effect committed twice, and every effect
// comes from a handler start of the same claim. The jobs insert without an
// idempotency guard (but under CHAOS_WRITE=fence-once), so every committed
// insert is an effect, and a slot with two is a duplicate, whatever the
// fault: complete() is what keeps them single, not a key. Without the
// guard an insert always adds its row, so an "exists" outcome (a guarded
// insert that found the slot's effect) cannot occur.
func checkEffects(ev *evidence, r *report) {
	r.Effects = len(ev.ledger)
	starts := map[genKey]int{}
	for _, l := range ev.log {
		switch l.Kind {
		case "start":
			r.Starts++
			starts[genKey{keyOf(l.Job, l.Slot), l.Generation}]++
		case "exists":
			r.Retries++
			if ev.write != writeFenceOnce {
				r.violate("an insert without the idempotency guard added nothing: %s slot %s generation %d on %s",
					l.Job, l.Slot.UTC().Format(time.RFC3339), l.Generation, l.Replica)
			}
		case "refused":
			r.Refusals++
		}
	}
	perSlot := map[slotKey]int{}
	for k, n := range starts {
		perSlot[k.slotKey] += n
	}
	for _, n := range perSlot {
		if n > 1 {
			r.DoubleRuns++
		}
	}
	for k, n := range starts {
		if n > 1 {
			r.violate("two handlers started for one claim: %s slot %s generation %d started %d times", k.Job, time.Unix(0, k.Slot).UTC().Format(time.RFC3339), k.Generation, n)
		}
	}
	by := map[slotKey][]effect{}
	for _, e := range ev.ledger {
		k := keyOf(e.Job, e.Slot)
		by[k] = append(by[k], e)
		if starts[genKey{k, e.Generation}] == 0 {
			r.violate("effect without a handler start: %s slot %s generation %d by %s", e.Job, e.Slot.UTC().Format(time.RFC3339), e.Generation, e.Replica)
		}
	}
	for _, es := range by {
		if len(es) > 1 {
			r.Duplicates++
			var who []string
			for _, e := range es {
				who = append(who, fmt.Sprintf("generation %d by %s at %s", e.Generation, e.Replica, e.CommittedAt.Format("15:04:05.000")))
			}
			r.violate("duplicate effect: %s slot %s committed %d times (%s)", es[0].Job, es[0].Slot.UTC().Format(time.RFC3339), len(es), strings.Join(who, "; "))
		}
	}
}

// checkCompletions: no claim completed twice, and a completed slot has its
// effect. With complete() (ev.completes), the effect and the slot's
// completion commit in one transaction, so each effect's slot is completed
// by the effect's own generation: an effect whose slot is not (left
// running, failed, resumed and completed by a later generation) committed
// without its completion, which is the hole complete() closes. A completed
// slot with no run row of its generation is fine: its serve stopped after
// the commit and before recording the run (counted as unrecorded); the
// slot is done and not resumed.
func checkCompletions(ev *evidence, r *report) {
	effects := map[slotKey]bool{}
	for _, e := range ev.ledger {
		effects[keyOf(e.Job, e.Slot)] = true
	}
	recorded := map[genKey]bool{}
	for _, run := range ev.runs {
		recorded[genKey{keyOf(run.Job, run.Slot), run.Generation}] = true
	}
	for _, s := range ev.slots {
		switch s.Status {
		case "completed":
			r.Completed++
			if !effects[keyOf(s.Job, s.Slot)] {
				r.violate("slot completed without its effect: %s slot %s generation %d", s.Job, s.Slot.UTC().Format(time.RFC3339), s.Generation)
			}
			if !recorded[genKey{keyOf(s.Job, s.Slot), s.Generation}] {
				r.Unrecorded++
				r.Notes = append(r.Notes, fmt.Sprintf("slot completed with its effect, its run's end never recorded (not resumed): %s slot %s generation %d attempt %d",
					s.Job, s.Slot.UTC().Format(time.RFC3339), s.Generation, s.Attempts))
			}
		case "skipped":
			r.Skipped++
		}
	}
	if ev.completes() {
		slots := map[slotKey]slotRow{}
		for _, s := range ev.slots {
			slots[keyOf(s.Job, s.Slot)] = s
		}
		for _, e := range ev.ledger {
			s, ok := slots[keyOf(e.Job, e.Slot)]
			if ok && s.Status == "completed" && s.Generation == e.Generation {
				continue
			}
			state := "unclaimed"
			if ok {
				state = fmt.Sprintf("%s by generation %d, attempt %d", s.Status, s.Generation, s.Attempts)
			}
			r.violate("effect committed without its slot's completion: %s slot %s generation %d by %s, the slot %s",
				e.Job, e.Slot.UTC().Format(time.RFC3339), e.Generation, e.Replica, state)
		}
	}
	// A run whose slot was taken over before it finished still writes a
	// successful run row (its finish finds the slot no longer its own), so
	// run rows may show two successes for one slot while the slot was
	// completed once. Those are counted, not failed: the slot row and the
	// ledger are the truth. Two successes of one generation would be a
	// double completion of one claim.
	final := map[slotKey]int64{}
	for _, s := range ev.slots {
		final[keyOf(s.Job, s.Slot)] = s.Generation
	}
	seen := map[genKey]bool{}
	for _, run := range ev.runs {
		if !run.Success || run.Skipped {
			continue
		}
		k := keyOf(run.Job, run.Slot)
		g := genKey{k, run.Generation}
		if seen[g] {
			r.violate("slot completed twice: %s slot %s has two successful runs of generation %d", run.Job, run.Slot.UTC().Format(time.RFC3339), run.Generation)
		}
		seen[g] = true
		if f, ok := final[k]; ok && f != run.Generation {
			r.TakenOverRuns++
			r.Notes = append(r.Notes, fmt.Sprintf("run recorded as successful after its slot was taken over: %s slot %s generation %d (the slot was completed by generation %d)",
				run.Job, run.Slot.UTC().Format(time.RFC3339), run.Generation, f))
		}
	}
}

// supersededAt is when a newer generation than gen took the lease, from
// the history (zero when none did).
func supersededAt(hist map[string][]leaseChange, name string, gen int64) time.Time {
	for _, c := range hist[name] {
		if c.Generation > gen {
			return c.ChangedAt
		}
	}
	return time.Time{}
}

func historyByName(ev *evidence) map[string][]leaseChange {
	hist := map[string][]leaseChange{}
	for _, c := range ev.history {
		hist[c.Name] = append(hist[c.Name], c)
	}
	return hist
}

// checkCommitsUnderLease: no two owners able to commit under one lease name
// at once. Every effect must have committed before a newer generation took
// the lease it was written under ($CRONFENCE_LEASE, recorded with it): a
// commit after that is a write by a deposed owner. complete() fences as
// fence() does, so this holds with it as it did with fence().
func checkCommitsUnderLease(ev *evidence, r *report) {
	hist := historyByName(ev)
	for _, e := range ev.ledger {
		at := supersededAt(hist, e.Lease, e.Generation)
		if !at.IsZero() && e.CommittedAt.After(at) {
			r.StaleCommit++
			r.violate("commit by a deposed owner: %s slot %s generation %d (%s) committed at %s, after a newer generation took the lease at %s",
				e.Job, e.Slot.UTC().Format(time.RFC3339), e.Generation, e.Replica, e.CommittedAt.Format("15:04:05.000"), at.Format("15:04:05.000"))
		}
	}
}

// checkRefusals: every fenced refusal (of fence() or complete()) is
// matched by a lease loss: by the time of the refusal a newer generation
// held the lease, or the refused generation's last known expiry had passed.
func checkRefusals(ev *evidence, r *report) {
	hist := historyByName(ev)
	for _, l := range ev.log {
		if l.Kind != "refused" {
			continue
		}
		name := l.Lease
		if at := supersededAt(hist, name, l.Generation); !at.IsZero() && !at.After(l.At) {
			continue
		}
		var expires time.Time
		for _, c := range hist[name] {
			if c.Generation == l.Generation && !c.ChangedAt.After(l.At) {
				expires = c.ExpiresAt
			}
		}
		if expires.IsZero() || expires.After(l.At) {
			r.violate("fence refused without a lease loss: %s slot %s generation %d on %s at %s (lease expires %s)",
				l.Job, l.Slot.UTC().Format(time.RFC3339), l.Generation, l.Replica, l.At.Format("15:04:05.000"), expires.Format("15:04:05.000"))
		}
	}
}

// pauseBoundary: a slot due this little before the request lifting a pause
// may be claimed first after the lift committed (every replica's claim goes
// out when the slot is due by its corrected clock, one answered not_due is
// retried 20 ms later, and the loops wake a few ms late on busy cores); that
// claim reads the job enabled and runs it, as it should.
const pauseBoundary = 250 * time.Millisecond

// checkPauses: a paused job runs no slot due after the pause was written
// and before the request lifting it was sent. The run in flight when the
// pause landed (its slot is earlier) may finish, and may be resumed. A slot
// due within pauseBoundary before the lift counts only if its handler
// started before the lift was sent.
func checkPauses(ev *evidence, faults []fault, r *report) {
	for _, f := range faults {
		if f.Kind != faultPause || f.Acked.IsZero() {
			continue
		}
		for _, l := range ev.log {
			if l.Kind != "start" || l.Job != f.Job || !l.Slot.After(f.Acked) || !l.Slot.Before(f.Lifting) {
				continue
			}
			if l.Slot.After(f.Lifting.Add(-pauseBoundary)) && !l.At.Before(f.Lifting) {
				r.Notes = append(r.Notes, fmt.Sprintf("slot due %s before a pause was lifted ran after the lift: %s slot %s started on %s at %s, lift sent at %s",
					f.Lifting.Sub(l.Slot).Round(time.Millisecond), l.Job, l.Slot.UTC().Format(time.RFC3339), l.Replica, l.At.Format("15:04:05.000"), f.Lifting.Format("15:04:05.000")))
				continue
			}
			r.violate("paused job ran: %s slot %s started on %s at %s, paused from %s to %s",
				l.Job, l.Slot.UTC().Format(time.RFC3339), l.Replica, l.At.Format("15:04:05.000"), f.Acked.Format("15:04:05.000"), f.Lifting.Format("15:04:05.000"))
		}
	}
}

// checkUnfinished: a claimed slot ends completed, skipped or failed. A slot
// still running (or buffered) after the settle phase is a run nobody
// finished or resumed. A failed slot is counted; it is a violation only when
// it left no effect and no run row of its final attempt (the slot row's
// generation) saying why it failed: an earlier attempt's row (one a replica
// wrote as it found that attempt dead, say) does not say why the last one
// failed.
func checkUnfinished(ev *evidence, win window, r *report) {
	effects := map[slotKey]bool{}
	for _, e := range ev.ledger {
		effects[keyOf(e.Job, e.Slot)] = true
	}
	reasons := map[genKey]string{}
	for _, run := range ev.runs {
		if why := strings.TrimSpace(run.Error + " " + run.Reason); !run.Success && why != "" {
			reasons[genKey{keyOf(run.Job, run.Slot), run.Generation}] = why
		}
	}
	for _, s := range ev.slots {
		k := keyOf(s.Job, s.Slot)
		switch s.Status {
		case "running", "buffered":
			if s.Slot.After(win.To) {
				continue // claimed while the replicas were being stopped
			}
			r.LeftRunning++
			r.violate("slot left %s after the settle phase: %s slot %s generation %d attempt %d",
				s.Status, s.Job, s.Slot.UTC().Format(time.RFC3339), s.Generation, s.Attempts)
		case "failed":
			r.Failed++
			why, ok := reasons[genKey{k, s.Generation}]
			switch {
			case !effects[k] && !ok:
				r.violate("slot failed without its effect and without a recorded reason: %s slot %s generation %d attempt %d",
					s.Job, s.Slot.UTC().Format(time.RFC3339), s.Generation, s.Attempts)
			default:
				effect := "no effect"
				if effects[k] {
					effect = "its effect committed"
				}
				if len(why) > 160 {
					why = why[:160] + "…"
				}
				r.Notes = append(r.Notes, fmt.Sprintf("slot failed (%s, attempt %d): %s slot %s: %s",
					effect, s.Attempts, s.Job, s.Slot.UTC().Format(time.RFC3339), why))
			}
		}
	}
}

// span is a stretch of time during which one replica cannot be counted on
// to claim a slot, and the index of the fault that caused it.
type span struct {
	from, to time.Time
	cause    int
}

func (s span) covers(t time.Time) bool { return !t.Before(s.from) && !t.After(s.to) }

// restartMargin widens a process restart (kill, rolling, offset): the
// replica is unhealthy from a second before its stop signal (a fire in
// flight) to a second after it is ready (its first fire).
const restartMargin = time.Second

// faultSpan is the span of a fault on a running replica (freeze, partition,
// latency, database restart): from a lease TTL before it to a lease TTL
// (+1 s) after it ends, time for leases to expire and be taken over.
func faultSpan(f fault, cause int) span {
	return span{f.Start.Add(-leaseTTL), f.End.Add(leaseTTL + time.Second), cause}
}

// unhealthy lists, per replica, the spans during which it could not claim.
//   - A restarted replica (kill, each replica of a rolling restart, offset)
//     only during its own restart.
//   - A partitioned or slowed replica, around its fault.
//   - A database restart: every replica.
//   - A freeze: the frozen replica; and every other replica only when the
//     frozen one had a run in flight, whose open transaction may hold its
//     job's lease row FOR KEY SHARE (once its complete() ran, the last
//     statement before COMMIT; from the start under CHAOS_WRITE=fence; a
//     freeze inside the hold, before complete(), holds nothing, so this
//     excuse is wider than it needs to be). The fire of that job's next slot, once
//     the frozen run's lease expired, must take the lease over and waits for
//     it, and with it the whole loop of the replica that sent it: every job's
//     slots due meanwhile are fired late, only the latest of each. So other
//     replicas are unhealthy from that slot (the lease's expiry, since
//     finding 14, is later; the excuse is kept wide), for every job. (The resume pass's claim of the frozen run, once its lease
//     expired, waits too, but in a goroutine of its own: finding 13.)
//     On SQLite (one write lock for the file, held in-process by serve's own
//     transactions too) every replica from the freeze's start. Without the
//     fence (the broken build, the weaker designs) nobody waits.
func unhealthy(ev *evidence, faults []fault, replicas int) [][]span {
	down := make([][]span, replicas)
	add := func(i int, sp span) {
		if i >= 0 && i < replicas {
			down[i] = append(down[i], sp)
		}
	}
	for fi, f := range faults {
		switch {
		case f.Kind == faultPause:
		case len(f.Restarts) > 0:
			for _, rs := range f.Restarts {
				add(rs.Replica, span{rs.Stop.Add(-restartMargin), rs.Ready.Add(restartMargin), fi})
			}
		case f.Replica < 0:
			for i := range down {
				add(i, faultSpan(f, fi))
			}
		case f.Kind == faultFreeze:
			sp := faultSpan(f, fi)
			add(f.Replica, sp)
			if at, ok := freezeBlocks(ev, f); ok {
				for i := range down {
					if i != f.Replica {
						add(i, span{at.Add(-restartMargin), sp.to, fi})
					}
				}
			}
		default:
			add(f.Replica, faultSpan(f, fi))
		}
	}
	return down
}

// freezeBlocks reports from when a freeze blocks the other replicas' loops:
// on PostgreSQL, when the frozen replica had a run in flight (a start line
// before the freeze, its outcome not yet logged), from that run's job's
// next slot, whose fire must take the run's lease.
func freezeBlocks(ev *evidence, f fault) (time.Time, bool) {
	if ev.singleWriter {
		return f.Start, true
	}
	if ev.fenceless {
		return time.Time{}, false
	}
	name := fmt.Sprintf("r%d", f.Replica)
	started := map[genKey]logLine{}
	ended := map[genKey]bool{}
	for _, l := range ev.log {
		if l.Replica != name || !l.At.Before(f.Start) {
			continue
		}
		k := genKey{keyOf(l.Job, l.Slot), l.Generation}
		if l.Kind == "start" {
			started[k] = l
		} else {
			ended[k] = true
		}
	}
	var at time.Time
	for k, l := range started {
		j, ok := jobByName(l.Job)
		if ended[k] || !ok {
			continue
		}
		step := time.Duration(j.Every) * time.Second
		next := f.Start.Truncate(step)
		if next.Before(f.Start) {
			next = next.Add(step)
		}
		if at.IsZero() || next.Before(at) {
			at = next
		}
	}
	return at, !at.IsZero()
}

// checkMissed: every slot due inside the window has a claim (a slot row of
// any status), unless at its time no replica was healthy (see unhealthy).
// A paused job's slots are not owed between its pause and a slot after it
// is lifted. Of the excused slots of a job with a catch-up window, the
// latest of each run is checked by checkCatchUp.
func checkMissed(ev *evidence, faults []fault, win window, replicas int, r *report) {
	claimed := map[slotKey]bool{}
	for _, s := range ev.slots {
		claimed[keyOf(s.Job, s.Slot)] = true
	}
	// The weaker designs keep no slot rows: their effect is their claim.
	for _, e := range ev.ledger {
		claimed[keyOf(e.Job, e.Slot)] = true
	}
	caughtUp := map[slotKey]bool{}
	for _, run := range ev.runs {
		if run.CatchUp {
			caughtUp[keyOf(run.Job, run.Slot)] = true
		}
	}
	r.CaughtUp = len(caughtUp)
	down := unhealthy(ev, faults, replicas)
	paused := map[string][]span{}
	for _, f := range faults {
		if f.Kind == faultPause {
			j, _ := jobByName(f.Job)
			paused[f.Job] = append(paused[f.Job], span{f.Start, f.End.Add(time.Duration(j.Every) * time.Second), -1})
		}
	}
	in := func(spans []span, t time.Time) bool {
		for _, s := range spans {
			if s.covers(t) {
				return true
			}
		}
		return false
	}
	var missed []string
	for _, j := range jobs {
		step := time.Duration(j.Every) * time.Second
		var last time.Time // the latest slot of the current run of excused slots
		endRun := func() {
			if !last.IsZero() && j.CatchUp > 0 {
				checkCatchUp(j, last, faults, down, caughtUp, r)
			}
			last = time.Time{}
		}
		for t := win.From.Truncate(step).Add(step); !t.After(win.To); t = t.Add(step) {
			r.SlotsDue++
			if claimed[keyOf(j.Name, t)] || in(paused[j.Name], t) {
				endRun()
				continue
			}
			healthy := false
			for i := range down {
				if !in(down[i], t) {
					healthy = true
				}
			}
			if !healthy {
				r.Excused++
				last = t
				continue
			}
			endRun()
			r.Missed++
			missed = append(missed, fmt.Sprintf("%s@%s", j.Name, t.UTC().Format("15:04:05")))
		}
		endRun()
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		r.violate("missed slots while a healthy replica could reach the database: %s", strings.Join(missed, ", "))
	}
}

// outageSlack is how long after a store outage ends a replica may take to
// reach the database again (its next tick, at most Config.MaxSleep, plus a
// connection), and outageRecovered the bound on its catch-up pass.
const (
	outageSlack     = 1500 * time.Millisecond
	outageRecovered = 3 * time.Second
)

// checkCatchUp: slot last, unclaimed, is the latest of a run of excused
// slots of job j (which has a catch-up window). G5: at start-up and after a
// store outage the most recent slot inside the window runs once. What the
// scheduler does (catchup.go, outage.go):
//
//   - At start-up (Start) it claims each job's latest slot by the database
//     clock, Prev(now), if within the window. Owed when a replica launched
//     at or after last and was ready before the next slot, within the window.
//   - After a store outage it claims the latest slot whose fire failed while
//     the store was unreachable, on the first round trip that reaches the
//     store again, if within the window. Owed when last fell inside a
//     database restart (every replica's fire of it failed) or a partition
//     of a replica (that replica's fire failed), no later slot of the job
//     fell before the replicas could reach the database again (it would be
//     the one caught up), the outage ended early enough for the catch-up to
//     land inside the window, no later slot was claimed by a catch-up
//     instead, and at least one affected replica was hit by nothing else at
//     that time (so it did fire the slot).
//   - Nothing else catches up. A frozen replica keeps its connections: when
//     it wakes it fires the latest slot of each job, not through catch-up,
//     and replays nothing; replicas whose claims waited for a frozen
//     holder's lease row do the same. Latency slows claims without failing
//     them. So excused slots of freezes and latency are not owed.
func checkCatchUp(j chaosJob, last time.Time, faults []fault, down [][]span, caughtUp map[slotKey]bool, r *report) {
	step := time.Duration(j.Every) * time.Second
	for s := last.Add(step); !s.After(last.Add(j.CatchUp)); s = s.Add(step) {
		if caughtUp[keyOf(j.Name, s)] {
			return // a later slot was caught up: history is not replayed
		}
	}
	lost := func(why string) {
		r.CatchUpLost++
		r.violate("catch-up lost: %s slot %s never ran, although %s, within its %s catch-up window",
			j.Name, last.UTC().Format(time.RFC3339), why, j.CatchUp)
	}
	clock := func(t time.Time) string { return t.Format("15:04:05.000") }
	for fi, f := range faults {
		for _, rs := range f.Restarts {
			if !rs.Launched.Before(last) && rs.Ready.Before(last.Add(step)) && rs.Ready.Sub(last) <= j.CatchUp {
				lost(fmt.Sprintf("r%d started at %s (ready %s; %s) while it was the latest slot", rs.Replica, clock(rs.Launched), clock(rs.Ready), f.Kind))
				return
			}
		}
		var affected []int
		switch f.Kind {
		case faultPGRestart, faultFailover:
			for i := range down {
				affected = append(affected, i)
			}
		case faultPartition:
			affected = []int{f.Replica}
		default:
			continue
		}
		if last.Before(f.Start) || last.After(f.End) || !last.Add(step).After(f.End.Add(outageSlack)) ||
			f.End.Add(outageRecovered).Sub(last) > j.CatchUp {
			continue
		}
		for _, i := range affected {
			if i < 0 || i >= len(down) || !onlyCause(down[i], last, fi) {
				continue
			}
			lost(fmt.Sprintf("r%d fired it while the database was unreachable (%s from %s to %s) and reached it again in time", i, f.Kind, clock(f.Start), clock(f.End)))
			return
		}
	}
}

// onlyCause reports whether every span covering t was caused by fault fi.
func onlyCause(spans []span, t time.Time, fi int) bool {
	for _, s := range spans {
		if s.covers(t) && s.cause != fi {
			return false
		}
	}
	return true
}
