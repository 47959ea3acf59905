package chaos

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests feed the checker made-up evidence, one fault at a time, so
// each rule is seen to fire on its own, and a clean history is seen to pass.
// They need no database and run in milliseconds.

var t0 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// cleanEvidence is ten seconds of every job, each slot run once, at once,
// under a generation of its own taken at the slot, its effect written with
// complete() (the suite's default).
func cleanEvidence() (*evidence, window) {
	ev := &evidence{write: writeComplete}
	gen := int64(0)
	for _, j := range jobs {
		step := time.Duration(j.Every) * time.Second
		lease := "job:" + j.Name
		for s := t0.Add(step); !s.After(at(10)); s = s.Add(step) {
			gen++
			ev.history = append(ev.history, leaseChange{Name: lease, Owner: "r0", Generation: gen, ExpiresAt: s.Add(leaseTTL), ChangedAt: s})
			ev.log = append(ev.log,
				logLine{Kind: "start", Job: j.Name, Lease: lease, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", At: s.Add(10 * time.Millisecond)},
				logLine{Kind: "commit", Job: j.Name, Lease: lease, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", At: s.Add(100 * time.Millisecond)})
			ev.ledger = append(ev.ledger, effect{Job: j.Name, Lease: lease, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", CommittedAt: s.Add(90 * time.Millisecond)})
			ev.slots = append(ev.slots, slotRow{Job: j.Name, Slot: s, Status: "completed", Generation: gen, Attempts: 1})
			ev.runs = append(ev.runs, runRow{Job: j.Name, Slot: s, Generation: gen, Owner: "r0", Success: true})
		}
	}
	return ev, window{From: t0, To: at(10)}
}

func TestCheckerPassesACleanHistory(t *testing.T) {
	ev, win := cleanEvidence()
	rep := check(ev, nil, win, 3)
	if len(rep.Violations) > 0 {
		t.Fatalf("a clean history was reported: %v", rep.Violations)
	}
	if rep.Missed != 0 || rep.Completed == 0 || rep.Completed != rep.SlotsDue {
		t.Fatalf("figures of a clean history: %s", rep)
	}
}

func TestCheckerReportsEachViolation(t *testing.T) {
	slow5 := at(5)
	tests := []struct {
		name   string
		mutate func(ev *evidence) []fault
		want   string
	}{
		{"duplicate effect", func(ev *evidence) []fault {
			ev.history = append(ev.history, leaseChange{Name: "job:slow", Generation: 99, ExpiresAt: at(9), ChangedAt: at(6)})
			ev.log = append(ev.log, logLine{Kind: "start", Job: "slow", Lease: "job:slow", Slot: slow5, Generation: 99, At: at(6)})
			ev.ledger = append(ev.ledger, effect{Job: "slow", Lease: "job:slow", Slot: slow5, Generation: 99, CommittedAt: at(6.5)})
			return nil
		}, "duplicate effect: slow"},
		{"commit by a deposed owner", func(ev *evidence) []fault {
			for i := range ev.ledger {
				if ev.ledger[i].Job == "slow" && ev.ledger[i].Slot.Equal(slow5) {
					ev.ledger[i].CommittedAt = at(10.5) // after slot 10 took the lease, at 10
				}
			}
			return nil
		}, "commit by a deposed owner: slow"},
		{"effect without a start", func(ev *evidence) []fault {
			ev.ledger = append(ev.ledger, effect{Job: "fast", Lease: "job:fast", Slot: at(100), Generation: 500, CommittedAt: at(100)})
			return nil
		}, "effect without a handler start"},
		{"slot completed twice", func(ev *evidence) []fault {
			for _, run := range ev.runs {
				if run.Job == "slow" && run.Slot.Equal(slow5) {
					ev.runs = append(ev.runs, run)
				}
			}
			return nil
		}, "slot completed twice: slow"},
		{"completed without effect", func(ev *evidence) []fault {
			ev.slots = append(ev.slots, slotRow{Job: "slow", Slot: at(200), Status: "completed", Generation: 3})
			return nil
		}, "slot completed without its effect"},
		{"refusal without a lease loss", func(ev *evidence) []fault {
			var gen int64
			for _, l := range ev.ledger {
				if l.Job == "slow" && l.Slot.Equal(slow5) {
					gen = l.Generation
				}
			}
			ev.log = append(ev.log, logLine{Kind: "refused", Job: "slow", Lease: "job:slow", Slot: slow5, Generation: gen, At: at(5.5)})
			return nil
		}, "fence refused without a lease loss"},
		{"paused job ran", func(ev *evidence) []fault {
			return []fault{{Kind: faultPause, Job: "slow", Start: at(4), Acked: at(4.1), Lifting: at(9), End: at(9.1)}}
		}, "paused job ran: slow"},
		{"paused job ran just before the lift", func(ev *evidence) []fault {
			// slow 06:00:05 started at 5.01, before the lift was sent at 5.1.
			return []fault{{Kind: faultPause, Job: "slow", Start: at(4), Acked: at(4.1), Lifting: at(5.1), End: at(5.2)}}
		}, "paused job ran: slow"},
		{"missed slot", func(ev *evidence) []fault {
			drop(ev, "medium", at(6))
			return nil
		}, "missed slots while a healthy replica could reach the database: medium@06:00:06"},
		{"missed slot while only one replica was down", func(ev *evidence) []fault {
			drop(ev, "medium", at(6))
			return []fault{{Kind: faultKill, Replica: 1, Start: at(5), End: at(7)}}
		}, "medium@06:00:06"},
		{"two handlers for one claim", func(ev *evidence) []fault {
			ev.log = append(ev.log, logLine{Kind: "start", Job: "fast", Lease: "job:fast", Slot: at(2), Generation: ev.ledger[0].Generation, At: at(2.5)})
			return nil
		}, "two handlers started for one claim"},
		{"effect without its completion: slot resumed and completed by a later generation", func(ev *evidence) []fault {
			// complete() commits the effect and the completion together:
			// generation 99 cannot have completed the slot generation 5's
			// effect was written for (fence() alone would allow it).
			setSlot(ev, "slow", slow5, "completed", 99, 2)
			return nil
		}, "effect committed without its slot's completion: slow slot 2026-11-30T06:00:05Z"},
		{"effect without its completion: slot left failed", func(ev *evidence) []fault {
			setSlot(ev, "medium", at(6), "failed", 0, 0)
			return nil
		}, "effect committed without its slot's completion: medium slot 2026-11-30T06:00:06Z"},
		{"an unguarded insert that added nothing", func(ev *evidence) []fault {
			ev.log = append(ev.log, logLine{Kind: "exists", Job: "fast", Lease: "job:fast", Slot: at(2), Generation: ev.ledger[0].Generation, At: at(2.5)})
			return nil
		}, "an insert without the idempotency guard added nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, win := cleanEvidence()
			faults := tt.mutate(ev)
			rep := check(ev, faults, win, 3)
			for _, v := range rep.Violations {
				if strings.Contains(v, tt.want) {
					return
				}
			}
			t.Fatalf("want a violation containing %q, got %q", tt.want, rep.Violations)
		})
	}
}

func TestCheckerExcusesSlotsNoHealthyReplicaCouldClaim(t *testing.T) {
	ev, win := cleanEvidence()
	drop(ev, "fast", at(6))
	// The database restart makes every replica unhealthy around it. (fast
	// has no catch-up window: nothing had to claim the slot later.)
	rep := check(ev, []fault{{Kind: faultPGRestart, Replica: -1, Start: at(5.5), End: at(6.5)}}, win, 3)
	if len(rep.Violations) > 0 || rep.Excused != 1 {
		t.Fatalf("a slot lost to a database restart: violations %v, excused %d", rep.Violations, rep.Excused)
	}
	// A paused job owes no slot while paused.
	ev, win = cleanEvidence()
	drop(ev, "medium", at(6))
	rep = check(ev, []fault{{Kind: faultPause, Job: "medium", Replica: -1, Start: at(5), Acked: at(5.1), Lifting: at(7), End: at(7.1)}}, win, 3)
	if len(rep.Violations) > 0 {
		t.Fatalf("a slot not run while paused was reported: %v", rep.Violations)
	}
	// A slot due 16 ms before the lift was sent, claimed after it: noted.
	ev, win = cleanEvidence()
	for i := range ev.log {
		if ev.log[i].Job == "medium" && ev.log[i].Slot.Equal(at(6)) {
			ev.log[i].At = ev.log[i].At.Add(20 * time.Millisecond)
		}
	}
	rep = check(ev, []fault{{Kind: faultPause, Job: "medium", Start: at(4), Acked: at(4.1), Lifting: at(6.016), End: at(6.02)}}, win, 3)
	if len(rep.Violations) > 0 || len(rep.Notes) != 1 {
		t.Fatalf("a slot claimed after the lift it was due just before: violations %v, notes %v", rep.Violations, rep.Notes)
	}
}

// restartAll is every replica stopped at stop and restarted, launched at
// launched and ready at ready: a fault with one restart per replica.
func restartAll(stop, launched, ready float64) fault {
	f := fault{Kind: faultRolling, Replica: -1, Start: at(stop), End: at(ready)}
	for i := range 3 {
		f.Restarts = append(f.Restarts, restart{Replica: i, Stop: at(stop), Launched: at(launched), Ready: at(ready)})
	}
	return f
}

// G5: medium (every 3 s, 10 s catch-up window) must run the latest slot
// missed while no replica could claim it, once a replica starts or reaches
// the database again within the window; nothing else catches up.
func TestCheckerCatchUp(t *testing.T) {
	tests := []struct {
		name   string
		faults []fault
		drop   []float64 // medium's slots never claimed
		lost   string    // the violation wanted, "" for none
	}{
		{"start-up while the slot is the latest", []fault{restartAll(4.5, 6.2, 6.8)}, []float64{6},
			"catch-up lost: medium slot 2026-11-30T06:00:06Z never ran, although r0 started at 06:00:06.200"},
		{"start-up after the next slot: not owed", []fault{restartAll(4.5, 6.2, 9.2)}, []float64{6}, ""},
		{"start-up beyond the window: not owed", []fault{restartAll(4.5, 16.5, 16.8)}, []float64{6, 9, 12, 15}, ""},
		{"only the latest of a run is owed", []fault{restartAll(2.5, 6.2, 6.8)}, []float64{3}, ""},
		{"database restart", []fault{{Kind: faultPGRestart, Replica: -1, Start: at(5.5), End: at(6.5)}}, []float64{6},
			"catch-up lost: medium slot 2026-11-30T06:00:06Z never ran, although r0 fired it while the database was unreachable (pgrestart"},
		{"database restart, a later slot inside it was the one owed", []fault{{Kind: faultPGRestart, Replica: -1, Start: at(2.5), End: at(7)}}, []float64{3}, ""},
		{"database restart, the slot before it", []fault{{Kind: faultPGRestart, Replica: -1, Start: at(6.5), End: at(7)}}, []float64{6}, ""},
		{"a partition of one replica while the others are frozen", []fault{
			{Kind: faultFreeze, Replica: 0, Start: at(3.5), End: at(4.2)}, // between runs: only r0 is hit
			{Kind: faultPartition, Replica: 1, Start: at(5.5), End: at(6.5)},
			{Kind: faultFreeze, Replica: 2, Start: at(3.5), End: at(4.2)},
		}, []float64{6}, "r1 fired it while the database was unreachable (partition"},
		// r0 frozen inside slow 06:00:05's run: the others wait from 7 s on.
		{"freeze: no catch-up", []fault{{Kind: faultFreeze, Replica: 0, Start: at(5.05), End: at(8)}}, []float64{9}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, win := cleanEvidence()
			for _, s := range tt.drop {
				drop(ev, "medium", at(s))
			}
			rep := check(ev, tt.faults, win, 3)
			if rep.Missed > 0 {
				t.Fatalf("the made-up history has missed slots, not excused ones: %v", rep.Violations)
			}
			if tt.lost == "" {
				if len(rep.Violations) > 0 || rep.CatchUpLost > 0 {
					t.Fatalf("want no violation, got %q", rep.Violations)
				}
				return
			}
			if rep.CatchUpLost != 1 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], tt.lost) {
				t.Fatalf("want one lost catch-up containing %q, got %d: %q", tt.lost, rep.CatchUpLost, rep.Violations)
			}
		})
	}
	// The same start-up, with the slot claimed by the catch-up: clean.
	ev, win := cleanEvidence()
	for i := range ev.runs {
		if ev.runs[i].Job == "medium" && ev.runs[i].Slot.Equal(at(6)) {
			ev.runs[i].CatchUp = true
		}
	}
	rep := check(ev, []fault{restartAll(4.5, 6.2, 6.8)}, win, 3)
	if len(rep.Violations) > 0 || rep.CaughtUp != 1 {
		t.Fatalf("a slot claimed by the start-up catch-up: violations %q, caught up %d", rep.Violations, rep.CaughtUp)
	}
	// A later slot taken by a catch-up releases the earlier one.
	ev, win = cleanEvidence()
	drop(ev, "medium", at(6))
	for i := range ev.runs {
		if ev.runs[i].Job == "medium" && ev.runs[i].Slot.Equal(at(9)) {
			ev.runs[i].CatchUp = true
		}
	}
	rep = check(ev, []fault{{Kind: faultPGRestart, Replica: -1, Start: at(5.5), End: at(6.5)}}, win, 3)
	if len(rep.Violations) > 0 {
		t.Fatalf("the catch-up went to a later slot, yet: %q", rep.Violations)
	}
}

// A rolling restart takes one replica down at a time: a slot missed while
// the two others were up is missed, not excused. So is one missed while a
// replica was frozen outside any transaction: nobody waited for it.
func TestCheckerHealthIsPerReplica(t *testing.T) {
	rolling := fault{Kind: faultRolling, Replica: -1, Start: at(2), End: at(5.5), Restarts: []restart{
		{Replica: 0, Stop: at(2), Launched: at(2.5), Ready: at(3)},
		{Replica: 1, Stop: at(3), Launched: at(4), Ready: at(4.5)},
		{Replica: 2, Stop: at(4.5), Launched: at(5), Ready: at(5.5)},
	}}
	// A freeze of r1, which had no run in flight (the made-up runs are r0's).
	idle := fault{Kind: faultFreeze, Replica: 1, Start: at(4.5), End: at(8.5)}
	// A freeze of r0 at 5.05, inside slow 06:00:05's run: the others' loops
	// wait from slow's next slot (10 s), so from 9 s. That lease's expiry
	// (8 s) holds up only their resume passes, which run beside the loop.
	busy := fault{Kind: faultFreeze, Replica: 0, Start: at(5.05), End: at(8.5)}
	tests := []struct {
		name     string
		fault    fault
		drop     string
		slot     float64
		sqlite   bool
		excused  bool
		missedAt string
	}{
		{"rolling: two replicas up", rolling, "fast", 6, false, false, "fast@06:00:06"},
		{"rolling: every replica down at once (old timeline)", fault{Kind: faultRolling, Replica: -1, Start: at(2), End: at(5.5)}, "fast", 6, false, true, ""},
		{"freeze without a run in flight", idle, "fast", 6, false, false, "fast@06:00:06"},
		{"freeze inside a transaction, before the others wait", busy, "fast", 6, false, false, "fast@06:00:06"},
		{"freeze inside a transaction, its lease expired: only resume passes wait", busy, "fast", 8, false, false, "fast@06:00:08"},
		{"freeze inside a transaction, while the others wait", busy, "fast", 10, false, true, ""},
		{"freeze on SQLite: every writer waits", idle, "fast", 6, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, win := cleanEvidence()
			ev.singleWriter = tt.sqlite
			drop(ev, tt.drop, at(tt.slot))
			rep := check(ev, []fault{tt.fault}, win, 3)
			if tt.excused {
				if len(rep.Violations) > 0 || rep.Excused != 1 {
					t.Fatalf("want the slot excused: violations %q, excused %d", rep.Violations, rep.Excused)
				}
				return
			}
			if rep.Missed != 1 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], tt.missedAt) {
				t.Fatalf("want %s missed, got missed %d: %q", tt.missedAt, rep.Missed, rep.Violations)
			}
		})
	}
}

