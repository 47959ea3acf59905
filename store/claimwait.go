package store

import "time"

// DueWait is how long a claim of items waits, at now by the store's clock,
// before it judges them (SlotClaimParams.WaitDue): until the latest slot of
// an item that asks to wait and is due within MaxClaimWait, zero when there
// is none. Items further away are left to be refused not_due. For stores
// that wait in Go; a database waits in its own statement, by its clock.
func DueWait(items []SlotClaimParams, now time.Time) time.Duration {
	var wait time.Duration
	for _, p := range items {
		if d := p.Slot.Sub(now); p.WaitDue && p.Now.IsZero() && d > 0 && d <= MaxClaimWait {
			wait = max(wait, d)
		}
	}
	return wait
}
