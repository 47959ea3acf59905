//go:build !unix

package pgtest

import (
	"errors"
	"syscall"
)

// osUser is who the server runs as; nil means ourselves.
type osUser struct{}

var errNoUnix = errors.New("throwaway PostgreSQL servers need a Unix system; set TEST_DATABASE_URL instead")

func serverUser() (*osUser, error) { return nil, errNoUnix }

func sysProcAttr(*osUser) *syscall.SysProcAttr { return nil }

func chown(string, *osUser) error { return errNoUnix }

// processAlive answers true so nothing is ever reaped where it cannot be
// checked.
func processAlive(int) bool { return true }