// A claimed slot must end: one left running after the settle phase is a
// violation; one that failed is counted, and a violation only when it left
// neither its effect nor a recorded reason.
func TestCheckerReportsUnfinishedSlots(t *testing.T) {
	setStatus := func(ev *evidence, job string, slot time.Time, status string) {
		for i := range ev.slots {
			if ev.slots[i].Job == job && ev.slots[i].Slot.Equal(slot) {
				ev.slots[i].Status = status
			}
		}
	}
	setRun := func(ev *evidence, job string, slot time.Time, success bool, err string) {
		for i := range ev.runs {
			if ev.runs[i].Job == job && ev.runs[i].Slot.Equal(slot) {
				ev.runs[i].Success, ev.runs[i].Error = success, err
			}
		}
	}
	dropEffect := func(ev *evidence, job string, slot time.Time) {
		ledger := ev.ledger[:0]
		for _, e := range ev.ledger {
			if e.Job != job || !e.Slot.Equal(slot) {
				ledger = append(ledger, e)
			}
		}
		ev.ledger = ledger
	}

	// A run left running never committed its effect (with complete(), one
	// that did completed its slot).
	ev, win := cleanEvidence()
	setStatus(ev, "slow", at(5), "running")
	dropEffect(ev, "slow", at(5))
	rep := check(ev, nil, win, 3)
	if rep.LeftRunning != 1 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "slot left running after the settle phase: slow slot 2026-11-30T06:00:05Z") {
		t.Fatalf("a slot left running: left %d, violations %q", rep.LeftRunning, rep.Violations)
	}
	// Claimed while the replicas were being stopped: not judged.
	ev, win = cleanEvidence()
	ev.slots = append(ev.slots, slotRow{Job: "fast", Slot: at(12), Status: "running", Generation: 900, Attempts: 1})
	if rep := check(ev, nil, win, 3); len(rep.Violations) > 0 {
		t.Fatalf("a slot claimed after the window: %q", rep.Violations)
	}

	// Failed, with its reason recorded: counted, not failed.
	ev, win = cleanEvidence()
	setStatus(ev, "medium", at(6), "failed")
	setRun(ev, "medium", at(6), false, `job "medium": command: "/bin/sh" exited with status 4`)
	dropEffect(ev, "medium", at(6))
	rep = check(ev, nil, win, 3)
	if rep.Failed != 1 || len(rep.Violations) > 0 || len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "exited with status 4") {
		t.Fatalf("a failed slot with its reason: failed %d, violations %q, notes %q", rep.Failed, rep.Violations, rep.Notes)
	}
	// Failed, no effect, no reason anywhere: a silent loss.
	ev, win = cleanEvidence()
	setStatus(ev, "medium", at(6), "failed")
	setRun(ev, "medium", at(6), false, "")
	dropEffect(ev, "medium", at(6))
	rep = check(ev, nil, win, 3)
	if rep.Failed != 1 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "slot failed without its effect and without a recorded reason: medium slot 2026-11-30T06:00:06Z") {
		t.Fatalf("a silently failed slot: failed %d, violations %q", rep.Failed, rep.Violations)
	}
	// An earlier attempt's row does not say why the last one failed: a
	// replica's record of attempt 1, found dead, beside a last attempt
	// that failed with no row of its own, is a silent loss all the same.
	ev, win = cleanEvidence()
	for i := range ev.slots {
		if ev.slots[i].Job == "medium" && ev.slots[i].Slot.Equal(at(6)) {
			ev.slots[i].Status, ev.slots[i].Generation, ev.slots[i].Attempts = "failed", 700, 2
		}
	}
	setRun(ev, "medium", at(6), false, "interrupted on attempt 1 of 3: the run by r1 at generation 5 never recorded its end")
	dropEffect(ev, "medium", at(6))
	rep = check(ev, nil, win, 3)
	if rep.Failed != 1 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "slot failed without its effect and without a recorded reason: medium slot 2026-11-30T06:00:06Z generation 700") {
		t.Fatalf("a last attempt failed silently after an interrupted one: failed %d, violations %q", rep.Failed, rep.Violations)
	}
	// A slot whose attempt 1 was found dead (its row: interrupted, not a
	// success) and whose attempt 2 completed it: one slot, completed once,
	// nothing to report.
	ev, win = cleanEvidence()
	for i := range ev.runs {
		if ev.runs[i].Job == "medium" && ev.runs[i].Slot.Equal(at(6)) {
			dead := ev.runs[i]
			dead.Generation, dead.Owner, dead.Success, dead.Reason = 650, "r1", false, "interrupted"
			dead.Error = "interrupted on attempt 1 of 3: the run by r1 at generation 650 never recorded its end (its lease expired without being renewed)"
			ev.runs = append(ev.runs, dead)
		}
	}
	if rep = check(ev, nil, win, 3); len(rep.Violations) > 0 || rep.Failed != 0 || rep.TakenOverRuns != 0 {
		t.Fatalf("a slot completed by attempt 2 after attempt 1 was found dead: violations %q, failed %d, taken over %d", rep.Violations, rep.Failed, rep.TakenOverRuns)
	}
	// Failed after its effect committed (a later attempt refused), under
	// fence() alone, where the effect commits before the slot's completion:
	// counted. (With complete() it is a violation: TestCheckerReportsEachViolation.)
	ev, win = cleanEvidence()
	ev.write = writeFence
	setStatus(ev, "medium", at(6), "failed")
	setRun(ev, "medium", at(6), false, "")
	rep = check(ev, nil, win, 3)
	if rep.Failed != 1 || len(rep.Violations) > 0 {
		t.Fatalf("a failed slot with its effect: failed %d, violations %q", rep.Failed, rep.Violations)
	}
}

