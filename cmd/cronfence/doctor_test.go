package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// doctor runs on every example config: each job is named with its first
// slot, computed here from the schedule package; neither example has a
// warning, and fenced-psql.yaml's 00:05 in São Paulo moved to 01:00 when
// the clock skipped midnight in November 2018.
func TestDoctorExamples(t *testing.T) {
	t.Parallel()
	const from = "2018-06-01T00:00:00Z"
	want := map[string]struct {
		code     int
		contains []string
	}{
		"cronfence.yaml": {0, []string{
			"tick: \"*/10 * * * * *\" in UTC\n",
			"  daylight saving: no change of UTC offset in UTC before 2019-06-02\n",
			"/cronfence.yaml: 3 jobs, 0 jobs with warnings\n",
			"replicas: not compared: ",
		}},
		"fenced-psql.yaml": {0, []string{
			"daily-close: \"5 0 * * *\" in America/Sao_Paulo\n",
			"    2018-11-04 00:00 -03 → 01:00 -02 (clocks forward 1h): the 00:05 run moves to 01:00 -02\n",
			"replicas: not compared (--offline)\n",
			"/fenced-psql.yaml: 1 job, 0 jobs with warnings\n",
		}},
	}
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example configs: %v", err)
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w, ok := want[name]
			if !ok {
				t.Fatalf("examples/%s: add what doctor must find in it to TestDoctorExamples", name)
			}
			path, err := filepath.Abs(file)
			if err != nil {
				t.Fatal(err)
			}
			args := []string{"doctor", "--config", path, "--from", from, "-n", "2"}
			if name == "fenced-psql.yaml" {
				args = append(args, "--offline") // its database: is ${DATABASE_URL}
			}
			code, out, errOut := runCLI(t, t.TempDir(), args...)
			if code != w.code {
				t.Fatalf("exit %d, want %d; stdout:\n%s\nstderr: %s", code, w.code, out, errOut)
			}
			for _, s := range w.contains {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			f, err := config.LoadFor(path, config.Reads{Schedules: true})
			if err != nil {
				t.Fatal(err)
			}
			start, _ := time.Parse(time.RFC3339, from)
			for _, j := range f.Jobs {
				loc, _ := time.LoadLocation(j.TimeZone)
				s, err := schedule.Parse(j.Schedule, &schedule.Options{Location: loc})
				if err != nil {
					t.Fatal(err)
				}
				first := "    " + s.Next(start).Format(time.RFC3339) + "  "
				header := j.Name + ": "
				if i := strings.Index(out, "\n"+header); !strings.HasPrefix(out, header) && i < 0 {
					t.Errorf("job %s has no section:\n%s", j.Name, out)
				}
				section := out[strings.Index(out, header):]
				if !strings.Contains(section, first) {
					t.Errorf("job %s: its first slot %q is not listed:\n%s", j.Name, first, section)
				}
			}
		})
	}
}

// A file whose jobs trip each check: every warning is printed under its
// job, the healthy job has none, and doctor exits 1.
func TestDoctorWarnings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronfence.yaml")
	writeTestFile(t, path, `
jobs:
  - name: fragile
    schedule: "*/5 * * * *"
    lease_ttl: 30s
    timeout: 10m
    shell: "true"
  - name: replay
    schedule: "*/5 * * * *"
    catch_up: all
    catch_up_window: 1h
    shell: "true"
  - name: leap
    schedule: "0 0 29 2 *"
    shell: "true"
  - name: fine
    schedule: "30 2 * * *"
    time_zone: America/New_York
    timeout: 1m
    jitter: 1m
    shell: "true"
`)
	code, out, errOut := runCLI(t, dir, "doctor", "--config", path, "--from", "2027-03-01T00:00:00Z")
	if code != exitFailure {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	sections := map[string]string{}
	for _, s := range strings.Split(out, "\n\n") { // a blank line after each job
		name, _, _ := strings.Cut(s, ":")
		sections[name] = s
	}
	for job, want := range map[string]string{
		"fragile": "  warning: lease_ttl: lease_ttl 30s is shorter than timeout 10m: a run renews its lease every 10s, but if its replica stalls for 30s",
		"replay": "  warning: catch_up: catch_up all with catch_up_window 1h, longer than the job's interval of 5m: after an outage as long as the window, " +
			"up to 12 missed slots run one after another at start-up",
		"leap": "  warning: rare: runs once in the next 366 days: 2028-02-29T00:00:00Z",
	} {
		if !strings.Contains(sections[job], want) {
			t.Errorf("job %s: no %q in its section:\n%s", job, want, sections[job])
		}
		if n := strings.Count(sections[job], "warning:"); n != 1 {
			t.Errorf("job %s: %d warnings, want 1:\n%s", job, n, sections[job])
		}
	}
	fine := sections["fine"]
	for _, s := range []string{
		"    2027-03-14 02:00 EST → 03:00 EDT (clocks forward 1h): the 02:30 run moves to 03:00 EDT\n",
		"    2027-03-01T02:30:00-05:00  Mon 2027-03-01 02:30:00 EST  starts +",
	} {
		if !strings.Contains(fine, s) {
			t.Errorf("job fine: no %q in its section:\n%s", s, fine)
		}
	}
	if strings.Contains(fine, "warning:") {
		t.Errorf("job fine has a warning:\n%s", fine)
	}
	for _, s := range []string{
		"replicas: not compared: no SQLite database at " + filepath.Join(dir, "cronfence.db"),
		path + ": 4 jobs, 3 jobs with warnings\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); !os.IsNotExist(err) {
		t.Errorf("doctor created the database: %v", err)
	}
}

func TestDoctorUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	writeTestFile(t, good, "jobs:\n  - name: a\n    schedule: \"@daily\"\n    shell: \"true\"\n")
	bad := filepath.Join(dir, "bad.yaml")
	writeTestFile(t, bad, "jobs:\n  - name: a\n    schedule: \"61 * * * *\"\n    shell: \"true\"\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no config", []string{"doctor"}, "missing flags: --config"},
		{"missing file", []string{"doctor", "--config", filepath.Join(dir, "none.yaml")}, "none.yaml: no such file"},
		{"invalid job", []string{"doctor", "--config", bad}, `minute field "61"`},
		{"bad from", []string{"doctor", "--config", good, "--from", "tomorrow"}, `--from "tomorrow": not an RFC 3339 instant`},
		{"bad count", []string{"doctor", "--config", good, "-n", "0"}, "--count must be between 1 and"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, dir, tt.args...)
			if code != exitUsage || out != "" || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d stdout %q stderr %q; want exit 2 and %q", code, out, errOut, tt.want)
			}
		})
	}
	// A file without a warning exits 0.
	code, out, errOut := runCLI(t, dir, "doctor", "--config", good, "--offline", "--from", "2027-01-01T00:00:00Z")
	if code != 0 || !strings.Contains(out, "a: \"@daily\" in UTC\n  next slots:\n    2027-01-02T00:00:00Z  Sat 2027-01-02 00:00:00 UTC\n") {
		t.Fatalf("exit %d stdout:\n%s\nstderr: %s", code, out, errOut)
	}
}

// writeTestFile writes text to path.
func writeTestFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A job's own exclusions and the file's hold its slots, read in its zone:
// doctor counts them per entry, leaves the excluded slots out of the next
// ones, and warns about a job every slot of which is excluded;
// next --explain lists an excluded slot with its entry.
func TestDoctorExclusions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "cronfence.yaml")
	writeTestFile(t, path, `
exclude:
  - "* * 25 12 *"
jobs:
  - name: daily
    schedule: "0 9 * * *"
    time_zone: Europe/Lisbon
    exclude:
      - "2026-12-28/2026-12-30"
    shell: "true"
  - name: xmas
    schedule: "0 9 25 12 *"
    shell: "true"
`)
	code, out, errOut := runCLI(t, dir, "doctor", "--config", path, "--from", "2026-12-24T12:00:00Z", "--offline", "-n", "2")
	if code != exitFailure {
		t.Fatalf("exit %d, want 1; stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	for _, s := range []string{
		"daily: \"0 9 * * *\" in Europe/Lisbon\n  next slots:\n    2026-12-26T09:00:00Z  Sat 2026-12-26 09:00:00 WET\n    2026-12-27T09:00:00Z  Sun 2026-12-27 09:00:00 WET\n",
		"  exclusions, until 2027-12-25:\n    \"* * 25 12 *\" holds 2 slots, the first 2026-12-25T09:00:00Z\n    \"2026-12-28/2026-12-30\" holds 2 slots, the first 2026-12-28T09:00:00Z\n",
		"xmas: \"0 9 25 12 *\" in UTC\n  next slots:\n    none\n",
		"  warning: never: no slot runs in the next 5 years (\"* * 25 12 *\" holds 2)\n",
		path + ": 2 jobs, 1 job with warnings\n",
	} {
		if !strings.Contains(out, s) {
			t.Errorf("stdout lacks %q:\n%s", s, out)
		}
	}
	code, out, errOut = runCLI(t, dir, "next", "daily", "--config", path, "--from", "2026-12-24T12:00:00Z", "-n", "2", "--explain")
	want := "job daily of " + path + `: "0 9 * * *" in Europe/Lisbon, excluding ["2026-12-28/2026-12-30" "* * 25 12 *"]
2026-12-25T09:00:00Z  Fri 2026-12-25 09:00:00 WET
  excluded by "* * 25 12 *": does not run
2026-12-26T09:00:00Z  Sat 2026-12-26 09:00:00 WET
`
	if code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d, stdout:\n%s\nwant it to start with:\n%s\nstderr: %s", code, out, want, errOut)
	}
	code, out, _ = runCLI(t, dir, "next", "daily", "--config", path, "--from", "2026-12-24T12:00:00Z", "-n", "3")
	if want := "2026-12-26T09:00:00Z\n2026-12-27T09:00:00Z\n2026-12-30T09:00:00Z\n"; code != 0 || out != want {
		t.Errorf("next without --explain: exit %d, stdout %q, want %q", code, out, want)
	}
}

