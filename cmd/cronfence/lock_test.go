package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// stores are the databases every lock test runs on: each returns the
// global flags selecting a fresh database of its kind.
var stores = []struct {
	name string
	args func(t *testing.T) []string
}{
	{"sqlite", func(t *testing.T) []string {
		return []string{"--sqlite", filepath.Join(t.TempDir(), "cronfence.db")}
	}},
	{"postgres", func(t *testing.T) []string {
		_, schema := pgtest.Schema(t) // dropped at cleanup
		return []string{"--database", pgtest.URL(t), "--schema", schema}
	}},
}

func forEachStore(t *testing.T, test func(t *testing.T, db []string)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, s.args(t))
		})
	}
}

func args(db []string, rest ...string) []string {
	return append(append([]string(nil), db...), rest...)
}

func TestLockRunsCommandWithStatusAndGeneration(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		var last int64
		for i, status := range []int{0, 3, 0} {
			script := `echo "$CRONFENCE_LEASE $CRONFENCE_GENERATION"; echo to-stderr >&2; exit ` + strconv.Itoa(status)
			code, out, errOut := runCLI(t, dir, args(db, "lock", "nightly-report", "--", "/bin/sh", "-c", script)...)
			if code != status {
				t.Fatalf("run %d: exit %d, want the command's %d; stderr:\n%s", i, code, status, errOut)
			}
			if errOut != "to-stderr\n" {
				t.Errorf("run %d: stderr %q, want the command's own", i, errOut)
			}
			name, gen, _ := strings.Cut(strings.TrimSpace(out), " ")
			if name != "nightly-report" {
				t.Errorf("run %d: CRONFENCE_LEASE %q", i, name)
			}
			if g := atoi(t, gen); g <= last {
				t.Errorf("run %d: CRONFENCE_GENERATION %d after %d, want it to increase", i, g, last)
			} else {
				last = g
			}
		}
	})
}

func TestLockMigrate(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		for range 2 { // a second run finds the schema current
			code, out, errOut := runCLI(t, t.TempDir(), args(db, "migrate")...)
			if code != 0 || !strings.Contains(out, "schema version ") {
				t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
			}
		}
	})
}

// TestDatabaseFromEnvironment: CRONFENCE_DATABASE_URL selects PostgreSQL
// (and CRONFENCE_SCHEMA its schema); no SQLite file is created.
func TestDatabaseFromEnvironment(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	dir := t.TempDir()
	p := startEnv(t, dir, []string{"CRONFENCE_DATABASE_URL=" + pgtest.URL(t), "CRONFENCE_SCHEMA=" + schema}, "migrate")
	if code := p.wait(t, time.Minute); code != 0 || !strings.Contains(p.stdout.String(), "PostgreSQL database") || !strings.Contains(p.stdout.String(), schema) {
		t.Fatalf("exit %d stdout %q stderr %q", code, p.stdout.String(), p.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); !os.IsNotExist(err) {
		t.Errorf("cronfence.db created with CRONFENCE_DATABASE_URL set: %v", err)
	}
	// Without it, the SQLite default beside the working directory.
	code, out, errOut := runCLI(t, dir, "migrate")
	if code != 0 || !strings.Contains(out, "SQLite file "+filepath.Join(dir, "cronfence.db")) {
		t.Fatalf("exit %d stdout %q stderr %q", code, out, errOut)
	}
}

// TestLockBusy: two lock processes with the same name at once: one runs the
// command, the other does not and exits with --busy-exit-code.
func TestLockBusy(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		holder := start(t, dir, args(db, "lock", "backup", "--", "/bin/sh", "-c",
			`echo $CRONFENCE_GENERATION > holder.started; while [ ! -e release ]; do sleep 0.02; done`)...)
		generation := waitForFile(t, filepath.Join(dir, "holder.started"), holder)

		code, out, errOut := runCLI(t, dir, args(db, "lock", "backup", "--busy-exit-code", "75", "--", "touch", "second.ran")...)
		// The busy message names the holder, its generation and the
		// lease's expiry.
		busy := regexp.MustCompile(`lock "backup" is held by \S+ \(generation ` + generation +
			`\) until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, in [0-9hms]+ unless renewed; "touch" not run`)
		if code != 75 || out != "" || !busy.MatchString(errOut) {
			t.Errorf("second lock: exit %d stdout %q stderr %q; want 75 and a busy message naming the holder", code, out, errOut)
		}
		code, _, errOut = runCLI(t, dir, args(db, "lock", "backup", "--", "touch", "third.ran")...)
		if code != 0 || !busy.MatchString(errOut) {
			t.Errorf("busy lock without --busy-exit-code: exit %d stderr %q; want 0", code, errOut)
		}
		for _, f := range []string{"second.ran", "third.ran"} {
			if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
				t.Errorf("%s exists: a busy lock ran its command", f)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if code := holder.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("holder exit %d; stderr:\n%s", code, holder.stderr.String())
		}
		// Released at the end: the next lock runs at once.
		code, _, errOut = runCLI(t, dir, args(db, "lock", "backup", "--busy-exit-code", "75", "--", "touch", "fourth.ran")...)
		if code != 0 {
			t.Fatalf("lock after release: exit %d stderr %q", code, errOut)
		}
	})
}

