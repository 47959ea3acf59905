package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cronfence/cronfence"
)

// testEnv is the environment every test parses with.
var testEnv = map[string]string{
	"DATABASE_URL": "postgres://u@db:5432/cron",
	"ADMIN_TOKEN":  "s3cret-admin",
	"EMPTY":        "",
	"N":            "5",
	"YES":          "true",
	"TTL":          "2m",
}

func lookup(name string) (string, bool) {
	v, ok := testEnv[name]
	return v, ok
}

func parseTest(t *testing.T, src string) (*File, error) {
	t.Helper()
	return parse([]byte(strings.TrimLeft(src, "\n")), "/etc/cronfence/cronfence.yaml", lookup, Everything)
}

func mustParse(t *testing.T, src string) *File {
	t.Helper()
	f, err := parseTest(t, src)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return f
}

func TestParseFull(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
database: ${DATABASE_URL}
tokens:
  - name: ops
    role: admin
    token: ${ADMIN_TOKEN}
  - name: dash
    role: read
    token: read-only-token
defaults:
  time_zone: America/Sao_Paulo
  lease_ttl: 45s
  env: {A: "1", B: "2"}
  max_attempts: 2
  retry_backoff: 30s
  exclude: ["* * 25 12 *"]
exclude: ["2026-12-31T00:00Z/2027-01-01T00:00Z"]
jobs:
  - name: daily-close
    schedule: "5 0 * * *"
    time_zone: UTC
    command: ["/usr/local/bin/close-day", "--all", 7]
    env: {B: job, C: "3"}
    workdir: /srv
    timeout: 10m
    lease_ttl: 90s
    catch_up_window: 1h
    overlap: buffer-one
    max_attempts: 3
    retry_backoff: 1m
    deadline: 2h
    enabled: false
    run_when_store_down: true
    completes_in_tx: true
    exclude:
      - 2026-12-24/2026-12-27
      - "* 0-5 * * SAT,SUN"
  - name: hello
    schedule: "@every 1h30m"
    shell: echo hello >> /tmp/x
    workdir: data
    catch_up: all
    catch_up_window: 6h
    max_catch_up: 4
    jitter: 20m
`)
	want := &File{
		Path:       "/etc/cronfence/cronfence.yaml",
		Dir:        "/etc/cronfence",
		Database:   "postgres://u@db:5432/cron",
		SQLitePath: "/etc/cronfence/cronfence.db",
		Tokens: []Token{
			{Name: "ops", Role: "admin", Token: "s3cret-admin", Line: 3},
			{Name: "dash", Role: "read", Token: "read-only-token", Line: 6},
		},
		Jobs: []Job{{
			Name: "daily-close", Schedule: "5 0 * * *", TimeZone: "UTC", Timeout: 10 * time.Minute,
			LeaseTTL: 90 * time.Second, CatchUpWindow: time.Hour, CatchUp: "latest", Overlap: "buffer-one",
			Deadline: 2 * time.Hour, MaxAttempts: 3, RetryBackoff: time.Minute, Disabled: true, RunWhenStoreDown: true, CompletesInTx: true,
			Command: []string{"/usr/local/bin/close-day", "--all", "7"},
			Env:     map[string]string{"A": "1", "B": "job", "C": "3"}, Workdir: "/srv", Line: 18,
			Exclude: []string{"2026-12-24/2026-12-27", "* 0-5 * * SAT,SUN"},
		}, {
			Name: "hello", Schedule: "@every 1h30m", TimeZone: "America/Sao_Paulo",
			LeaseTTL: 45 * time.Second, CatchUp: "all", CatchUpWindow: 6 * time.Hour, MaxCatchUp: 4, Jitter: 20 * time.Minute,
			Overlap: "skip", MaxAttempts: 2, RetryBackoff: 30 * time.Second,
			Shell: "echo hello >> /tmp/x", Env: map[string]string{"A": "1", "B": "2"},
			Workdir: "/etc/cronfence/data", Line: 37, Exclude: []string{"* * 25 12 *"},
		}},
		Exclude: []string{"2026-12-31T00:00Z/2027-01-01T00:00Z"},
		Monitor: defaultMonitor(),
		History: defaultHistory(),
	}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Fatalf("File (-want +got):\n%s", diff)
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
jobs:
  - name: a
    schedule: "@hourly"
    shell: "true"
`)
	want := Job{
		Name: "a", Schedule: "@hourly", TimeZone: "UTC", LeaseTTL: 90 * time.Second, CatchUp: "none",
		Overlap: "skip", MaxAttempts: 3, RetryBackoff: 10 * time.Second, Shell: "true", Env: map[string]string{}, Line: 2,
	}
	if diff := cmp.Diff([]Job{want}, f.Jobs); diff != "" {
		t.Fatalf("Jobs (-want +got):\n%s", diff)
	}
	if f.Database != "" || f.SQLitePath != "/etc/cronfence/cronfence.db" || f.Tokens != nil {
		t.Fatalf("file-level defaults: %+v", f)
	}
}

