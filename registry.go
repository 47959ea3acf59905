package cronfence

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/cronfence/cronfence/store"
)

// replicaJob is a registered job's settings, as every replica must
// declare them alike, with their hash. A zone left empty is UTC, so a
// replica that spells it out does not differ from one that does not.
// exclude is the job's exclusions, its own and those for all jobs.
func replicaJob(j Job, exclude []string) store.ReplicaJob {
	zone := j.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	rj := store.ReplicaJob{
		Name: j.Name, Schedule: j.Schedule, TimeZone: zone, Timeout: j.Timeout, LeaseTTL: j.LeaseTTL,
		CatchUpWindow: j.CatchUpWindow, Overlap: string(j.Overlap), Deadline: j.Deadline,
		MaxAttempts: j.MaxAttempts, RetryBackoff: j.RetryBackoff, Disabled: j.Disabled,
	}
	if j.CatchUp == CatchUpAll {
		rj.CatchUp, rj.MaxCatchUp = string(j.CatchUp), j.MaxCatchUp
	}
	rj.Jitter = j.Jitter
	rj.Exclude = exclude
	rj.Hash = settingsHash(rj)
	return rj
}

// settingsHash is the first 16 hex digits of the SHA-256 of the settings'
// JSON (Hash left empty). encoding/json writes struct fields in declaration
// order, so equal settings give equal bytes on every replica of one build.
func settingsHash(rj store.ReplicaJob) string {
	rj.Hash = ""
	b, err := json.Marshal(rj)
	if err != nil {
		// Strings, durations, ints and bools always encode.
		panic(fmt.Sprintf("cronfence: encoding job settings: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// replicaJobs are the declared jobs as the replica registry records them
// (the stored schedules are the store's already).
func (js *jobSet) replicaJobs() []store.ReplicaJob {
	all := js.declaredJobs()
	jobs := make([]store.ReplicaJob, len(all))
	for i, r := range all {
		jobs[i] = replicaJob(r.Job, r.exclude.Entries())
	}
	return jobs
}
