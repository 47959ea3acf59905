package cronfencetest_test

import (
	"os"
	"strings"
	"testing"
)

// The README's "Testing your handlers" code is the body of testDailyClose
// (example_test.go), which Example_testingYourHandlers runs, line for line:
// a snippet that drifts from the code the tests run fails here.
func TestREADMETestingYourHandlersIsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## Testing your handlers\n")
	if !ok {
		t.Fatal(`README.md has no "## Testing your handlers" section`)
	}
	_, block, ok := strings.Cut(section, "```go\n")
	if !ok {
		t.Fatal(`README.md's "Testing your handlers" has no Go block`)
	}
	block, _, ok = strings.Cut(block, "```\n")
	if !ok {
		t.Fatal(`README.md's "Testing your handlers" Go block does not end`)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(example), "\nfunc testDailyClose(t *testing.T, st *sqlite.Store) {\n")
	if !ok {
		t.Fatal("example_test.go has no testDailyClose")
	}
	body, _, _ = strings.Cut(body, "\n}\n")
	want := strings.Split(strings.TrimSuffix(block, "\n"), "\n")
	got := strings.Split(body, "\n")
	for i, line := range got {
		got[i] = strings.TrimPrefix(line, "\t") // one level in: a function's body
	}
	for i := range max(len(want), len(got)) {
		if i >= len(want) || i >= len(got) || want[i] != got[i] {
			t.Fatalf("README.md's snippet and testDailyClose differ first at line %d:\nREADME:  %q\nexample: %q",
				i+1, at(want, i), at(got, i))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(the end)"
}
