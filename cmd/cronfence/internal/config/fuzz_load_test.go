package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzLoad writes arbitrary bytes to a real file and loads it: no panic,
// an answer within a bound, and every problem names the file and, except
// for a file with nothing in it, the line: "cronfence.yaml:12: …".
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"", "\n", "# only a comment\n", "---\n", "~", "null", "[]", "jobs", "jobs:\n", "jobs: {}",
		"jobs:\n  - name: a\n    schedule: '* * * * *'\n    shell: x\n",
		"jobs:\n  - name: a\n    schedule: '* * * * *'\n    shell: x\n  - name: a\n    schedule: '@daily'\n    shell: y\n",
		"jobs:\n  - name: \"a\\0b\"\n    schedule: '@daily'\n    shell: x\n",
		"jobs:\n  - name: '" + strings.Repeat("x", 10<<10) + "'\n    schedule: '@daily'\n    shell: x\n",
		"jobs:\n  - name: \"\\u202Eevil\"\n    schedule: '@daily'\n    shell: x\n",
		"jobs:\n  - name: x\n    schedule: '@daily'\n    shell: x\n    timeout: -5s\n    bogus: 1\n",
		"jobs:\n\t- name: tab\n", "jobs: [\n", "jobs: {a: 1, a: 2}", "a: b: c", "\xff\xfe", "jobs: \x01",
		"\ufeffjobs: []", "%YAML 1.1\n---\njobs: []", "--- a\n--- b\n", "jobs: !!binary aGVsbG8=",
		"jobs: &a [*a]", "x: &a\n  <<: *a", "database: postgres://u@h/db\nsqlite: x.db\njobs: []",
		"tokens: [{name: a, role: admin, token: t}, {name: a, role: root, token: ''}]",
		"jobs:\n  - name: x\n    schedule: 'CRON_TZ=Mars/Olympus * * * *'\n    shell: x\n",
		"jobs:\n  - name: x\n    schedule: '@daily'\n    command: [\"\"]\n",
		"jobs:\n  - name: x\n    schedule: '@daily'\n    shell: ${NOPE}\n",
		"history:\n  retention: 1h\n  prune_every: 1m\njobs:\n  - {name: x, schedule: '@daily', shell: x, deadline: 2h}\n",
		"history: {retention: off, prune_every: 0s}\nmonitor: {heartbeat_every: 100h}\n",
		"defaults: {timeout: 200h}\njobs:\n  - {name: x, schedule: '@daily', shell: x}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		// Each input its own file, so parallel workers do not share one.
		path := filepath.Join(dir, fmt.Sprintf("cronfence-%d.yaml", time.Now().UnixNano()))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		watchdog := time.AfterFunc(5*time.Second, func() { panic(fmt.Sprintf("Load of %q takes over 5s", data)) })
		file, err := Load(path)
		watchdog.Stop()
		if err == nil {
			if file == nil || file.Path != path {
				t.Fatalf("Load = %+v without error", file)
			}
			return
		}
		var joined interface{ Unwrap() []error }
		if !errors.As(err, &joined) {
			t.Fatalf("error %v is not joined", err)
		}
		for _, x := range joined.Unwrap() {
			var ce *Error
			if !errors.As(x, &ce) {
				t.Fatalf("%T %v is not a *Error", x, x)
			}
			if !strings.HasPrefix(x.Error(), path+":") || ce.Msg == "" {
				t.Fatalf("%q does not start with the file name", x)
			}
			if ce.Line < 1 && !strings.HasPrefix(ce.Msg, "empty file") {
				t.Fatalf("%q names no line (input %q)", x, data)
			}
			// YAML may place a problem just past the last line ("---").
			if lines := yamlLines(data); ce.Line > lines+1 {
				t.Fatalf("%q names line %d of a %d-line file", x, ce.Line, lines)
			}
		}
	})
}

// yamlLines counts lines as YAML does: \r\n, \r, \n, U+0085, U+2028 and
// U+2029 each end one.
func yamlLines(data []byte) int {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	n := 1
	for _, r := range s {
		switch r {
		case '\n', '\r', 0x85, 0x2028, 0x2029:
			n++
		}
	}
	return n
}
