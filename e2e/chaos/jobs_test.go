package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// leaseTTL is every job's lease TTL: short, so a frozen or partitioned
// replica loses its leases within seconds and the faults bite.
const leaseTTL = 3 * time.Second

// adminToken is the bearer token the replicas' admin API accepts.
const adminToken = "chaos-admin-token"

// chaosJob is one job of the run. Its schedule is every Every seconds,
// aligned to the minute, so the checker can list its slots.
type chaosJob struct {
	Name  string
	Every int           // seconds; divides 60
	Work  time.Duration // the command's sleep before its transaction
	Hold  time.Duration // how long the transaction stays open after its insert
	// CatchUp is the job's catch-up window (0: none).
	CatchUp time.Duration
}

// jobs run on every replica. "slow" keeps its transaction open for a second
// after its insert, so a freeze often lands inside it, before complete():
// the case fencing exists for (the deposed writer wakes, complete() refuses
// it, and its insert is rolled back).
var jobs = []chaosJob{
	{Name: "fast", Every: 2, Work: 0, Hold: 0},
	{Name: "medium", Every: 3, Work: 300 * time.Millisecond, Hold: 200 * time.Millisecond, CatchUp: 10 * time.Second},
	{Name: "slow", Every: 5, Work: 500 * time.Millisecond, Hold: time.Second},
}

func jobByName(name string) (chaosJob, bool) {
	for _, j := range jobs {
		if j.Name == name {
			return j, true
		}
	}
	return chaosJob{}, false
}

// writeMode is how the job's transaction makes its effect single
// (CHAOS_WRITE in the job's environment).
//
// The suite's jobs use complete() by default: it is what cronfence tells
// users to do, and the only one that keeps a plain insert single under
// every fault the suite injects. fence() alone refuses a deposed writer,
// but a run whose COMMIT landed and whose process stopped before serve
// recorded the run's end (killed, frozen past its lease, cut off) is
// resumed, and its effect written again: issue 10. The other modes are
// kept for the comparison of designs (make compare), which shows that.
type writeMode string

const (
	// writeComplete: a plain insert, then complete(lease, generation) as
	// the transaction's last statement before COMMIT, which fences and
	// marks the slot completed in the same transaction: the effect and the
	// slot's completion commit together, and a completed slot is never
	// resumed. So every committed insert is an effect, and a slot with two
	// is a violation under every fault. The default.
	writeComplete writeMode = "complete"
	// writeFence: fence(lease, generation) first, then a plain insert; the
	// slot is completed only when serve records the run's end, so a run
	// whose commit landed before its process stopped is run again.
	writeFence writeMode = "fence"
	// writeFenceOnce: fence() first, then an insert guarded by the slot's
	// idempotency key (WHERE NOT EXISTS): the remedy before complete(). A
	// retry after a commit finds the effect and adds nothing (logged
	// "exists"); the guard cannot see a concurrent uncommitted insert,
	// which is what the fence is for.
	writeFenceOnce writeMode = "fence-once"
)

// jobScript is every job's command. It logs its start, works, then writes
// the effect in one psql transaction as CHAOS_WRITE says (see writeMode),
// with a hold: the transaction stays open after the insert, so a freeze
// often lands inside it. CHAOS_BREAK_FENCING=1 leaves out the fence and
// complete() whatever the mode: the deliberately broken build the checker
// must catch (TestChaosCatchesBrokenFencing), and how the weaker designs
// (weakcron, which have no generation) run. The lease is $CRONFENCE_LEASE,
// the exact name serve gives the run, never one built from the job's name.
//
// Outcomes are logged: commit, exists (fence-once only: a retry found the
// slot's effect committed), refused (the fence or complete() said no:
// CF001), error.
//
// Log lines: KIND JOB LEASE SLOT GENERATION ATTEMPT REPLICA PID UNIXTIME.
const jobScript = scriptHead + `fence="SELECT cronfence.fence('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
complete="SELECT cronfence.complete('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);"
once="WHERE NOT EXISTS (SELECT 1 FROM chaos.ledger WHERE job = '$CRONFENCE_JOB' AND slot = '$CRONFENCE_SLOT')"
` + writeModes + `out=$(psql -X -qAt -v ON_ERROR_STOP=1 "$CHAOS_DB_URL" 2>&1 <<SQL
BEGIN;
$fence
WITH ins AS (
    INSERT INTO chaos.ledger (job, lease, slot, generation, attempt, replica)
    SELECT '$CRONFENCE_JOB', '$CRONFENCE_LEASE', '$CRONFENCE_SLOT', $CRONFENCE_GENERATION, $CRONFENCE_ATTEMPT, '$CHAOS_REPLICA'
    $once
    RETURNING 1)
SELECT 'inserted=' || count(*) FROM ins;
SELECT pg_sleep($CHAOS_HOLD);
$complete
COMMIT;
SQL
)
` + scriptTail

// writeModes keeps, of the statements fence, complete and once the script
// defined, those CHAOS_WRITE and CHAOS_BREAK_FENCING ask for.
const writeModes = `case "${CHAOS_WRITE:-complete}" in
complete) fence="" once="" ;;
fence) complete="" once="" ;;
fence-once) complete="" ;;
*) echo "CHAOS_WRITE=$CHAOS_WRITE: want complete, fence or fence-once" >&2; exit 5 ;;
esac
if [ "${CHAOS_BREAK_FENCING:-}" = 1 ]; then fence="" complete=""; fi
`

// scriptHead logs the start and does the work; the body sets out from its
// database client and scriptTail logs the outcome.
const scriptHead = `#!/bin/sh
set -u
note() { echo "$1 $CRONFENCE_JOB $CRONFENCE_LEASE $CRONFENCE_SLOT $CRONFENCE_GENERATION $CRONFENCE_ATTEMPT $CHAOS_REPLICA $$ $(date +%s.%N)" >> "$CHAOS_LOG"; }
note start
sleep "$CHAOS_WORK"
`

const scriptTail = `rc=$?
case "$rc:$out" in
0:*inserted=1*) note commit ;;
0:*inserted=0*) note exists ;;
*CF001*|*"no longer held"*) note refused; exit 3 ;;
*) note error; echo "$out" >&2; exit 4 ;;
esac
`

// writeConfig writes the job script (jobScript or sqliteJobScript) and the serve config into dir and
// returns the config's path.
func writeConfig(dir, jobScript string, inTx bool) (string, error) {
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte(jobScript), 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tokens:\n  - name: chaos\n    role: admin\n    token: %s\n", adminToken)
	fmt.Fprintf(&b, "defaults:\n  lease_ttl: %s\n  timeout: 30s\n  max_attempts: 5\n", leaseTTL)
	if inTx {
		// The job completes its slot in its transaction (complete()), and
		// only that completion counts: a COMMIT answered by a server that
		// then loses it (a failover) is not a completed slot.
		b.WriteString("  completes_in_tx: true\n")
	}
	b.WriteString("jobs:\n")
	for _, j := range jobs {
		fmt.Fprintf(&b, "  - name: %s\n    schedule: \"*/%d * * * * *\"\n    command: [\"/bin/sh\", %q]\n", j.Name, j.Every, script)
		if j.CatchUp > 0 {
			fmt.Fprintf(&b, "    catch_up_window: %s\n", j.CatchUp)
		}
		fmt.Fprintf(&b, "    env:\n      CHAOS_WORK: %q\n      CHAOS_HOLD: %q\n", seconds(j.Work), seconds(j.Hold))
	}
	path := filepath.Join(dir, "cronfence.yaml")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
