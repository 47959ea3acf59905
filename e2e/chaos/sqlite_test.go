package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// sqliteNowMicros is the process clock in Unix microseconds, as SQL: on
// SQLite every process is on one host, so this is the database clock, in
// cronfence's unit.
const sqliteNowMicros = `CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)`

// sqliteSchema is chaosSchema for a SQLite file. A SQLite transaction that
// writes holds the file's only write lock from BEGIN IMMEDIATE to COMMIT,
// so an insert's time is its commit's, as far as any other writer can tell.
const sqliteSchema = `
CREATE TABLE chaos_ledger (
    id          INTEGER PRIMARY KEY,
    job         TEXT    NOT NULL,
    lease       TEXT    NOT NULL,
    slot        TEXT    NOT NULL,
    generation  INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    replica     TEXT    NOT NULL,
    inserted_at INTEGER NOT NULL
);
CREATE TABLE chaos_lease_history (
    id         INTEGER PRIMARY KEY,
    name       TEXT    NOT NULL,
    owner      TEXT    NOT NULL,
    generation INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
);
CREATE TRIGGER chaos_lease_insert AFTER INSERT ON cronfence_leases BEGIN
    INSERT INTO chaos_lease_history (name, owner, generation, expires_at, changed_at)
    VALUES (NEW.name, NEW.owner, NEW.generation, NEW.expires_at, ` + sqliteNowMicros + `);
END;
CREATE TRIGGER chaos_lease_update AFTER UPDATE ON cronfence_leases BEGIN
    INSERT INTO chaos_lease_history (name, owner, generation, expires_at, changed_at)
    VALUES (NEW.name, NEW.owner, NEW.generation, NEW.expires_at, ` + sqliteNowMicros + `);
END;
`

// sqliteJobScript is jobScript on the SQLite file, with sqlite3. The write
// lock is BEGIN IMMEDIATE's (the file's only one, held to COMMIT, as
// Run.Fence takes it); the fence and complete() are the statements migration
// 003 gives clients other than the Go package: an insert into the views
// cronfence_fence and cronfence_complete, which abort with "cronfence: CF001
// …" when the generation no longer holds the lease. As on PostgreSQL,
// complete() is the transaction's last statement, after the hold.
const sqliteJobScript = scriptHead + `now="` + sqliteNowMicros + `"
fence="INSERT INTO cronfence_fence VALUES ('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
complete="INSERT INTO cronfence_complete VALUES ('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
once="WHERE NOT EXISTS (SELECT 1 FROM chaos_ledger WHERE job = '$CRONFENCE_JOB' AND slot = '$CRONFENCE_SLOT')"
` + writeModes + `out=$(sqlite3 -bail "$CHAOS_SQLITE" 2>&1 <<SQL
.timeout 20000
BEGIN IMMEDIATE;
$fence
INSERT INTO chaos_ledger (job, lease, slot, generation, attempt, replica, inserted_at)
SELECT '$CRONFENCE_JOB', '$CRONFENCE_LEASE', '$CRONFENCE_SLOT', $CRONFENCE_GENERATION, $CRONFENCE_ATTEMPT, '$CHAOS_REPLICA', $now
 $once;
SELECT 'inserted=' || changes();
.shell sleep $CHAOS_HOLD
$complete
COMMIT;
SQL
)
` + scriptTail

func (h *harness) setUpSQLite() error {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		return fmt.Errorf("the SQLite chaos jobs need sqlite3: apt-get install sqlite3")
	}
	h.sqlite = filepath.Join(h.dir, "cronfence.db")
	if out, err := exec.Command(h.bin, "migrate", "--sqlite", h.sqlite).CombinedOutput(); err != nil {
		return fmt.Errorf("cronfence migrate: %w\n%s", err, out)
	}
	if _, err := h.sqliteQuery(context.Background(), sqliteSchema); err != nil {
		return fmt.Errorf("creating the chaos tables: %w", err)
	}
	var err error
	h.config, err = writeConfig(h.dir, sqliteJobScript, h.write == writeComplete && !h.breakFencing)
	return err
}

// sqliteRow is one row of sqlite3 -json.
type sqliteRow map[string]any

func (r sqliteRow) str(col string) string { s, _ := r[col].(string); return s }

func (r sqliteRow) int(col string) int64 {
	n, _ := r[col].(json.Number)
	v, _ := strconv.ParseInt(n.String(), 10, 64)
	return v
}

func (r sqliteRow) micros(col string) time.Time { return time.UnixMicro(r.int(col)) }

// sqliteQuery runs SQL on the file with the sqlite3 shell and decodes its
// JSON output. The harness reads through the same kind of client as the
// jobs, and the e2e module needs no SQLite driver of its own.
func (h *harness) sqliteQuery(ctx context.Context, sql string) ([]sqliteRow, error) {
	cmd := exec.CommandContext(ctx, "sqlite3", "-bail", "-json", h.sqlite)
	cmd.Stdin = strings.NewReader(".timeout 20000\n" + sql)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sqlite3 %s: %w: %s", h.sqlite, err, stderr.String())
	}
	var rows []sqliteRow
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for dec.More() {
		var part []sqliteRow
		if err := dec.Decode(&part); err != nil {
			return nil, fmt.Errorf("sqlite3 output: %w", err)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}

func (h *harness) gatherSQLite(ctx context.Context) (*evidence, error) {
	ev := &evidence{singleWriter: true}
	rows, err := h.sqliteQuery(ctx, `SELECT job, lease, slot, generation, attempt, replica, inserted_at FROM chaos_ledger ORDER BY id`)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		slot, err := time.Parse(time.RFC3339Nano, r.str("slot"))
		if err != nil {
			return nil, fmt.Errorf("ledger slot: %w", err)
		}
		ev.ledger = append(ev.ledger, effect{Job: r.str("job"), Lease: r.str("lease"), Slot: slot, Generation: r.int("generation"),
			Attempt: int(r.int("attempt")), Replica: r.str("replica"), CommittedAt: r.micros("inserted_at")})
	}
	if rows, err = h.sqliteQuery(ctx, `SELECT name, owner, generation, expires_at, changed_at FROM chaos_lease_history ORDER BY id`); err != nil {
		return nil, err
	}
	for _, r := range rows {
		ev.history = append(ev.history, leaseChange{Name: r.str("name"), Owner: r.str("owner"), Generation: r.int("generation"),
			ExpiresAt: r.micros("expires_at"), ChangedAt: r.micros("changed_at")})
	}
	if rows, err = h.sqliteQuery(ctx, `SELECT job, slot, status, generation, attempts FROM cronfence_slots ORDER BY job, slot`); err != nil {
		return nil, err
	}
	for _, r := range rows {
		ev.slots = append(ev.slots, slotRow{Job: r.str("job"), Slot: r.micros("slot"), Status: r.str("status"),
			Generation: r.int("generation"), Attempts: int(r.int("attempts"))})
	}
	if rows, err = h.sqliteQuery(ctx, `SELECT job, slot, generation, owner, catch_up, success, skipped, reason, error FROM cronfence_runs WHERE slot IS NOT NULL AND manual = 0 ORDER BY id`); err != nil {
		return nil, err
	}
	for _, r := range rows {
		ev.runs = append(ev.runs, runRow{Job: r.str("job"), Slot: r.micros("slot"), Generation: r.int("generation"), Owner: r.str("owner"),
			CatchUp: r.int("catch_up") == 1, Success: r.int("success") == 1, Skipped: r.int("skipped") == 1, Reason: r.str("reason"), Error: r.str("error")})
	}
	return ev, h.readLogs(ev)
}