// setSlot sets the status of one slot's row and, when gen is not 0, the
// generation and attempts that hold it.
func setSlot(ev *evidence, job string, slot time.Time, status string, gen int64, attempts int) {
	for i := range ev.slots {
		if ev.slots[i].Job == job && ev.slots[i].Slot.Equal(slot) {
			ev.slots[i].Status = status
			if gen != 0 {
				ev.slots[i].Generation, ev.slots[i].Attempts = gen, attempts
			}
		}
	}
}

// With complete() a run's effect and its slot's completion commit together,
// and its serve may stop before recording the run: the slot stays
// completed, is not resumed, and has no run row. That is the point of
// complete(), not a fault: counted, not failed.
func TestCheckerAcceptsASlotCompletedByItsTransactionAlone(t *testing.T) {
	ev, win := cleanEvidence()
	runs := ev.runs[:0]
	for _, r := range ev.runs {
		if r.Job != "slow" || !r.Slot.Equal(at(5)) {
			runs = append(runs, r)
		}
	}
	ev.runs = runs
	rep := check(ev, nil, win, 3)
	if len(rep.Violations) > 0 || rep.Unrecorded != 1 || rep.Completed != rep.SlotsDue {
		t.Fatalf("a slot completed by complete() whose run was never recorded: violations %q, unrecorded %d, %s", rep.Violations, rep.Unrecorded, rep)
	}
}

