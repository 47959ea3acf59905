package cronfence_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scripts/test-deps, the first step of make test, stops at once with the
// command that installs what is missing when it may not install (here
// CRONFENCE_TEST_DEPS=check), and changes nothing: a PATH without sqlite3
// must name sqlite3 in an apt-get command and exit 1.
func TestTestDepsNamesWhatIsMissing(t *testing.T) {
	bin := t.TempDir()
	for _, tool := range []string{"bash", "id", "gcc", "pg_isready", "psql", "ls", "sort", "tail", "grep", "seq", "sleep"} {
		path, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
		if err := os.Symlink(path, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join("scripts", "test-deps"))
	cmd.Env = []string{"PATH=" + bin, "CRONFENCE_TEST_DEPS=check"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("test-deps without sqlite3: %v, want exit 1\n%s", err, out)
	}
	if !strings.Contains(string(out), "apt-get install") || !strings.Contains(string(out), "sqlite3") || strings.Contains(string(out), "installing") {
		t.Fatalf("test-deps without sqlite3 said:\n%s\nwant the apt-get command naming sqlite3, and no install", out)
	}
	// With everything there it says so and exits 0.
	_, noSQLite := exec.LookPath("sqlite3")
	if _, noChromium := os.Stat("/usr/bin/chromium"); noSQLite == nil && noChromium == nil {
		ok := exec.Command(filepath.Join("scripts", "test-deps"))
		ok.Env = append(os.Environ(), "CRONFENCE_TEST_DEPS=check")
		if out, err := ok.CombinedOutput(); err != nil || !strings.Contains(string(out), "ok:") {
			t.Fatalf("test-deps on this machine: %v\n%s", err, out)
		}
	}
}
