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

// jobs run on every replica. "slow" keeps its transaction open for a second,
// so a freeze often lands inside it: the case fencing exists for.
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

// jobScript is every job's command. It logs its start, works, then writes
// the effect in one transaction: the fence (unless CHAOS_BREAK_FENCING=1,
// the deliberately broken build the checker must catch), an insert guarded
// by the slot's idempotency (a retry after a crash between COMMIT and the
// slot's completion finds the effect and adds nothing; without fencing the
// guard cannot see a concurrent uncommitted insert), and a hold. Outcomes
// are logged: commit, exists, refused (the fence said no), error.
// CHAOS_PLAIN_INSERT=1 drops the idempotency guard, for the comparison of
// designs: then only the guard around the job keeps its effect single.
//
// Log lines: KIND JOB SLOT GENERATION ATTEMPT REPLICA PID UNIXTIME.
const jobScript = scriptHead + `fence="SELECT cronfence.fence('job:$CRONFENCE_JOB', $CRONFENCE_GENERATION);"
if [ "${CHAOS_BREAK_FENCING:-}" = 1 ]; then fence=""; fi
once="WHERE NOT EXISTS (SELECT 1 FROM chaos.ledger WHERE job = '$CRONFENCE_JOB' AND slot = '$CRONFENCE_SLOT')"
if [ "${CHAOS_PLAIN_INSERT:-}" = 1 ]; then once=""; fi
out=$(psql -X -qAt -v ON_ERROR_STOP=1 "$CHAOS_DB_URL" 2>&1 <<SQL
BEGIN;
$fence
WITH ins AS (
    INSERT INTO chaos.ledger (job, slot, generation, attempt, replica)
    SELECT '$CRONFENCE_JOB', '$CRONFENCE_SLOT', $CRONFENCE_GENERATION, $CRONFENCE_ATTEMPT, '$CHAOS_REPLICA'
    $once
    RETURNING 1)
SELECT 'inserted=' || count(*) FROM ins;
SELECT pg_sleep($CHAOS_HOLD);
COMMIT;
SQL
)
` + scriptTail

// scriptHead logs the start and does the work; the body sets out from its
// database client and scriptTail logs the outcome.
const scriptHead = `#!/bin/sh
set -u
note() { echo "$1 $CRONFENCE_JOB $CRONFENCE_SLOT $CRONFENCE_GENERATION $CRONFENCE_ATTEMPT $CHAOS_REPLICA $$ $(date +%s.%N)" >> "$CHAOS_LOG"; }
note start
sleep "$CHAOS_WORK"
`

const scriptTail = `rc=$?
case "$rc:$out" in
0:*inserted=1*) note commit ;;
0:*inserted=0*) note exists ;;
*CF001*|*"no longer held"*|*"CHECK constraint failed"*) note refused; exit 3 ;;
*) note error; echo "$out" >&2; exit 4 ;;
esac
`

// writeConfig writes the job script (jobScript or sqliteJobScript) and the serve config into dir and
// returns the config's path.
func writeConfig(dir, jobScript string) (string, error) {
	script := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(script, []byte(jobScript), 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tokens:\n  - name: chaos\n    role: admin\n    token: %s\n", adminToken)
	fmt.Fprintf(&b, "defaults:\n  lease_ttl: %s\n  timeout: 30s\n  max_attempts: 5\n", leaseTTL)
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
