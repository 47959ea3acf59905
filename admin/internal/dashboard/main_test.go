package dashboard_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a goroutine behind (a
// scheduler, server or store not stopped).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
