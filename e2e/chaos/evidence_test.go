package chaos

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// evidence is everything the checker reads after a run.
type evidence struct {
	ledger  []effect
	history []leaseChange
	slots   []slotRow
	runs    []runRow
	log     []logLine
	// singleWriter: the store has one write lock for everything (SQLite),
	// so a writer frozen inside its transaction blocks every claim at once.
	singleWriter bool
	// fenceless: the job's transaction takes no lease row (fencing broken
	// on purpose, or a weaker design without leases), so a frozen writer
	// blocks nobody's claim on PostgreSQL.
	fenceless bool
	// write is how the job wrote its effect (CHAOS_WRITE).
	write writeMode
}

// completes reports whether the job's transaction ended with complete(),
// so that each effect committed with its slot's completion, by the same
// generation: writeComplete, with fencing not broken.
func (ev *evidence) completes() bool { return ev.write == writeComplete && !ev.fenceless }

type effect struct {
	Job         string
	Lease       string // the lease it was written under ($CRONFENCE_LEASE)
	Slot        time.Time
	Generation  int64
	Attempt     int
	Replica     string
	CommittedAt time.Time
}

type leaseChange struct {
	Name       string
	Owner      string
	Generation int64
	ExpiresAt  time.Time
	ChangedAt  time.Time
}

type slotRow struct {
	Job        string
	Slot       time.Time
	Status     string
	Generation int64
	Attempts   int
}

type runRow struct {
	Job        string
	Slot       time.Time
	Generation int64
	Owner      string
	CatchUp    bool // the claim was a catch-up (start-up or after a store outage)
	Success    bool
	Skipped    bool
	Reason     string
	Error      string
}

// logLine is one line of a replica's job log: KIND JOB LEASE SLOT
// GENERATION ATTEMPT REPLICA PID UNIXTIME.
type logLine struct {
	Kind       string // start, commit, exists (fence-once only), refused, error
	Job        string
	Lease      string
	Slot       time.Time
	Generation int64
	Attempt    int
	Replica    string
	At         time.Time
}

func (h *harness) gather(ctx context.Context) (*evidence, error) {
	if h.sqlite != "" {
		return h.gatherSQLite(ctx)
	}
	if h.mysql != nil {
		return h.gatherMySQL(ctx)
	}
	ev := &evidence{}
	err := h.query(ctx, `SELECT job, lease, slot, generation, attempt, replica, coalesce(committed_at, inserted_at) FROM chaos.ledger ORDER BY id`,
		func(scan func(...any) error) error {
			var e effect
			if err := scan(&e.Job, &e.Lease, &e.Slot, &e.Generation, &e.Attempt, &e.Replica, &e.CommittedAt); err != nil {
				return err
			}
			ev.ledger = append(ev.ledger, e)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading the ledger: %w", err)
	}
	err = h.query(ctx, `SELECT name, owner, generation, expires_at, changed_at FROM chaos.lease_history ORDER BY id`,
		func(scan func(...any) error) error {
			var c leaseChange
			if err := scan(&c.Name, &c.Owner, &c.Generation, &c.ExpiresAt, &c.ChangedAt); err != nil {
				return err
			}
			ev.history = append(ev.history, c)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading the lease history: %w", err)
	}
	err = h.query(ctx, `SELECT job, slot, status, generation, attempts FROM cronfence.slots ORDER BY job, slot`,
		func(scan func(...any) error) error {
			var s slotRow
			if err := scan(&s.Job, &s.Slot, &s.Status, &s.Generation, &s.Attempts); err != nil {
				return err
			}
			ev.slots = append(ev.slots, s)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading slots: %w", err)
	}
	err = h.query(ctx, `SELECT job, slot, generation, owner, catch_up, success, skipped, reason, error FROM cronfence.runs WHERE slot IS NOT NULL AND NOT manual ORDER BY id`,
		func(scan func(...any) error) error {
			var r runRow
			if err := scan(&r.Job, &r.Slot, &r.Generation, &r.Owner, &r.CatchUp, &r.Success, &r.Skipped, &r.Reason, &r.Error); err != nil {
				return err
			}
			ev.runs = append(ev.runs, r)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	return ev, h.readLogs(ev)
}

// readLogs adds every replica's job log to ev.
func (h *harness) readLogs(ev *evidence) error {
	for _, r := range h.replicas {
		lines, err := readLog(r.log)
		if err != nil {
			return err
		}
		ev.log = append(ev.log, lines...)
	}
	return nil
}

func readLog(path string) ([]logLine, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []logLine
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fs := strings.Fields(sc.Text())
		if len(fs) != 9 {
			// A replica killed mid-write leaves a partial last line.
			continue
		}
		l := logLine{Kind: fs[0], Job: fs[1], Lease: fs[2], Replica: fs[6]}
		var err error
		if l.Slot, err = time.Parse(time.RFC3339Nano, fs[3]); err != nil {
			return nil, fmt.Errorf("%s:%d: slot: %w", path, n, err)
		}
		if l.Generation, err = strconv.ParseInt(fs[4], 10, 64); err != nil {
			return nil, fmt.Errorf("%s:%d: generation: %w", path, n, err)
		}
		if l.Attempt, err = strconv.Atoi(fs[5]); err != nil {
			return nil, fmt.Errorf("%s:%d: attempt: %w", path, n, err)
		}
		secs, err := strconv.ParseFloat(fs[8], 64)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: time: %w", path, n, err)
		}
		l.At = time.Unix(0, int64(secs*1e9))
		out = append(out, l)
	}
	return out, sc.Err()
}