// TestLockRace: several lock processes started together: exactly one runs.
func TestLockRace(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		const n = 4
		procs := make([]*proc, n)
		for i := range procs {
			// Long enough that every other process tries while it runs.
			procs[i] = start(t, dir, args(db, "lock", "race", "--busy-exit-code", "75", "--", "/bin/sh", "-c",
				`echo ran >> ran.log; while [ ! -e release ]; do sleep 0.02; done`)...)
		}
		// Wait until all but the runner have exited (the runner waits for
		// the release file), then check how they exited.
		exitedCount := func() (n int) {
			for _, p := range procs {
				select {
				case <-p.done:
					n++
				default:
				}
			}
			return n
		}
		deadline := time.Now().Add(20 * time.Second)
		for exitedCount() < n-1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		busy := 0
		for _, p := range procs {
			select {
			case <-p.done:
				if p.code != 75 {
					t.Errorf("exit %d; stderr:\n%s", p.code, p.stderr.String())
				}
				busy++
			default:
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, p := range procs {
			p.wait(t, 20*time.Second)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "ran.log"))
		if got := strings.Count(string(b), "ran\n"); got != 1 || busy != n-1 {
			t.Fatalf("command ran %d times, %d busy; want 1 and %d", got, busy, n-1)
		}
	})
}

// TestLockSignalCancelsAndReleases: SIGTERM to lock reaches the whole
// command group, and the lease is released at once.
func TestLockSignalCancelsAndReleases(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			dir := t.TempDir()
			p := start(t, dir, args(db, "lock", "sig", "--ttl", "1h", "--", "/bin/sh", "-c",
				`echo $$ > cmd.pid; sleep 100 & wait`)...)
			pgid := int(atoi(t, waitForFile(t, filepath.Join(dir, "cmd.pid"), p)))
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t, 20*time.Second); code != 128+int(syscall.SIGTERM) {
				t.Errorf("%s: exit %d, want the command's %d; stderr:\n%s", sig, code, 128+int(syscall.SIGTERM), p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "interrupted") {
				t.Errorf("%s: stderr %q does not say lock was interrupted", sig, p.stderr.String())
			}
			groupGone(t, pgid)
			// A one-hour lease, released: the next lock runs at once.
			code, _, errOut := runCLI(t, dir, args(db, "lock", "sig", "--busy-exit-code", "75", "--", "true")...)
			if code != 0 {
				t.Fatalf("%s: lock after the signal: exit %d stderr %q", sig, code, errOut)
			}
		}
	})
}

