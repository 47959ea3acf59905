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
// under a generation of its own taken at the slot.
func cleanEvidence() (*evidence, window) {
	ev := &evidence{}
	gen := int64(0)
	for _, j := range jobs {
		step := time.Duration(j.Every) * time.Second
		for s := t0.Add(step); !s.After(at(10)); s = s.Add(step) {
			gen++
			ev.history = append(ev.history, leaseChange{Name: "job:" + j.Name, Owner: "r0", Generation: gen, ExpiresAt: s.Add(leaseTTL), ChangedAt: s})
			ev.log = append(ev.log,
				logLine{Kind: "start", Job: j.Name, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", At: s.Add(10 * time.Millisecond)},
				logLine{Kind: "commit", Job: j.Name, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", At: s.Add(100 * time.Millisecond)})
			ev.ledger = append(ev.ledger, effect{Job: j.Name, Slot: s, Generation: gen, Attempt: 1, Replica: "r0", CommittedAt: s.Add(90 * time.Millisecond)})
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
			ev.log = append(ev.log, logLine{Kind: "start", Job: "slow", Slot: slow5, Generation: 99, At: at(6)})
			ev.ledger = append(ev.ledger, effect{Job: "slow", Slot: slow5, Generation: 99, CommittedAt: at(6.5)})
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
			ev.ledger = append(ev.ledger, effect{Job: "fast", Slot: at(100), Generation: 500, CommittedAt: at(100)})
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
			ev.log = append(ev.log, logLine{Kind: "refused", Job: "slow", Slot: slow5, Generation: gen, At: at(5.5)})
			return nil
		}, "fence refused without a lease loss"},
		{"paused job ran", func(ev *evidence) []fault {
			return []fault{{Kind: faultPause, Job: "slow", Start: at(4), Acked: at(4.1), Lifting: at(9), End: at(9.1)}}
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
			ev.log = append(ev.log, logLine{Kind: "start", Job: "fast", Slot: at(2), Generation: ev.ledger[0].Generation, At: at(2.5)})
			return nil
		}, "two handlers started for one claim"},
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
	drop(ev, "medium", at(6))
	// The database restart makes every replica unhealthy around it.
	rep := check(ev, []fault{{Kind: faultPGRestart, Replica: -1, Start: at(5.5), End: at(6.5)}}, win, 3)
	if len(rep.Violations) > 0 || rep.Excused != 1 {
		t.Fatalf("a slot lost to a database restart: violations %v, excused %d", rep.Violations, rep.Excused)
	}
	// A paused job owes no slot while paused.
	rep = check(ev, []fault{{Kind: faultPause, Job: "medium", Replica: -1, Start: at(5), Acked: at(5.1), Lifting: at(7), End: at(7.1)}}, win, 3)
	if len(rep.Violations) > 0 {
		t.Fatalf("a slot not run while paused was reported: %v", rep.Violations)
	}
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