// The package's defaults must stay those of the cronfence package.
func TestDefaultsMatchCronfence(t *testing.T) {
	t.Parallel()
	if DefaultLeaseTTL != cronfence.DefaultLeaseTTL || DefaultMaxAttempts != cronfence.DefaultMaxAttempts ||
		DefaultRetryBackoff != cronfence.DefaultRetryBackoff ||
		DefaultOverlap != string(cronfence.OverlapSkip) || MaxJobNameLength != cronfence.MaxJobNameLength {
		t.Fatal("config defaults differ from the cronfence package's")
	}
	for _, o := range []cronfence.Overlap{cronfence.OverlapSkip, cronfence.OverlapAllow, cronfence.OverlapBufferOne} {
		mustParse(t, "jobs: [{name: a, schedule: '@hourly', shell: x, overlap: "+string(o)+"}]")
	}
}

// Every field Job shares with cronfence.Job has the same name and a
// convertible type, so the binary can copy them one for one.
func TestJobFieldsMatchCronfence(t *testing.T) {
	t.Parallel()
	ours, theirs := reflect.TypeFor[Job](), reflect.TypeFor[cronfence.Job]()
	for i := range theirs.NumField() {
		tf := theirs.Field(i)
		if tf.Name == "Handler" {
			continue
		}
		of, ok := ours.FieldByName(tf.Name)
		if !ok {
			t.Errorf("config.Job lacks cronfence.Job's field %s", tf.Name)
			continue
		}
		if !of.Type.ConvertibleTo(tf.Type) {
			t.Errorf("config.Job.%s is %s, cronfence.Job's is %s", tf.Name, of.Type, tf.Type)
		}
	}
}

func TestDefaultsOverridden(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
defaults:
  schedule: "@daily"
  time_zone: Europe/Lisbon
  env: {A: "1"}
  workdir: /var
  timeout: 1m
  lease_ttl: 30s
  catch_up_window: 5m
  overlap: allow
  max_attempts: 5
  retry_backoff: 1m
  deadline: 1h
  enabled: false
  run_when_store_down: true
  completes_in_tx: true
jobs:
  - name: inherits
    shell: x
  - name: overrides
    shell: x
    schedule: "@hourly"
    time_zone: Asia/Tokyo
    env: {A: "2", B: "3"}
    workdir: /tmp
    timeout: 2m
    lease_ttl: 60s
    catch_up_window: 10m
    overlap: skip
    max_attempts: 1
    retry_backoff: 5s
    deadline: 2h
    enabled: true
    run_when_store_down: false
    completes_in_tx: false
`)
	want := []Job{{
		Name: "inherits", Schedule: "@daily", TimeZone: "Europe/Lisbon", Timeout: time.Minute,
		LeaseTTL: 30 * time.Second, CatchUpWindow: 5 * time.Minute, CatchUp: "latest", Overlap: "allow", Deadline: time.Hour,
		MaxAttempts: 5, RetryBackoff: time.Minute, Disabled: true, RunWhenStoreDown: true, CompletesInTx: true, Shell: "x",
		Env: map[string]string{"A": "1"}, Workdir: "/var", Line: 17,
	}, {
		Name: "overrides", Schedule: "@hourly", TimeZone: "Asia/Tokyo", Timeout: 2 * time.Minute,
		LeaseTTL: time.Minute, CatchUpWindow: 10 * time.Minute, CatchUp: "latest", Overlap: "skip", Deadline: 2 * time.Hour,
		MaxAttempts: 1, RetryBackoff: 5 * time.Second, Shell: "x", Env: map[string]string{"A": "2", "B": "3"}, Workdir: "/tmp", Line: 19,
	}}
	if diff := cmp.Diff(want, f.Jobs); diff != "" {
		t.Fatalf("Jobs (-want +got):\n%s", diff)
	}
}

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"jobs: []", "/etc/cronfence/cronfence.db"},
		{"sqlite: state/cf.db", "/etc/cronfence/state/cf.db"},
		{"sqlite: /var/lib/cf.db", "/var/lib/cf.db"},
		{"sqlite: ../cf.db", "/etc/cf.db"},
		{"database: ${EMPTY}\nsqlite: x.db", "/etc/cronfence/x.db"},
	} {
		if got := mustParse(t, tc.src).SQLitePath; got != tc.want {
			t.Errorf("%q: SQLitePath = %q, want %q", tc.src, got, tc.want)
		}
	}
}

func TestExpansion(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
database: "${MISSING:-postgres://fallback/db}"
jobs:
  - name: ${MISSING:-job}-${N}
    schedule: "*/${N} * * * *"
    lease_ttl: ${TTL}
    max_attempts: ${N}
    enabled: ${YES}
    command: ["${EMPTY:-dflt}", "${EMPTY}", "$HOME", "$${LITERAL}", "a${N}b${N}"]
    env: {X: "${ADMIN_TOKEN}"}
`)
	j := f.Jobs[0]
	if f.Database != "postgres://fallback/db" || j.Name != "job-5" || j.Schedule != "*/5 * * * *" ||
		j.LeaseTTL != 2*time.Minute || j.MaxAttempts != 5 || j.Disabled || j.Env["X"] != "s3cret-admin" {
		t.Fatalf("expanded: %+v %+v", f, j)
	}
	if diff := cmp.Diff([]string{"dflt", "", "$HOME", "${LITERAL}", "a5b5"}, j.Command); diff != "" {
		t.Fatalf("Command (-want +got):\n%s", diff)
	}
}