// The designs of the comparison that fence without complete(): with the
// idempotency guard, a retry of a slot whose effect committed finds it
// ("exists") and completes the slot under its own generation; without it,
// the retry writes the effect again, a duplicate. Neither is a completion
// without its effect under complete()'s rule, which does not apply.
func TestCheckerFenceWithoutComplete(t *testing.T) {
	// slow 06:00:10, generation g: its serve stopped after the COMMIT;
	// generation g+1 resumed it as attempt 2 and completed it.
	const resumed = 1 << 20 // above every generation of cleanEvidence
	retried := func(ev *evidence) {
		var g int64
		for _, e := range ev.ledger {
			if e.Job == "slow" && e.Slot.Equal(at(10)) {
				g = e.Generation
			}
		}
		ev.history = append(ev.history, leaseChange{Name: "job:slow", Owner: "r1", Generation: resumed, ExpiresAt: at(14.5), ChangedAt: at(11.5)})
		ev.log = append(ev.log, logLine{Kind: "start", Job: "slow", Lease: "job:slow", Slot: at(10), Generation: resumed, Attempt: 2, Replica: "r1", At: at(11.6)})
		ev.runs = dropRuns(ev.runs, "slow", at(10), g)
		ev.runs = append(ev.runs, runRow{Job: "slow", Slot: at(10), Generation: resumed, Owner: "r1", Success: true})
		setSlot(ev, "slow", at(10), "completed", resumed, 2)
	}
	ev, win := cleanEvidence()
	ev.write = writeFenceOnce
	retried(ev)
	ev.log = append(ev.log, logLine{Kind: "exists", Job: "slow", Lease: "job:slow", Slot: at(10), Generation: resumed, Attempt: 2, Replica: "r1", At: at(12.7)})
	rep := check(ev, nil, win, 3)
	if len(rep.Violations) > 0 || rep.Retries != 1 || rep.DoubleRuns != 1 {
		t.Fatalf("fence-once, a retry that found the effect: violations %q, %s", rep.Violations, rep)
	}
	// The same evidence under complete(): the effect's generation did not
	// complete its slot.
	ev.write = writeComplete
	rep = check(ev, nil, win, 3)
	if len(rep.Violations) != 2 || !strings.Contains(strings.Join(rep.Violations, "\n"), "effect committed without its slot's completion: slow slot 2026-11-30T06:00:10Z") {
		t.Fatalf("the fence-once history read as complete()'s: want the effect without its completion and the unguarded exists, got %q", rep.Violations)
	}

	ev, win = cleanEvidence()
	ev.write = writeFence
	retried(ev)
	ev.ledger = append(ev.ledger, effect{Job: "slow", Lease: "job:slow", Slot: at(10), Generation: resumed, Attempt: 2, Replica: "r1", CommittedAt: at(12.7)})
	rep = check(ev, nil, win, 3)
	if rep.Duplicates != 1 || rep.StaleCommit != 0 || len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "duplicate effect: slow slot 2026-11-30T06:00:10Z committed 2 times") {
		t.Fatalf("fence, a retry that wrote the effect again: want one duplicate, got %q, %s", rep.Violations, rep)
	}
}

