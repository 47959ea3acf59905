package cronfence

import (
	"errors"

	"github.com/cronfence/cronfence/store"
)

// ErrLeaseLost is returned when work ran under a lease that was lost before
// it finished (taken over, or expired while renewals failed), and by
// Lease.Fence when the lease is no longer held by its generation. It is the
// same value as store.ErrLeaseLost, so either can be checked with errors.Is.
var ErrLeaseLost = store.ErrLeaseLost

// errInvalid wraps store.ErrInvalidArgument with a message naming the
// argument.
func errInvalid(msg string) error {
	return errors.Join(errors.New("cronfence: "+msg), store.ErrInvalidArgument)
}
