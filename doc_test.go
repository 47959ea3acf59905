package cronfence_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink matches an inline Markdown link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// docs/README.md is the index of the notes: a reader who starts there (the
// README sends them there) reaches every page under docs/.
func TestDocsIndexLinksEveryPage(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("docs", "README.md"))
	if err != nil {
		t.Fatalf("docs/ has no index page: %v", err)
	}
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(index), -1) {
		target, _, _ := strings.Cut(m[1], "#")
		linked[filepath.Clean(target)] = true
	}
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "README.md" && !linked[name] {
			t.Errorf("docs/README.md does not link %s", name)
		}
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "](docs/README.md)") {
		t.Error("README.md does not link docs/README.md")
	}
}

// Every relative link in the README and in docs/ names a file that exists.
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range append(pages, "README.md", "CHANGELOG.md") {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(text), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				t.Errorf("%s links %s, which does not exist", p, m[1])
			}
		}
	}
}

// The README's "Use it" program is the code Example_useIt runs
// (example_unix_test.go), line for line, so what a reader copies is what
// the tests run: a snippet that drifts from it fails here.
func TestREADMEUseItIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	snippet, err := firstGoBlock(string(readme), "## Use it")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_unix_test.go")
	if err != nil {
		t.Fatalf("the README's Use it snippet has no example that runs it: %v", err)
	}
	if err := containsIndented(strings.Split(string(example), "\n"), snippet); err != nil {
		t.Fatalf("README.md's Use it snippet is not example_unix_test.go's code: %v", err)
	}
}

// firstGoBlock returns the lines of the first ```go block after heading.
func firstGoBlock(doc, heading string) ([]string, error) {
	_, after, ok := strings.Cut(doc, "\n"+heading+"\n")
	if !ok {
		return nil, fmt.Errorf("no %q heading", heading)
	}
	_, after, ok = strings.Cut(after, "```go\n")
	if !ok {
		return nil, fmt.Errorf("no ```go block under %q", heading)
	}
	block, _, ok := strings.Cut(after, "```\n")
	if !ok {
		return nil, fmt.Errorf("the ```go block under %q does not end", heading)
	}
	return strings.Split(strings.TrimSuffix(block, "\n"), "\n"), nil
}

// containsIndented reports whether want appears in lines as consecutive
// lines, each with the same indent added (blank lines stay blank), and
// otherwise names the first line that differs from the nearest match.
func containsIndented(lines, want []string) error {
	bestAt, bestLen := -1, -1
	for i, line := range lines {
		indent, ok := strings.CutSuffix(line, want[0])
		if !ok || strings.Trim(indent, "\t") != "" || want[0] == "" {
			continue
		}
		n := 0
		for n < len(want) && i+n < len(lines) && lines[i+n] == indented(indent, want[n]) {
			n++
		}
		if n == len(want) {
			return nil
		}
		if n > bestLen {
			bestAt, bestLen = i, n
		}
	}
	if bestAt < 0 {
		return fmt.Errorf("its first line %q is nowhere in the example", want[0])
	}
	got := "(end of file)"
	if bestAt+bestLen < len(lines) {
		got = fmt.Sprintf("%q", strings.TrimLeft(lines[bestAt+bestLen], "\t"))
	}
	return fmt.Errorf("its line %d, %q, is %s in the example (line %d)", bestLen+1, want[bestLen], got, bestAt+bestLen+1)
}

func indented(indent, line string) string {
	if line == "" {
		return ""
	}
	return indent + line
}

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