// dropRuns drops the run rows of one claim.
func dropRuns(runs []runRow, job string, slot time.Time, gen int64) []runRow {
	out := runs[:0]
	for _, r := range runs {
		if r.Job != job || !r.Slot.Equal(slot) || r.Generation != gen {
			out = append(out, r)
		}
	}
	return out
}

// drop removes every trace of one slot's run, as if it was never claimed.
func drop(ev *evidence, job string, slot time.Time) {
	keep := func(j string, s time.Time) bool { return j != job || !s.Equal(slot) }
	ledger := ev.ledger[:0]
	for _, e := range ev.ledger {
		if keep(e.Job, e.Slot) {
			ledger = append(ledger, e)
		}
	}
	ev.ledger = ledger
	slots := ev.slots[:0]
	for _, s := range ev.slots {
		if keep(s.Job, s.Slot) {
			slots = append(slots, s)
		}
	}
	ev.slots = slots
	runs := ev.runs[:0]
	for _, r := range ev.runs {
		if keep(r.Job, r.Slot) {
			runs = append(runs, r)
		}
	}
	ev.runs = runs
	log := ev.log[:0]
	for _, l := range ev.log {
		if keep(l.Job, l.Slot) {
			log = append(log, l)
		}
	}
	ev.log = log
}

func TestCheckerCountsRunsRecordedAfterATakeover(t *testing.T) {
	ev, win := cleanEvidence()
	ev.runs = append(ev.runs, runRow{Job: "slow", Slot: at(5), Generation: 77, Success: true})
	rep := check(ev, nil, win, 3)
	if len(rep.Violations) > 0 || rep.TakenOverRuns != 1 || len(rep.Notes) != 1 {
		t.Fatalf("a success row of a deposed generation: violations %v, taken over %d, notes %v", rep.Violations, rep.TakenOverRuns, rep.Notes)
	}
}

func TestCheckerReportsALogFlood(t *testing.T) {
	dir := t.TempDir()
	quiet := strings.Repeat(`{"level":"INFO","msg":"cronfence: serving"}`+"\n", 10)
	loud := strings.Repeat(`{"level":"WARN","msg":"cronfence: could not read the database clock"}`+"\n", maxLogLines+1)
	if err := os.WriteFile(filepath.Join(dir, "r0.1.stderr"), []byte(quiet), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r1.2.stderr"), []byte(loud), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := &report{}
	if err := checkLogFlood(dir, rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "r1.2.stderr") || !strings.Contains(rep.Violations[0], "could not read the database clock") {
		t.Fatalf("want one log flood naming r1.2.stderr and its message, got %q", rep.Violations)
	}
}
