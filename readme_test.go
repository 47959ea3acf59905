package cronfence_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// The README's "Use it" program is the code Example_useIt runs
// (example_readme_test.go), line for line, so what a reader copies is what
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
	example, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatalf("the README's Use it snippet has no example that runs it: %v", err)
	}
	if err := containsIndented(strings.Split(string(example), "\n"), snippet); err != nil {
		t.Fatalf("README.md's Use it snippet is not example_readme_test.go's code: %v", err)
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
