package adminapi_test

import (
	"testing"

	"github.com/cronfence/cronfence/internal/pgtest"
)

// TestMain removes the throwaway PostgreSQL cluster, if pgtest started one.
func TestMain(m *testing.M) { pgtest.Main(m) }
