// Package absence holds cronfence's absence checks as pure functions: given
// a snapshot of the replica registry, the jobs' leases, claims and recent
// runs, and the database clock, it says which alerts should be open. It does
// no I/O; the scheduler's monitor (package internal/monitor) gathers
// the snapshot, evaluates it and reconciles the result with the open alerts
// in the store.
//
// A check that cannot judge a subject (a schedule this binary cannot parse)
// says so in the Result, so that the monitor leaves such an alert as it is
// rather than resolving it for lack of evidence.
//
// docs/alerts.md describes every check, its thresholds and its cost.
package absence