// With the file's database reachable, doctor compares each job with what
// the live replicas registered: a replica that runs a job in another zone
// (or with another schedule) is a warning naming it, exit 1; a replica
// whose heartbeat is stale is not compared.
func TestDoctorWarnsOfAReplicaThatRunsAJobInAnotherZone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeConfig(t, dir, `jobs:
  - name: nightly
    schedule: "30 2 * * *"
    time_zone: America/New_York
    shell: "true"
  - name: hourly
    schedule: "@hourly"
    shell: "true"
`)
	if code, out, errOut := runCLI(t, dir, "migrate"); code != 0 {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	st := openStore(t, dir, nil)
	heartbeat := func(owner, zone string) {
		t.Helper()
		if _, err := st.ReplicaHeartbeat(context.Background(), store.Replica{Owner: owner, Host: "host-" + owner, PID: 1, Timers: true,
			Jobs: []store.ReplicaJob{
				{Name: "nightly", Schedule: "30 2 * * *", TimeZone: zone, LeaseTTL: time.Minute},
				{Name: "hourly", Schedule: "@hourly", LeaseTTL: time.Minute}, // no zone: UTC
			}}); err != nil {
			t.Fatal(err)
		}
	}
	heartbeat("replica-a", "America/New_York")
	code, out, errOut := runCLI(t, dir, "doctor", "--config", path, "--from", "2027-01-01T00:00:00Z")
	if code != 0 || !strings.Contains(out, "replicas: 1 replica live in ") || strings.Contains(out, "  warning:") {
		t.Fatalf("replicas that agree: exit %d stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	heartbeat("replica-b", "Europe/Lisbon")
	code, out, errOut = runCLI(t, dir, "doctor", "--config", path, "--from", "2027-01-01T00:00:00Z")
	want := `  warning: replica: replica replica-b (host-replica-b) runs it as "30 2 * * *" in Europe/Lisbon; this file says "30 2 * * *" in America/New_York`
	if code != exitFailure || !strings.Contains(out, want) || strings.Count(out, "warning: replica") != 1 {
		t.Fatalf("a replica in another zone: exit %d, want 1 and once %q; stdout:\n%s\nstderr: %s", code, want, out, errOut)
	}
	// A replica that excludes other times than the file says.
	if _, err := st.ReplicaHeartbeat(context.Background(), store.Replica{Owner: "replica-b", Host: "host-replica-b", PID: 1, Timers: true,
		Jobs: []store.ReplicaJob{
			{Name: "nightly", Schedule: "30 2 * * *", TimeZone: "America/New_York", LeaseTTL: time.Minute},
			{Name: "hourly", Schedule: "@hourly", LeaseTTL: time.Minute, Exclude: []string{"* * 25 12 *"}},
		}}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, dir, "doctor", "--config", path, "--from", "2027-01-01T00:00:00Z")
	want = `  warning: replica: replica replica-b (host-replica-b) excludes ["* * 25 12 *"]; this file excludes []`
	if code != exitFailure || !strings.Contains(out, want) || strings.Count(out, "warning: replica") != 1 {
		t.Fatalf("a replica with other exclusions: exit %d, want 1 and once %q; stdout:\n%s\nstderr: %s", code, want, out, errOut)
	}
	if code, out, _ := runCLI(t, dir, "doctor", "--config", path, "--offline"); code != 0 || !strings.Contains(out, "replicas: not compared (--offline)") {
		t.Fatalf("--offline: exit %d stdout:\n%s", code, out)
	}
}