// Parse reads the process environment.
func TestParseEnvironment(t *testing.T) {
	t.Setenv("CRONFENCE_TEST_SPEC", "@hourly")
	f, err := Parse([]byte("jobs: [{name: a, schedule: '${CRONFENCE_TEST_SPEC}', shell: x}]"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if f.Jobs[0].Schedule != "@hourly" {
		t.Fatalf("Schedule = %q", f.Jobs[0].Schedule)
	}
	if _, err := Parse([]byte("database: ${CRONFENCE_TEST_UNSET_VARIABLE}"), "c.yaml"); err == nil ||
		!strings.Contains(err.Error(), "c.yaml:1: database: environment variable CRONFENCE_TEST_UNSET_VARIABLE is not set") {
		t.Fatalf("err = %v", err)
	}
}

func TestExample(t *testing.T) {
	t.Parallel()
	f, err := Load(filepath.Join("..", "..", "..", "..", "examples", "cronfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) < 2 || len(f.Tokens) == 0 || !filepath.IsAbs(f.SQLitePath) {
		t.Fatalf("example: %+v", f)
	}
	catchUp := false
	for _, j := range f.Jobs {
		catchUp = catchUp || j.CatchUpWindow > 0
	}
	if !catchUp {
		t.Fatal("no example job has a catch-up window")
	}
}

// What the catch-up keys mean when some are left out, and a window the
// defaults give that a job's own none drops. Only catch_up: all bounds the
// retention: latest runs a job's latest slot, whose claim is never pruned.
func TestCatchUpKeys(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `
defaults:
  catch_up_window: 200h
jobs:
  - {name: latest, schedule: "@hourly", shell: x}
  - {name: none, schedule: "@hourly", shell: x, catch_up: none}
  - {name: all, schedule: "@hourly", shell: x, catch_up: all, catch_up_window: 2h}
`)
	type got struct {
		policy string
		window time.Duration
		max    int
	}
	want := []got{{"latest", 200 * time.Hour, 0}, {"none", 0, 0}, {"all", 2 * time.Hour, 0}}
	for i, j := range f.Jobs {
		if g := (got{j.CatchUp, j.CatchUpWindow, j.MaxCatchUp}); g != want[i] {
			t.Errorf("job %s: %+v, want %+v", j.Name, g, want[i])
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("err = %v", err)
	}
}

// A YAML structure error (a key indented too little or too much) is
// reported at the line where the structure broke, not at the line where
// the list or mapping it broke started (yaml.v3's message gives that
// one's line, counted from 0, or none on line 1).
func TestYAMLStructureErrorLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, src, want string
	}{
		{"key dedented in a job", "jobs:\n  - name: a\n    schedule: '@daily'\n   shell: x\n",
			"cronfence.yaml:4: YAML: did not find expected '-' indicator"},
		{"key dedented in a later job", "database: postgres://h/d\njobs:\n  - name: a\n    schedule: '@daily'\n    shell: x\n  bad: 1\n",
			"cronfence.yaml:6: YAML: did not find expected '-' indicator"},
		{"key indented in a job", "jobs:\n  - name: a\n    schedule: '@daily'\n    shell: x\n  - name: b\n     schedule: '@daily'\n    shell: x\n",
			"cronfence.yaml:6: YAML: mapping values are not allowed in this context"},
		{"env key dedented", "jobs:\n  - name: a\n    env:\n      A: 1\n     B: 2\n    schedule: '@daily'\n",
			"cronfence.yaml:5: YAML: did not find expected key"},
		{"top-level key indented", "sqlite: a.db\njobs:\n  - {name: a, schedule: '@daily', shell: x}\n history:\n  retention: 30d\n",
			"cronfence.yaml:4: YAML: "},
		{"list item under a scalar", "jobs: []\n - a\n", "cronfence.yaml:2: YAML: did not find expected key"},
		{"stray bracket", "jobs: []\nsqlite: [a]]\n", "cronfence.yaml:2: YAML: did not find expected key"},
		{"unclosed flow mapping", "sqlite: x\njobs: []\nhistory: {retention: 1d\n", "cronfence.yaml:3: YAML: did not find expected ',' or '}'"},
		{"unclosed quote", "jobs:\n  - name: a\n    shell: \"echo\n    schedule: '@daily'\n",
			"cronfence.yaml:3: YAML: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseTest(t, tc.src)
			if err == nil || !strings.HasPrefix(err.Error(), "/etc/cronfence/"+tc.want) {
				t.Errorf("error %v; want it to start %q, for:\n%s", err, tc.want, tc.src)
			}
		})
	}
}

