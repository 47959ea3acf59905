package postgres

// LiveKeyHeld reports whether s holds the liveness lock key now, as the
// claims it records keys with see it (liveKeyArg): for tests that must know
// a break has been noticed before they claim.
func (s *Store) LiveKeyHeld(key int64) bool { return s.liveKeyArg(key) == key }
