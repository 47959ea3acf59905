package postgres

// LiveKeyHeld reports whether s holds the liveness lock key now, as the
// claims it records keys with see it (liveKeyArg): for tests that must know
// a break has been noticed before they claim.
func (s *Store) LiveKeyHeld(key int64) bool { return s.liveKeyArg(key) == key }

// LeaseAcquireSQL is the acquisition statement, for tests that run it
// inside a transaction of their own to see what it locks.
func (s *Store) LeaseAcquireSQL() string { return s.q.leaseAcquire }

// NoticeChannel is the schema's notice channel, for tests that find the
// listener's session.
func NoticeChannel(schema string) string { return noticeChannel(schema) }

// RunListJobSQL is the statement that lists one job's runs, for tests of
// its plan.
func (s *Store) RunListJobSQL() string { return s.q.runListJob }