// TestLockTakeoverAfterStop: a holder stopped (SIGSTOP) past its TTL loses
// the lease to another lock with a higher generation; resumed, it finds the
// lease lost, cancels its command and fails.
func TestLockTakeoverAfterStop(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, db []string) {
		dir := t.TempDir()
		stale := start(t, dir, args(db, "lock", "takeover", "--ttl", "2s", "--kill-grace", "1s", "--", "/bin/sh", "-c",
			`echo $$ > a.pid; echo $CRONFENCE_GENERATION > a.gen; sleep 100 & wait`)...)
		pgid := int(atoi(t, waitForFile(t, filepath.Join(dir, "a.pid"), stale)))
		genA := atoi(t, waitForFile(t, filepath.Join(dir, "a.gen"), stale))
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		if err := stale.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()

		// Try until the stale lease expires; it must not be before its TTL.
		var took time.Duration
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, _, errOut := runCLI(t, dir, args(db, "lock", "takeover", "--ttl", "2s", "--busy-exit-code", "75", "--", "/bin/sh", "-c",
				`echo $CRONFENCE_GENERATION > b.gen`)...)
			if code == 0 {
				took = time.Since(stopped)
				break
			}
			if code != 75 || time.Now().After(deadline) {
				_ = stale.cmd.Process.Signal(syscall.SIGCONT)
				t.Fatalf("takeover: exit %d stderr %q", code, errOut)
			}
			time.Sleep(50 * time.Millisecond)
		}
		if genB := atoi(t, waitForFile(t, filepath.Join(dir, "b.gen"), nil)); genB <= genA {
			t.Errorf("takeover generation %d, want above the stopped holder's %d", genB, genA)
		}
		if took > 10*time.Second {
			t.Errorf("takeover %s after the stop, want within about the 2s TTL", took)
		}
		t.Logf("taken over %s after SIGSTOP (TTL 2s)", took.Round(time.Millisecond))

		if err := stale.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		code := stale.wait(t, 20*time.Second)
		if code == 0 || !strings.Contains(stale.stderr.String(), "lease lost") {
			t.Errorf("resumed holder: exit %d stderr %q; want a failure saying the lease was lost", code, stale.stderr.String())
		}
		groupGone(t, pgid)
	})
}

