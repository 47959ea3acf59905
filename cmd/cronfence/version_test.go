package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go install @version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.3.1"}},
			"v0.3.1 (go1.26.8)"},
		// make build on a commit tagged v0.1.0: the go command takes the
		// module version from the tag (docs/development.md, "Releasing").
		{"tagged source tree", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.1.0"},
			Settings: vcs("vcs.revision", "7d75ab562651", "vcs.time", "2026-12-06T06:40:46Z", "vcs.modified", "false")},
			"v0.1.0 (commit 7d75ab562651, 2026-12-06T06:40:46Z, go1.26.8)"},
		{"source tree", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0a2f66d1c2", "vcs.time", "2026-12-01T20:30:00Z", "vcs.modified", "false")},
			"devel (commit 0a2f66d1c2, 2026-12-01T20:30:00Z, go1.26.8)"},
		{"dirty tree", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "0a2f66d1c2", "vcs.modified", "true")},
			"devel (commit 0a2f66d1c2, dirty, go1.26.8)"},
		{"no VCS stamp", debug.BuildInfo{GoVersion: "go1.26.8"}, "devel (go1.26.8)"},
		{"pseudo-version", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201203000-0a2f66d1c2ab"},
			Settings: vcs("vcs.revision", "0a2f66d1c2ab")},
			"v0.0.0-20261201203000-0a2f66d1c2ab (commit 0a2f66d1c2ab, go1.26.8)"},
	} {
		if got := describeBuild(&tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// `cronfence version` and `cronfence --version` print the same line and
// exit 0, without a database.
func TestVersionCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	var lines []string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), nil, args, &out, &errOut); code != 0 || errOut.Len() != 0 {
			t.Fatalf("cronfence %s: exit %d, stderr %q", args[0], code, errOut.String())
		}
		line := strings.TrimSuffix(out.String(), "\n")
		if !strings.HasPrefix(line, "cronfence ") || strings.Contains(line, "\n") {
			t.Fatalf("cronfence %s printed %q, want one line starting with \"cronfence \"", args[0], out.String())
		}
		lines = append(lines, line)
	}
	if lines[0] != lines[1] {
		t.Errorf("version %q and --version %q differ", lines[0], lines[1])
	}
	if line, want := lines[0], versionLine(); line != want {
		t.Errorf("printed %q, want %q", line, want)
	}
}
