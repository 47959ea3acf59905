package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
	"github.com/cronfence/cronfence/schedule"
)

// dbNow reads the database clock of the store db selects: PostgreSQL's, or
// on SQLite the process clock (every process on the file shares it).
func dbNow(t *testing.T, db []string) time.Time {
	t.Helper()
	if db[0] == "--sqlite" {
		return time.Now()
	}
	var now time.Time
	if err := pgtest.NewPool(t).QueryRow(context.Background(), `SELECT clock_timestamp()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// yearly returns a spec (seconds first) whose instants are slot's second,
// minute, hour, day and month of every year, in UTC: for a slot a second
// past, the slot every host computes for a year, whenever it starts.
func yearly(slot time.Time) string {
	slot = slot.UTC()
	return fmt.Sprintf("%d %d %d %d %d *", slot.Second(), slot.Minute(), slot.Hour(), slot.Day(), int(slot.Month()))
}

// justPast is a whole second just past by the database clock.
func justPast(t *testing.T, db []string) time.Time {
	return dbNow(t, db).UTC().Truncate(time.Second).Add(-time.Second)
}

// ownerOf is the start of the owner id of the cronfence process p:
// host:pid: (a random part follows).
func ownerOf(t *testing.T, p *proc) string {
	t.Helper()
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	if len(host) > 64 {
		host = host[:64]
	}
	return host + ":" + strconv.Itoa(p.cmd.Process.Pid) + ":"
}

// lines reads a file of lines, none when it does not exist.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// envLine is a command that appends its CRONFENCE_ variables to ran.log,
// then exits with status.
func envLine(status int) []string {
	return []string{"/bin/sh", "-c", `printf '%s|%s|%s|%s|%s|%s|%s\n' "$CRONFENCE_JOB" "$CRONFENCE_SLOT" "$CRONFENCE_LEASE" ` +
		`"$CRONFENCE_ATTEMPT" "$CRONFENCE_IDEMPOTENCY_KEY" "$CRONFENCE_MANUAL" "$CRONFENCE_GENERATION" >> ran.log; exit ` + strconv.Itoa(status)}
}

// TestLockScheduleRunsOncePerSlot: the same crontab line on three hosts
// (three lock processes, one after another, on one database) within one
// slot: the first runs the command, the others do not, exit 0 (or
// --busy-exit-code) and say which slot and who completed it. Plain lock
// runs it three times: its lease is free again once the first finished.
func TestLockScheduleRunsOncePerSlot(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		slot := justPast(t, db)
		spec := yearly(slot)
		at := slot.Format(time.RFC3339)

		first := start(t, dir, args(db, append([]string{"lock", "report", "--schedule", spec, "--"}, envLine(0)...)...)...)
		if code := first.wait(t, time.Minute); code != 0 || first.stderr.String() != "" {
			t.Fatalf("first host: exit %d stderr %q; want 0 and nothing of lock's own", code, first.stderr.String())
		}
		owner := ownerOf(t, first)
		for i, busy := range []string{"0", "75"} {
			code, out, errOut := runCLI(t, dir, args(db, "lock", "report", "--schedule", spec, "--busy-exit-code", busy, "--", "touch", "again.ran")...)
			if strconv.Itoa(code) != busy || out != "" || !strings.Contains(errOut, "slot "+at) ||
				!strings.Contains(errOut, "completed by "+owner) || !strings.Contains(errOut, `"touch" not run`) {
				t.Errorf("host %d: exit %d stdout %q stderr %q; want %s, naming slot %s and who completed it (%s…)",
					i+2, code, out, errOut, busy, at, owner)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "again.ran")); !os.IsNotExist(err) {
			t.Errorf("a later host ran the command of a completed slot")
		}
		got := lines(t, filepath.Join(dir, "ran.log"))
		if len(got) != 1 {
			t.Fatalf("ran %d times (%q), want once", len(got), got)
		}
		f := strings.Split(got[0], "|")
		if want := []string{"report", at, "job:report", "1", "report/" + at, "false"}; strings.Join(f[:6], "|") != strings.Join(want, "|") || atoi(t, f[6]) < 1 {
			t.Errorf("the command's JOB|SLOT|LEASE|ATTEMPT|IDEMPOTENCY_KEY|MANUAL|GENERATION = %q, want %q and a generation", got[0], strings.Join(want, "|"))
		}

		// Without --schedule, lock guards overlap only: three in a row run three times.
		for range 3 {
			if code, _, errOut := runCLI(t, dir, args(db, "lock", "plain", "--", "/bin/sh", "-c", "echo ran >> plain.log")...); code != 0 {
				t.Fatalf("plain lock: exit %d stderr %q", code, errOut)
			}
		}
		if n := len(lines(t, filepath.Join(dir, "plain.log"))); n != 3 {
			t.Errorf("plain lock ran %d times in a row, want 3 (it only guards overlap)", n)
		}
	})
}

// TestLockScheduleRetriesFailedSlot: a command that fails ends its slot
// failed and lock exits with its status; the next host runs it again as the
// next attempt while --max-attempts allows (1 by default); then none does.
func TestLockScheduleRetriesFailedSlot(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		slot := justPast(t, db)
		spec := yearly(slot)
		at := slot.Format(time.RFC3339)
		fail := []string{"/bin/sh", "-c", `echo "$CRONFENCE_ATTEMPT" >> ran.log; exit 3`}

		var owners []string
		for i := range 2 {
			p := start(t, dir, args(db, append([]string{"lock", "flaky", "--schedule", spec, "--max-attempts", "2", "--"}, fail...)...)...)
			code := p.wait(t, time.Minute)
			want := fmt.Sprintf("attempt %d of 2 failed", i+1)
			if code != 3 || !strings.Contains(p.stderr.String(), want) || !strings.Contains(p.stderr.String(), at) {
				t.Fatalf("host %d: exit %d stderr %q; want the command's 3 and %q", i+1, code, p.stderr.String(), want)
			}
			owners = append(owners, ownerOf(t, p))
		}
		code, _, errOut := runCLI(t, dir, args(db, append([]string{"lock", "flaky", "--schedule", spec, "--max-attempts", "2", "--"}, fail...)...)...)
		if code != 0 || !strings.Contains(errOut, "slot "+at) || !strings.Contains(errOut, "2 attempts") || !strings.Contains(errOut, owners[1]) {
			t.Errorf("third host: exit %d stderr %q; want 0, saying slot %s used its 2 attempts, the last by %s…", code, errOut, at, owners[1])
		}
		if got := strings.Join(lines(t, filepath.Join(dir, "ran.log")), ","); got != "1,2" {
			t.Errorf("attempts run: %q, want 1,2", got)
		}

		// One attempt by default.
		code, _, errOut = runCLI(t, dir, args(db, append([]string{"lock", "once", "--schedule", spec, "--"}, fail...)...)...)
		if code != 3 || !strings.Contains(errOut, "attempt 1 of 1 failed") {
			t.Fatalf("default, first host: exit %d stderr %q", code, errOut)
		}
		code, _, errOut = runCLI(t, dir, args(db, "lock", "once", "--schedule", spec, "--", "touch", "once.ran")...)
		if _, err := os.Stat(filepath.Join(dir, "once.ran")); code != 0 || !os.IsNotExist(err) || !strings.Contains(errOut, "1 attempt") {
			t.Errorf("default, second host: exit %d stderr %q; want the failed slot left alone", code, errOut)
		}
	})
}

// TestLockScheduleNewSlot: the spec's next instant is a new slot, and runs
// again. The hosts of the first slot run half a year ago, by the test-only
// clock offset: the yearly spec's previous instant is their slot.
func TestLockScheduleNewSlot(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		now := dbNow(t, db)
		slot := now.UTC().Truncate(time.Second).Add(-time.Second)
		spec := yearly(slot)
		sched, err := schedule.Parse(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		const offset = -4380 * time.Hour
		earlier := sched.Prev(now.Add(offset))
		if !earlier.Before(slot) || earlier.IsZero() {
			t.Fatalf("spec %q: slot half a year ago %s, want one before %s", spec, earlier, slot)
		}
		past := []string{testClockOffsetEnv + "=" + offset.String()}
		for _, host := range []struct {
			env  []string
			slot time.Time
			ran  bool
		}{
			{past, earlier, true},
			{past, earlier, false},
			{nil, slot, true}, // the next instant reached: a new slot
			{nil, slot, false},
		} {
			p := startEnv(t, dir, host.env, args(db, "lock", "yearly", "--schedule", spec, "--", "/bin/sh", "-c", `echo "$CRONFENCE_SLOT" >> ran.log`)...)
			code := p.wait(t, time.Minute)
			errOut := p.stderr.String()
			if code != 0 || host.ran == strings.Contains(errOut, "not run") || !host.ran && !strings.Contains(errOut, "slot "+host.slot.Format(time.RFC3339)) {
				t.Errorf("host for slot %s: exit %d stderr %q; want ran %v", host.slot, code, errOut, host.ran)
			}
		}
		want := earlier.UTC().Format(time.RFC3339) + "," + slot.Format(time.RFC3339)
		if got := strings.Join(lines(t, filepath.Join(dir, "ran.log")), ","); got != want {
			t.Errorf("slots run: %q, want %q (each once)", got, want)
		}
	})
}

// TestLockScheduleCompletesInItsTransaction: a command that completes its
// slot in its own transaction, with its effect (complete() on PostgreSQL,
// cronfence_complete on SQLite), and then fails, leaves the slot completed:
// lock exits with its status, and no later host runs it.
func TestLockScheduleCompletesInItsTransaction(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		var script string
		var count func() string
		if db[0] == "--sqlite" {
			if _, err := exec.LookPath("sqlite3"); err != nil {
				t.Skip("needs the sqlite3 shell")
			}
			file := db[1]
			script = `sqlite3 -bail -cmd ".timeout 10000" ` + file + ` "BEGIN IMMEDIATE; CREATE TABLE IF NOT EXISTS effects (k TEXT);
				INSERT INTO effects VALUES ('$CRONFENCE_IDEMPOTENCY_KEY');
				INSERT INTO cronfence_complete VALUES ('$CRONFENCE_LEASE', $CRONFENCE_GENERATION); COMMIT;" || exit 9; exit 4`
			count = func() string {
				out, err := exec.Command("sqlite3", file, "SELECT count(*) FROM effects").CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				return strings.TrimSpace(string(out))
			}
		} else {
			if _, err := exec.LookPath("psql"); err != nil {
				t.Skip("needs psql")
			}
			url, schema := db[1], db[3]
			pool := pgtest.NewPool(t)
			if code, _, errOut := runCLI(t, dir, args(db, "migrate")...); code != 0 { // creates the schema
				t.Fatalf("migrate: exit %d stderr %q", code, errOut)
			}
			if _, err := pool.Exec(context.Background(), `CREATE TABLE `+schema+`.effects (k text)`); err != nil {
				t.Fatal(err)
			}
			script = `psql -X -q -v ON_ERROR_STOP=1 "` + url + `" <<EOF || exit 9
BEGIN;
INSERT INTO ` + schema + `.effects VALUES ('$CRONFENCE_IDEMPOTENCY_KEY');
SELECT ` + schema + `.complete('$CRONFENCE_LEASE', $CRONFENCE_GENERATION);
COMMIT;
EOF
exit 4`
			count = func() string {
				var n int
				if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM `+schema+`.effects`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return strconv.Itoa(n)
			}
		}
		spec := yearly(justPast(t, db))
		code, _, errOut := runCLI(t, dir, args(db, "lock", "close", "--schedule", spec, "--max-attempts", "3", "--", "/bin/sh", "-c", script)...)
		if code != 4 {
			t.Fatalf("first host: exit %d stderr %q; want the command's 4", code, errOut)
		}
		code, _, errOut = runCLI(t, dir, args(db, "lock", "close", "--schedule", spec, "--max-attempts", "3", "--", "/bin/sh", "-c", script)...)
		if code != 0 || !strings.Contains(errOut, "completed by") {
			t.Fatalf("second host: exit %d stderr %q; want the slot completed (in the command's transaction)", code, errOut)
		}
		if n := count(); n != "1" {
			t.Fatalf("the effect committed %s times, want once", n)
		}
	})
}

// TestLockScheduleFlags: --schedule and its flags are lock's, never run as
// the command; bad values, the flags that apply with --schedule only given
// without it, and a command not after -- are refused with exit 2 naming the
// flag, and nothing runs.
func TestLockScheduleFlags(t *testing.T) {
	t.Parallel()
	spec := "*/5 * * * *"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"schedule, command without --", []string{"lock", "x", "--schedule", spec, "touch", "ran"}, "after --"},
		{"flag after the command without --", []string{"lock", "x", "touch", "--schedule", spec}, "after --"},
		{"schedule without a command", []string{"lock", "x", "--schedule", spec}, `expected "<command> ..."`},
		{"schedule, empty command after --", []string{"lock", "x", "--schedule", spec, "--"}, "no command to run"},
		{"bad schedule", []string{"lock", "x", "--schedule", "61 * * * *", "--", "touch", "ran"}, "--schedule"},
		{"empty schedule", []string{"lock", "x", "--schedule", "", "--", "touch", "ran"}, "--schedule"},
		{"schedule never fires", []string{"lock", "x", "--schedule", "0 0 30 2 *", "--", "touch", "ran"}, "--schedule"},
		{"bad zone", []string{"lock", "x", "--schedule", spec, "--tz", "Mars/Olympus", "--", "touch", "ran"}, "--tz"},
		{"local zone", []string{"lock", "x", "--schedule", spec, "--tz", "Local", "--", "touch", "ran"}, "--tz"},
		{"CRON_TZ=Local", []string{"lock", "x", "--schedule", "CRON_TZ=Local " + spec, "--", "touch", "ran"}, "--schedule"},
		{"no attempts", []string{"lock", "x", "--schedule", spec, "--max-attempts", "0", "--", "touch", "ran"}, "--max-attempts must be at least 1"},
		{"zone without schedule", []string{"lock", "x", "--tz", "Europe/Lisbon", "--", "touch", "ran"}, "--tz applies with --schedule only"},
		{"attempts without schedule", []string{"lock", "x", "--max-attempts", "2", "--", "touch", "ran"}, "--max-attempts applies with --schedule only"},
		{"long job name", []string{"lock", strings.Repeat("j", 151), "--schedule", spec, "--", "touch", "ran"}, "at most 150 bytes"},
		{"negative early grace", []string{"lock", "x", "--schedule", spec, "--early-grace", "-1s", "--", "touch", "ran"}, "--early-grace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			code, out, errOut := runCLI(t, dir, args([]string{"--sqlite", filepath.Join(dir, "cronfence.db")}, tt.args...)...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d stdout %q stderr %q; want exit 2 and %q", code, out, errOut, tt.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); !os.IsNotExist(err) {
				t.Errorf("a refused lock ran its command")
			}
		})
	}
}

// TestLockQuiet: under cron, which mails whatever a line prints, the same
// line on N hosts would mail N−1 "not run" notes a slot. With --quiet a
// host says nothing when another host has the slot (it completed it, runs
// it, or used its attempts on it) or, without --schedule, holds the lease;
// the host that runs the command still passes the command's output and
// says when it failed, and the exit statuses are unchanged.
func TestLockQuiet(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		spec := yearly(justPast(t, db))
		lock := func(name string, extra ...string) []string {
			return args(db, append([]string{"lock", name, "--quiet"}, extra...)...)
		}
		silent := func(what string, p *proc, code int) {
			t.Helper()
			if got := p.wait(t, time.Minute); got != code || p.stdout.String() != "" || p.stderr.String() != "" {
				t.Errorf("%s: exit %d stdout %q stderr %q; want exit %d and nothing printed", what, got, p.stdout.String(), p.stderr.String(), code)
			}
		}

		// Completed elsewhere: the host that ran it passes its command's output.
		first := start(t, dir, lock("report", "--schedule", spec, "--", "/bin/sh", "-c", "echo out; echo err >&2")...)
		if code := first.wait(t, time.Minute); code != 0 || first.stdout.String() != "out\n" || first.stderr.String() != "err\n" {
			t.Fatalf("first host: exit %d stdout %q stderr %q; want 0 and the command's own output", code, first.stdout.String(), first.stderr.String())
		}
		silent("a host after the slot completed", start(t, dir, lock("report", "--schedule", spec, "--", "touch", "again.ran")...), 0)
		silent("the same, --busy-exit-code 75", start(t, dir, lock("report", "--schedule", spec, "--busy-exit-code", "75", "--", "touch", "again.ran")...), 75)
		if _, err := os.Stat(filepath.Join(dir, "again.ran")); !os.IsNotExist(err) {
			t.Errorf("a later host ran the command of a completed slot")
		}

		// Running elsewhere, with --schedule and without: the holder runs
		// until the test lets it go.
		hold := []string{"/bin/sh", "-c", `echo started > "$1.started"; while [ ! -f "$1.go" ]; do sleep 0.05; done`, "sh"}
		for _, tc := range []struct{ name, mode string }{{"running", "--schedule"}, {"plain", ""}} {
			extra := []string{}
			if tc.mode != "" {
				extra = []string{tc.mode, spec}
			}
			holder := start(t, dir, lock(tc.name, append(extra, append(append([]string{"--"}, hold...), tc.name)...)...)...)
			waitForFile(t, filepath.Join(dir, tc.name+".started"), holder)
			silent(tc.name+": a host while another runs it", start(t, dir, lock(tc.name, append(extra, "--", "touch", tc.name+".twice")...)...), 0)
			if err := os.WriteFile(filepath.Join(dir, tc.name+".go"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if code := holder.wait(t, time.Minute); code != 0 {
				t.Errorf("%s: the holder exited %d; stderr %q", tc.name, code, holder.stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, tc.name+".twice")); !os.IsNotExist(err) {
				t.Errorf("%s: the command ran on two hosts at once", tc.name)
			}
		}

		// A failure is said by the host it happened on; the others, finding
		// the slot's attempts used, say nothing.
		failing := start(t, dir, lock("flaky", "--schedule", spec, "--", "/bin/sh", "-c", "exit 3")...)
		if code := failing.wait(t, time.Minute); code != 3 || !strings.Contains(failing.stderr.String(), "attempt 1 of 1 failed") {
			t.Errorf("failing host: exit %d stderr %q; want 3 and the failure told", code, failing.stderr.String())
		}
		silent("a host after the slot's attempts", start(t, dir, lock("flaky", "--schedule", spec, "--", "touch", "flaky.again")...), 0)

		// Errors are never silenced.
		code, _, errOut := runCLI(t, dir, lock("bad", "--schedule", spec, "--", filepath.Join(dir, "no-such-program"))...)
		if code != exitNotFound || !strings.Contains(errOut, "no-such-program") {
			t.Errorf("a command that cannot start: exit %d stderr %q; want %d naming it", code, errOut, exitNotFound)
		}
	})
}
