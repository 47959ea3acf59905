// Package readmesnippet checks, in tests, that a Go snippet of README.md is
// line for line the body of a function the tests run, so a snippet cannot
// drift from the code it shows.
package readmesnippet

import (
	"os"
	"strings"
	"testing"
)

// Check fails t unless the first Go block after the README heading
// section (a whole line, "### Traces") is the body of the function of the
// Go file source whose declaration ends with signature (its text up to
// and including "{"), with the body's first level of indentation removed.
func Check(t *testing.T, readme, section, source, signature string) {
	t.Helper()
	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(text), "\n"+section+"\n")
	if !ok {
		t.Fatalf("%s has no %q section", readme, section)
	}
	_, block, ok := strings.Cut(after, "```go\n")
	if !ok {
		t.Fatalf("%s's %q has no Go block", readme, section)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatalf("%s's %q Go block does not end", readme, section)
	}
	code, err := os.ReadFile(source)
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(code), signature+"\n")
	if !ok {
		t.Fatalf("%s has no function %q", source, signature)
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	want := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	got := strings.Split(body, "\n")
	for i, line := range got {
		got[i] = strings.TrimPrefix(line, "\t") // one level in: a function's body
	}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("%s's %q snippet and %s differ first at line %d:\nREADME: %q\ncode:   %q",
				readme, section, source, i+1, line(want, i), line(got, i))
		}
	}
}

func line(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(the end)"
}
