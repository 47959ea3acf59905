package cronfencetest_test

import (
	"testing"

	"github.com/cronfence/cronfence/internal/readmesnippet"
)

// The README's "Testing your handlers" code is the body of testDailyClose
// (example_test.go), which Example_testingYourHandlers runs, line for line:
// a snippet that drifts from the code the tests run fails here.
func TestREADMETestingYourHandlersIsTheExample(t *testing.T) {
	t.Parallel()
	readmesnippet.Check(t, "../README.md", "## Testing your handlers", "example_test.go",
		"func testDailyClose(t *testing.T, st *sqlite.Store) {")
}