// database: takes what --database takes: PostgreSQL URLs and key=value
// strings, and MySQL or MariaDB URLs (docs/config.md).
func TestDatabaseTakesWhatTheFlagTakes(t *testing.T) {
	t.Parallel()
	for _, url := range []string{
		"postgres://u@db:5432/cron", "postgresql://u@db/cron?sslmode=require", "host=db dbname=cron user=u",
		"mysql://cron:secret@db:3306/cron", "mariadb://cron@db/cron?tls=true",
	} {
		f, err := parseTest(t, "database: '"+url+"'\njobs: []\n")
		if err != nil {
			t.Errorf("database: %s: %v", url, err)
		} else if f.Database != url {
			t.Errorf("database: %s: Database %q", url, f.Database)
		}
	}
}

// A variable that is not set is an error in a value the command reads,
// and none in one it does not read, which is left empty.
func TestReadsRequiresOnlyWhatItReads(t *testing.T) {
	t.Parallel()
	const src = `database: ${NOPE_DB}
tokens:
  - {name: ops, role: admin, token: "${NOPE_TOKEN}"}
webhook:
  url: ${NOPE_HOOK}
monitor:
  check_every: ${NOPE_CHECK}
history:
  retention: ${NOPE_KEEP}
defaults:
  env: {SHARED: "${NOPE_SHARED}"}
jobs:
  - name: a
    schedule: "${NOPE_SCHEDULE}"
    shell: echo ${NOPE_A}
  - name: b
    schedule: "@daily"
    timeout: ${NOPE_TIMEOUT}
    command: [run, "${NOPE_B}"]
`
	all := []string{"NOPE_DB", "NOPE_TOKEN", "NOPE_HOOK", "NOPE_CHECK", "NOPE_KEEP", "NOPE_SHARED", "NOPE_SCHEDULE", "NOPE_A", "NOPE_TIMEOUT", "NOPE_B"}
	for _, tc := range []struct {
		name  string
		reads Reads
		want  []string // the variables required
	}{
		{"everything", Everything, all},
		{"nothing", Reads{}, nil},
		{"database", Reads{Database: true}, []string{"NOPE_DB"}},
		{"schedules", Reads{Schedules: true}, []string{"NOPE_SCHEDULE", "NOPE_TIMEOUT"}},
		{"run b", Reads{Run: "b"}, []string{"NOPE_SHARED", "NOPE_TIMEOUT", "NOPE_B"}},
		{"monitor", Reads{Monitor: true}, []string{"NOPE_CHECK"}},
		{"secrets", Reads{Tokens: true, Webhook: true}, []string{"NOPE_TOKEN", "NOPE_HOOK"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := parse([]byte(src), "/etc/cronfence/cronfence.yaml", lookup, tc.reads)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("error %v; want none", err)
				}
				if f.Tokens[0].Token != "" || f.Webhook.URL != "" || len(f.Jobs[1].Command) != 0 || len(f.Jobs[0].Env) != 0 {
					t.Errorf("values not read are not left empty: %+v", f)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; want %q required", tc.want)
			}
			for _, v := range all {
				if got, want := strings.Contains(err.Error(), "environment variable "+v+" is not set"), slices.Contains(tc.want, v); got != want {
					t.Errorf("%s required: %v, want %v; error:\n%v", v, got, want, err)
				}
			}
			if strings.Contains(err.Error(), "is required") {
				t.Errorf("a value holding an unset variable is reported missing too:\n%v", err)
			}
		})
	}
}

