package riverbridge

import (
	"time"

	"github.com/cronfence/cronfence"
)

// Slot is the cronfence run a River job was enqueued by. Embed it in the
// job's args (River recurses into embedded structs), and fill it from the
// Slot the bridge hands ArgsFunc:
//
//	type ReportArgs struct {
//		riverbridge.Slot
//		Region string `json:"region"`
//	}
//
// Its Key is the args' unique field (tagged river:"unique"): the River job's
// unique key is the job kind and Key, the same for every attempt of one
// slot. Tag no other field of the args river:"unique" unless its value is
// the same for every attempt of a slot: uniqueness would then hold per
// value, not per slot.
type Slot struct {
	// Key is the run's idempotency key (cronfence.Run.IdempotencyKey):
	// "JOB/SLOT" for a scheduled slot, "JOB/manual-GENERATION" for a
	// manual run, which has no slot.
	Key string `json:"cronfence_key" river:"unique"`
	// Job is the cronfence job's name.
	Job string `json:"cronfence_job"`
	// Time is the slot, the intended occurrence (UTC); zero for a manual
	// run.
	Time time.Time `json:"cronfence_slot"`
	// Attempt is the attempt of the slot that enqueued the job: 1, or more
	// when the slot was resumed or retried.
	Attempt int `json:"cronfence_attempt"`
	// Generation is the fencing token of the enqueuing run's lease.
	Generation int64 `json:"cronfence_generation"`
}

// CronfenceSlot returns s. Through it, args that embed a Slot satisfy Args.
func (s Slot) CronfenceSlot() Slot { return s }

// SlotOf returns the Slot of run.
func SlotOf(run *cronfence.Run) Slot {
	return Slot{
		Key: run.IdempotencyKey(), Job: run.Job, Time: run.Slot.UTC(),
		Attempt: run.Attempt, Generation: run.Generation,
	}
}
