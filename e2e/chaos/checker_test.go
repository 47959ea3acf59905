package chaos

import (
	"fmt"
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
	Effects     int // ledger rows
	Retries     int // handler runs that found their slot's effect already committed
	Refusals    int // fenced writes refused
	Duplicates  int // (job, slot)s with more than one effect
	StaleCommit int // effects committed after their generation was superseded
	Missed      int // due slots with no claim while a healthy replica could reach the database
	Excused     int // due slots with no claim inside a fault window
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
	for _, k := range allFaults {
		if n := r.Faults[k]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		}
	}
	return fmt.Sprintf("seed=%d duration=%s replicas=%d faults[%s] slots_due=%d completed=%d skipped=%d starts=%d double_runs=%d effects=%d retries_found_effect=%d fence_refusals=%d duplicates=%d stale_commits=%d missed=%d excused=%d taken_over_runs=%d violations=%d",
		r.Seed, r.Duration.Round(time.Second), r.Replicas, strings.Join(kinds, " "), r.SlotsDue, r.Completed, r.Skipped,
		r.Starts, r.DoubleRuns, r.Effects, r.Retries, r.Refusals, r.Duplicates, r.StaleCommit, r.Missed, r.Excused, r.TakenOverRuns, len(r.Violations))
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
	checkCommitsUnderLease(ev, r)
	checkRefusals(ev, r)
	checkPauses(ev, faults, r)
	checkMissed(ev, faults, win, replicas, r)
	return r
}

// checkEffects: no (job, slot) effect committed twice, and every effect
// comes from a handler start of the same claim.
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
// effect.
func checkCompletions(ev *evidence, r *report) {
	effects := map[slotKey]bool{}
	for _, e := range ev.ledger {
		effects[keyOf(e.Job, e.Slot)] = true
	}
	for _, s := range ev.slots {
		switch s.Status {
		case "completed":
			r.Completed++
			if !effects[keyOf(s.Job, s.Slot)] {
				r.violate("slot completed without its effect: %s slot %s generation %d", s.Job, s.Slot.UTC().Format(time.RFC3339), s.Generation)
			}
		case "skipped":
			r.Skipped++
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
// its job's lease: a commit after that is a write by a deposed owner.
func checkCommitsUnderLease(ev *evidence, r *report) {
	hist := historyByName(ev)
	for _, e := range ev.ledger {
		at := supersededAt(hist, "job:"+e.Job, e.Generation)
		if !at.IsZero() && e.CommittedAt.After(at) {
			r.StaleCommit++
			r.violate("commit by a deposed owner: %s slot %s generation %d (%s) committed at %s, after a newer generation took the lease at %s",
				e.Job, e.Slot.UTC().Format(time.RFC3339), e.Generation, e.Replica, e.CommittedAt.Format("15:04:05.000"), at.Format("15:04:05.000"))
		}
	}
}

// checkRefusals: every fenced refusal is matched by a lease loss: by the
// time of the refusal a newer generation held the lease, or the refused
// generation's last known expiry had passed.
func checkRefusals(ev *evidence, r *report) {
	hist := historyByName(ev)
	for _, l := range ev.log {
		if l.Kind != "refused" {
			continue
		}
		name := "job:" + l.Job
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

// checkPauses: a paused job runs no slot due after the pause was written
// and before the request lifting it was sent. The run in flight when the pause landed (its
// slot is earlier) may finish, and may be resumed.
func checkPauses(ev *evidence, faults []fault, r *report) {
	for _, f := range faults {
		if f.Kind != faultPause || f.Acked.IsZero() {
			continue
		}
		for _, l := range ev.log {
			if l.Kind == "start" && l.Job == f.Job && l.Slot.After(f.Acked) && l.Slot.Before(f.Lifting) {
				r.violate("paused job ran: %s slot %s started on %s at %s, paused from %s to %s",
					l.Job, l.Slot.UTC().Format(time.RFC3339), l.Replica, l.At.Format("15:04:05.000"), f.Acked.Format("15:04:05.000"), f.Lifting.Format("15:04:05.000"))
			}
		}
	}
}

// checkMissed: every slot due inside the window has a claim (a slot row of
// any status), unless at its time no replica was healthy. A replica is
// unhealthy from a lease TTL before a fault on it (or on the database) to a
// lease TTL after the fault ends; a freeze counts for every replica, since
// a frozen writer's open transaction holds its lease row, and claims of that
// lease wait for it. A paused job's slots are not owed between its pause
// and a slot after it is lifted.
func checkMissed(ev *evidence, faults []fault, win window, replicas int, r *report) {
	claimed := map[slotKey]bool{}
	for _, s := range ev.slots {
		claimed[keyOf(s.Job, s.Slot)] = true
	}
	// The weaker designs keep no slot rows: their effect is their claim.
	for _, e := range ev.ledger {
		claimed[keyOf(e.Job, e.Slot)] = true
	}
	type span struct{ from, to time.Time }
	down := make([][]span, replicas)
	paused := map[string][]span{}
	for _, f := range faults {
		sp := span{f.Start.Add(-leaseTTL), f.End.Add(leaseTTL + time.Second)}
		switch {
		case f.Kind == faultPause:
			j, _ := jobByName(f.Job)
			paused[f.Job] = append(paused[f.Job], span{f.Start, f.End.Add(time.Duration(j.Every) * time.Second)})
		case f.Replica < 0 || f.Kind == faultFreeze:
			for i := range down {
				down[i] = append(down[i], sp)
			}
		default:
			down[f.Replica] = append(down[f.Replica], sp)
		}
	}
	in := func(spans []span, t time.Time) bool {
		for _, s := range spans {
			if !t.Before(s.from) && !t.After(s.to) {
				return true
			}
		}
		return false
	}
	var missed []string
	for _, j := range jobs {
		step := time.Duration(j.Every) * time.Second
		for t := win.From.Truncate(step).Add(step); !t.After(win.To); t = t.Add(step) {
			r.SlotsDue++
			if claimed[keyOf(j.Name, t)] || in(paused[j.Name], t) {
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
				continue
			}
			r.Missed++
			missed = append(missed, fmt.Sprintf("%s@%s", j.Name, t.UTC().Format("15:04:05")))
		}
	}
	if len(missed) > 0 {
		sort.Strings(missed)
		r.violate("missed slots while a healthy replica could reach the database: %s", strings.Join(missed, ", "))
	}
}
