package cronfence

import (
	"testing"

	"github.com/cronfence/cronfence/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