// job wraps fields in a one-job file whose job starts on line 2, so the
// fields start on line 3.
func job(fields string) string {
	return "jobs:\n  - name: j\n" + fields
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const cmd = "    shell: x\n"
	const sched = "    schedule: \"@hourly\"\n"
	for _, tc := range []struct {
		name string
		src  string
		want []string // fragments, each in the message
	}{
		{"empty file", "", []string{"cronfence.yaml: empty file"}},
		{"comment only", "# nothing\n", []string{"cronfence.yaml: empty file"}},
		{"not a mapping", "- a\n", []string{"cronfence.yaml:1: must be a mapping"}},
		{"yaml syntax", "jobs:\n  - name: a\n   bad: [\n", []string{"cronfence.yaml:3: YAML: did not find expected '-' indicator"}},
		{"yaml tab", "jobs: []\n\tsqlite: x\n", []string{"cronfence.yaml:2: YAML: found character that cannot start any token"}},
		{"two documents", "jobs: []\n---\njobs: []\n", []string{"more than one YAML document"}},
		{"unknown top-level", "jobz: []\n", []string{"cronfence.yaml:1: jobz: unknown field; expected one of database, sqlite, tokens, defaults, jobs"}},
		{"unknown job field", job(cmd + sched + "    comand: [x]\n"), []string{"cronfence.yaml:5: jobs[0].comand: unknown field"}},
		{"unknown defaults field", "defaults:\n  name: x\n", []string{"cronfence.yaml:2: defaults.name: unknown field"}},
		{"unknown token field", "tokens:\n  - name: a\n    role: read\n    token: t\n    scope: x\n", []string{"cronfence.yaml:5: tokens[0].scope: unknown field"}},
		{"repeated key", job(cmd + sched + "    shell: y\n"), []string{"cronfence.yaml:5: jobs[0].shell: repeated (first on line 3)"}},
		{"alias", "defaults: &d\n  timeout: 1m\njobs:\n  - name: a\n    shell: x\n    schedule: '@daily'\n    env: *d\n", []string{"cronfence.yaml:7: jobs[0].env: YAML aliases"}},
		{"merge key", "jobs:\n  - name: a\n    <<: {shell: x}\n", []string{"cronfence.yaml:3: jobs[0].<<: YAML merge keys are not supported"}},
		{"jobs not a list", "jobs: {a: 1}\n", []string{"cronfence.yaml:1: jobs: must be a list"}},
		{"job not a mapping", "jobs:\n  - just-a-name\n", []string{"cronfence.yaml:2: jobs[0]: must be a mapping"}},

		{"bad cron", job(cmd + "    schedule: \"61 * * * *\"\n"), []string{`cronfence.yaml:4: jobs[0].schedule: minute field "61"`}},
		{"bad cron from defaults", "defaults:\n  schedule: \"* * *\"\n" + job(cmd), []string{"cronfence.yaml:2: defaults.schedule: "}},
		{"schedule not a string", job(cmd + "    schedule: 5\n"), []string{"cronfence.yaml:4: jobs[0].schedule: must be a string, got the number 5; quote it"}},
		{"empty schedule", job(cmd + "    schedule: \"\"\n"), []string{"cronfence.yaml:4: jobs[0].schedule: must not be empty"}},
		{"missing schedule", job(cmd), []string{"cronfence.yaml:2: jobs[0]: schedule is required"}},
		{"bad zone", job(cmd + sched + "    time_zone: Mars/Olympus\n"), []string{`cronfence.yaml:5: jobs[0].time_zone: "Mars/Olympus" is not a time zone`}},
		{"Local zone", job(cmd + sched + "    time_zone: Local\n"), []string{`cronfence.yaml:5: jobs[0].time_zone: "Local" differs between machines`}},
		{"bad default zone", "defaults:\n  time_zone: Nowhere\n" + job(cmd+sched), []string{"cronfence.yaml:2: defaults.time_zone: \"Nowhere\" is not a time zone"}},
		{"CRON_TZ in spec", job(cmd + "    schedule: \"CRON_TZ=Nowhere 0 * * * *\"\n"), []string{"cronfence.yaml:4: jobs[0].schedule: time zone \"Nowhere\""}},
		{"schedule never fires", job(cmd + "    schedule: \"0 0 31 2 *\"\n"), []string{`cronfence.yaml:4: jobs[0].schedule: spec "0 0 31 2 *": never fires: day 31 never falls in February`}},
		{"default schedule never fires", "defaults:\n  schedule: \"0 0 30 2 *\"\n" + job(cmd), []string{`cronfence.yaml:2: defaults.schedule: spec "0 0 30 2 *": never fires: day 30 never falls in February`}},
		{"schedule never fires in its zone", job(cmd + "    schedule: \"* 2 8-14 3 */7\"\n    time_zone: America/New_York\n"), []string{`cronfence.yaml:4: jobs[0].schedule: spec "* 2 8-14 3 */7": never fires: no time it names from now on exists in America/New_York`}},

		{"negative timeout", job(cmd + sched + "    timeout: -5s\n"), []string{`cronfence.yaml:5: jobs[0].timeout: "-5s" must not be negative`}},
		{"negative catch-up", job(cmd + sched + "    catch_up_window: -1h\n"), []string{`cronfence.yaml:5: jobs[0].catch_up_window: "-1h" must not be negative`}},
		{"negative deadline", job(cmd + sched + "    deadline: -1m\n"), []string{`cronfence.yaml:5: jobs[0].deadline: "-1m" must not be negative`}},
		{"negative default", "defaults:\n  timeout: -1s\n", []string{`cronfence.yaml:2: defaults.timeout: "-1s" must not be negative`}},
		{"malformed duration", job(cmd + sched + "    timeout: 5 minutes\n"), []string{`cronfence.yaml:5: jobs[0].timeout: "5 minutes" is not a duration; write e.g. "90s"`}},
		{"bare integer duration", job(cmd + sched + "    timeout: 90\n"), []string{`cronfence.yaml:5: jobs[0].timeout: 90 is a bare number; write a duration with its unit, e.g. "90s"`}},
		{"bare float duration", job(cmd + sched + "    deadline: 1.5\n"), []string{`cronfence.yaml:5: jobs[0].deadline: 1.5 is a bare number`}},
		{"quoted unitless duration", job(cmd + sched + "    timeout: \"90\"\n"), []string{`cronfence.yaml:5: jobs[0].timeout: "90" is not a duration; write e.g. "90s"`}},
		{"duration as list", job(cmd + sched + "    timeout: [1s]\n"), []string{`cronfence.yaml:5: jobs[0].timeout: must be a single value, got a list`}},
		{"lease too short", job(cmd + sched + "    lease_ttl: 10ms\n"), []string{`cronfence.yaml:5: jobs[0].lease_ttl: "10ms" must be between 1s and 168h0m0s`}},
		{"lease too long", job(cmd + sched + "    lease_ttl: 200h\n"), []string{`cronfence.yaml:5: jobs[0].lease_ttl: "200h0m0s" must be between`}},

		{"duplicate job name", "jobs:\n  - {name: a, schedule: '@daily', shell: x}\n  - {name: a, schedule: '@daily', shell: x}\n", []string{`cronfence.yaml:3: jobs[1].name: "a" is already the name of jobs[0]`}},
		{"missing name", "jobs:\n  - schedule: '@daily'\n    shell: x\n", []string{"cronfence.yaml:2: jobs[0]: name is required"}},
		{"empty name", "jobs:\n  - name: ''\n    schedule: '@daily'\n    shell: x\n", []string{"cronfence.yaml:2: jobs[0].name: name must not be empty"}},
		{"NUL in name", "jobs:\n  - name: \"a\\0b\"\n    schedule: '@daily'\n    shell: x\n", []string{"cronfence.yaml:2: jobs[0].name: must not contain NUL bytes"}},
		{"long name", "jobs:\n  - name: " + strings.Repeat("n", 151) + "\n    schedule: '@daily'\n    shell: x\n", []string{"cronfence.yaml:2: jobs[0].name: must be at most 150 bytes, got 151"}},
		{"numeric name", "jobs:\n  - name: 42\n    schedule: '@daily'\n    shell: x\n", []string{"cronfence.yaml:2: jobs[0].name: must be a string, got the number 42"}},

		{"neither command nor shell", job(sched), []string{"cronfence.yaml:2: jobs[0]: command (an argv list) or shell (a script for /bin/sh -c) is required"}},
		{"both command and shell", job(cmd + sched + "    command: [x]\n"), []string{"cronfence.yaml:2: jobs[0]: set command or shell, not both"}},
		{"empty argv", job(sched + "    command: []\n"), []string{"cronfence.yaml:4: jobs[0].command: must not be empty"}},
		{"empty program", job(sched + "    command: ['', a]\n"), []string{"cronfence.yaml:4: jobs[0].command[0]: the program must not be empty"}},
		{"command as string", job(sched + "    command: ls -l\n"), []string{"cronfence.yaml:4: jobs[0].command: must be a list of arguments"}},
		{"null argument", job(sched + "    command: [ls, ~]\n"), []string{"cronfence.yaml:4: jobs[0].command[1]: must not be null"}},
		{"empty shell", job(sched + "    shell: ' '\n"), []string{"cronfence.yaml:4: jobs[0].shell: must not be empty"}},

		{"bad overlap", job(cmd + sched + "    overlap: queue\n"), []string{`cronfence.yaml:5: jobs[0].overlap: "queue" must be skip, allow or buffer-one`}},
		{"negative jitter", job(cmd + sched + "    jitter: -1s\n"), []string{`cronfence.yaml:5: jobs[0].jitter: "-1s" must not be negative`}},
		{"exclude not a list", job(cmd + sched + "    exclude: \"* * 25 12 *\"\n"), []string{`cronfence.yaml:5: jobs[0].exclude: must be a list of ranges (FROM/TO) and calendar entries`}},
		{"exclude reversed", job(cmd + sched + "    exclude: [2026-12-27/2026-12-24]\n"), []string{`cronfence.yaml:5: jobs[0].exclude: exclusion "2026-12-27/2026-12-24": its end 2026-12-24T00:00:00Z is not after its start 2026-12-27T00:00:00Z`}},
		{"exclude overlapping", job(cmd + sched + "    exclude: [2026-12-24/2026-12-27, 2026-12-26/2026-12-28]\n"), []string{`cronfence.yaml:5: jobs[0].exclude: exclusions "2026-12-24/2026-12-27" and "2026-12-26/2026-12-28" overlap`}},
		{"exclude bad calendar", job(cmd + sched + "    exclude: [\"* * 32 12 *\"]\n"), []string{`cronfence.yaml:5: jobs[0].exclude: exclusion "* * 32 12 *": day-of-month field "32"`}},
		{"exclude null entry", job(cmd + sched + "    exclude: [~]\n"), []string{`cronfence.yaml:5: jobs[0].exclude[0]: must be a string, got null`}},
		{"top-level exclude bad", "exclude: [yesterday/today]\njobs: []\n", []string{`cronfence.yaml:1: exclude: exclusion "yesterday/today": start: "yesterday" is not a time`}},
		{"bad catch_up", job(cmd + sched + "    catch_up: every\n    catch_up_window: 1h\n"), []string{`cronfence.yaml:5: jobs[0].catch_up: "every" must be none, latest or all`}},
		{"catch_up all without a window", job(cmd + sched + "    catch_up: all\n"), []string{`cronfence.yaml:5: jobs[0].catch_up: all needs catch_up_window: how late a missed slot still runs`}},
		{"catch_up none with a window", job(cmd + sched + "    catch_up: none\n    catch_up_window: 1h\n"), []string{`cronfence.yaml:6: jobs[0].catch_up_window: 1h0m0s is set but catch_up is none (line 5)`}},
		{"max_catch_up with latest", job(cmd + sched + "    catch_up_window: 1h\n    max_catch_up: 5\n"), []string{`cronfence.yaml:6: jobs[0].max_catch_up: applies only to catch_up: all, not latest`}},
		{"max_catch_up over the limit", job(cmd + sched + "    catch_up: all\n    catch_up_window: 1h\n    max_catch_up: 10001\n"), []string{`cronfence.yaml:7: jobs[0].max_catch_up: 10001 must be between 1 and 10000`}},
		{"catch_up all past the retention", job(cmd + sched + "    catch_up: all\n    catch_up_window: 200h\n"), []string{`cronfence.yaml:6: jobs[0].catch_up_window: 200h0m0s is not shorter than the history retention (168h0m0s by default): catch-up (all) runs every slot`}},
		{"max_attempts zero", job(cmd + sched + "    max_attempts: 0\n"), []string{"cronfence.yaml:5: jobs[0].max_attempts: 0 must be at least 1"}},
		{"retry_backoff zero", job(cmd + sched + "    retry_backoff: 0s\n"), []string{`cronfence.yaml:5: jobs[0].retry_backoff: "0s" must be positive; leave it out for 10s (max_attempts: 1 turns retries off)`}},
		{"retry_backoff words", job(cmd + sched + "    retry_backoff: soon\n"), nil},
		{"max_attempts string", job(cmd + sched + "    max_attempts: three\n"), []string{`cronfence.yaml:5: jobs[0].max_attempts: must be a whole number, got "three"`}},
		{"max_attempts variable", job(cmd + sched + "    max_attempts: ${YES}\n"), []string{`cronfence.yaml:5: jobs[0].max_attempts: "true" is not a whole number`}},
		{"enabled not a bool", job(cmd + sched + "    enabled: yes\n"), []string{`cronfence.yaml:5: jobs[0].enabled: must be true or false, got "yes"`}},
		{"enabled variable", job(cmd + sched + "    enabled: ${N}\n"), []string{`cronfence.yaml:5: jobs[0].enabled: "5" must be true or false`}},
		{"env not a mapping", job(cmd + sched + "    env: [A=1]\n"), []string{"cronfence.yaml:5: jobs[0].env: must be a mapping (NAME: value)"}},
		{"env reserved name", job(cmd + sched + "    env: {CRONFENCE_SLOT: x}\n"), []string{"cronfence.yaml:5: jobs[0].env.CRONFENCE_SLOT: CRONFENCE_ variables are set by cronfence"}},
		{"env bad name", job(cmd + sched + "    env: {\"A=B\": x}\n"), []string{`cronfence.yaml:5: jobs[0].env: "A=B" is not an environment variable name`}},
		{"env null value", job(cmd + sched + "    env: {A: ~}\n"), []string{"cronfence.yaml:5: jobs[0].env.A: must not be null"}},
		{"empty workdir", job(cmd + sched + "    workdir: ''\n"), []string{"cronfence.yaml:5: jobs[0].workdir: must not be empty"}},

		{"missing variable", "database: ${NOPE}\n", []string{"cronfence.yaml:1: database: environment variable NOPE is not set (write ${NOPE:-default} for a default)"}},
		{"missing variable in argv", job(sched + "    command: [x, \"${NOPE2}\"]\n"), []string{"cronfence.yaml:4: jobs[0].command[1]: environment variable NOPE2 is not set"}},
		{"unterminated variable", "database: ${NOPE\n", []string{`cronfence.yaml:1: database: unterminated ${ in "${NOPE"`}},
		{"bad variable name", "database: ${1X}\n", []string{`cronfence.yaml:1: database: ${1X}: "1X" is not a variable name`}},

		{"bad database scheme", "database: ftp://x/y\n", []string{`cronfence.yaml:1: database: scheme "ftp": must be postgres:// or postgresql:// (PostgreSQL), or mysql:// or mariadb:// (MySQL, MariaDB)`}},
		{"bad database scheme on line 2", "# a comment\ndatabase: sqlite://x/y\n", []string{`cronfence.yaml:2: database: scheme "sqlite"`}},
		{"database and sqlite", "database: postgres://x/y\nsqlite: a.db\n", []string{"cronfence.yaml:2: sqlite: set database or sqlite, not both"}},
		{"empty sqlite", "sqlite: ''\n", []string{"cronfence.yaml:1: sqlite: must not be empty"}},

		{"tokens not a list", "tokens: {a: b}\n", []string{"cronfence.yaml:1: tokens: must be a list"}},
		{"bad role", "tokens:\n  - {name: a, role: root, token: t}\n", []string{`cronfence.yaml:2: tokens[0].role: "root" must be admin or read`}},
		{"empty token", "tokens:\n  - {name: a, role: read, token: ''}\n", []string{"cronfence.yaml:2: tokens[0].token: must not be empty"}},
		{"empty token from variable", "tokens:\n  - {name: a, role: read, token: '${EMPTY}'}\n", []string{"cronfence.yaml:2: tokens[0].token: must not be empty"}},
		{"empty token name", "tokens:\n  - {name: '', role: read, token: t}\n", []string{"cronfence.yaml:2: tokens[0].name: name must not be empty"}},
		{"duplicate token name", "tokens:\n  - {name: a, role: read, token: t1}\n  - {name: a, role: read, token: t2}\n", []string{`cronfence.yaml:3: tokens[1].name: "a" is already the name of tokens[0]`}},
		{"duplicate token value", "tokens:\n  - {name: a, role: read, token: t}\n  - {name: b, role: admin, token: t}\n", []string{"cronfence.yaml:3: tokens[1].token: same token as tokens[0]"}},
		{"missing token fields", "tokens:\n  - {name: a}\n", []string{"cronfence.yaml:2: tokens[0]: role is required", "cronfence.yaml:2: tokens[0]: token is required"}},
		{"numeric token", "tokens:\n  - {name: a, role: read, token: 1234}\n", []string{"cronfence.yaml:2: tokens[0].token: must be a string, got the number 1234; quote it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := parseTest(t, tc.src)
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.src)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *config.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\nlacks %q", err, w)
				}
			}
		})
	}
}