// On PostgreSQL a lock holds a liveness session: killed with kill -9, its
// name is free for the next lock at once, not after its 5-minute TTL.
func TestLockKilledFreesItsNameAtOnce(t *testing.T) {
	t.Parallel()
	_, schema := pgtest.Schema(t)
	db := []string{"--database", pgtest.URL(t), "--schema", schema}
	dir := t.TempDir()
	holder := start(t, dir, args(db, "lock", "nightly", "--ttl", "5m", "--", "/bin/sh", "-c",
		`echo $CRONFENCE_GENERATION > holder.started; sleep 300`)...)
	first := atoi(t, waitForFile(t, filepath.Join(dir, "holder.started"), holder))
	if err := holder.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	holder.wait(t, 20*time.Second)
	// Tried until it runs, bounded far below the TTL; before the fix it
	// ran only once the 5 minutes had passed.
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, _, errOut := runCLI(t, dir, args(db, "lock", "nightly", "--ttl", "5m", "--busy-exit-code", "75", "--", "/bin/sh", "-c",
			`echo $CRONFENCE_GENERATION > next.ran`)...)
		if code == 0 {
			break
		}
		if code != 75 || time.Now().After(deadline) {
			t.Fatalf("the next lock after kill -9: exit %d, stderr %q; want it to run well before the 5m TTL", code, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if next := atoi(t, waitForFile(t, filepath.Join(dir, "next.ran"), nil)); next <= first {
		t.Fatalf("the next lock's generation %d, want above the killed holder's %d", next, first)
	}
}

func TestLockErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		global []string // nil: a fresh SQLite file
		args   []string
		code   int
		want   string
	}{
		{"no command", nil, []string{"lock", "x"}, exitUsage, `expected "<command> ..."`},
		{"empty command after --", nil, []string{"lock", "x", "--"}, exitUsage, "no command to run"},
		// Flags before -- are lock's: an unknown one is refused, never run
		// as the command; a command must come after --.
		{"unknown flag before --", nil, []string{"lock", "x", "--bogus", "--", "true"}, exitUsage, "unknown flag --bogus"},
		{"unknown short flag before --", nil, []string{"lock", "x", "-n", "--", "true"}, exitUsage, "unknown flag -n"},
		{"command without --", nil, []string{"lock", "x", "true"}, exitUsage, "put the command after --"},
		{"flag after a command without --", nil, []string{"lock", "x", "true", "--ttl", "5s"}, exitUsage, "put the command after --"},
		{"separator before the name", nil, []string{"lock", "--", "x", "true"}, exitUsage, "put the command after --"},
		{"bad ttl", nil, []string{"lock", "x", "--ttl", "soon", "--", "true"}, exitUsage, "--ttl"},
		{"ttl too short", nil, []string{"lock", "x", "--ttl", "500ms", "--", "true"}, exitUsage, "--ttl must be at least 1s"},
		{"ttl too long", nil, []string{"lock", "x", "--ttl", "200h", "--", "true"}, exitUsage, "TTL must be between"},
		{"bad name", nil, []string{"lock", "", "--", "true"}, exitUsage, "lease name"},
		{"bad busy code", nil, []string{"lock", "x", "--busy-exit-code", "300", "--", "true"}, exitUsage, "--busy-exit-code must be between 0 and 255"},
		{"missing program", nil, []string{"lock", "x", "--", "cronfence-no-such-program"}, 127, "executable file not found"},
		{"missing path", nil, []string{"lock", "x", "--", "/nonexistent/prog"}, 127, "no such file"},
		{"bad database url", []string{"--database", "postgres://u:secret@[bad"}, []string{"lock", "x", "--", "true"}, exitUsage, "--database is not a valid PostgreSQL URL"},
		{"bad schema", []string{"--database", "postgres://127.0.0.1:1/x", "--schema", "Bad-Name"}, []string{"lock", "x", "--", "true"}, exitUsage, "--schema"},
		{"schema on sqlite", []string{"--schema", "s"}, []string{"lock", "x", "--", "true"}, exitUsage, "--schema applies to PostgreSQL only"},
		{"bad mysql url", []string{"--database", "mysql://u:secret@127.0.0.1:port/x"}, []string{"lock", "x", "--", "true"}, exitUsage, "--database is not a valid MySQL URL"},
		{"mysql url without a database", []string{"--database", "mysql://u:secret@127.0.0.1:3306"}, []string{"lock", "x", "--", "true"}, exitUsage, "must name one database"},
		{"schema on mysql", []string{"--database", "mysql://u:secret@127.0.0.1/x", "--schema", "s"}, []string{"lock", "x", "--", "true"}, exitUsage, "--schema applies to PostgreSQL only"},
		{"mysql unreachable", []string{"--database", "mysql://u:secret@127.0.0.1:1/x"}, []string{"lock", "x", "--", "true"}, exitFailure, "connecting to MySQL"},
		{"sqlite dir missing", []string{"--sqlite", "/nonexistent/dir/c.db"}, []string{"lock", "x", "--", "true"}, exitFailure, "/nonexistent/dir/c.db"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			global := tt.global
			if global == nil {
				global = []string{"--sqlite", filepath.Join(t.TempDir(), "cronfence.db")}
			}
			code, out, errOut := runCLI(t, t.TempDir(), args(global, tt.args...)...)
			if code != tt.code || out != "" || !strings.Contains(errOut, tt.want) || strings.Contains(errOut, "secret") {
				t.Fatalf("exit %d stdout %q stderr %q; want exit %d and %q", code, out, errOut, tt.code, tt.want)
			}
		})
	}
}