// A secret never appears in a message.
func TestTokenNotInMessages(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, "tokens:\n  - {name: a, role: read, token: hunter2}\n  - {name: b, role: read, token: hunter2}\n")
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
}

// Every problem is reported at once, in line order.
func TestParseCollectsAllErrors(t *testing.T) {
	t.Parallel()
	_, err := parseTest(t, `
jobs:
  - name: a
    schedule: "bad"
    timeout: -1s
    shell: x
  - name: a
    schedule: "@daily"
    time_zone: Nowhere
  - name: c
    schedule: "@daily"
    shell: x
    overlap: sometimes
    max_attempts: 0
`)
	want := []string{
		`/etc/cronfence/cronfence.yaml:3: jobs[0].schedule: `,
		`/etc/cronfence/cronfence.yaml:4: jobs[0].timeout: "-1s" must not be negative`,
		`/etc/cronfence/cronfence.yaml:6: jobs[1].name: "a" is already the name of jobs[0]`,
		`/etc/cronfence/cronfence.yaml:6: jobs[1]: command (an argv list) or shell (a script for /bin/sh -c) is required`,
		`/etc/cronfence/cronfence.yaml:8: jobs[1].time_zone: "Nowhere" is not a time zone`,
		`/etc/cronfence/cronfence.yaml:12: jobs[2].overlap: "sometimes" must be skip, allow or buffer-one`,
		`/etc/cronfence/cronfence.yaml:13: jobs[2].max_attempts: 0 must be at least 1`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], w)
		}
	}
}
