package cronfence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// Slots nobody will run are recorded, never only logged: a slot given up
// because a deposed writer held its lease until a later slot was due, and
// slots passed over when the loop could not fire them in time (the host
// slept, the process was stopped, the clock jumped) and fired the job's
// latest instead. Store.SlotSkip writes each as skipped with a skip run row
// naming the reason, once across replicas, and only where no replica
// claimed or ran the slot.

// maxPassedOverRecorded bounds the skip rows one stall writes for one job:
// an every-second job whose host slept for a day passed over 86,399 slots.
// The last row written says that more followed.
const maxPassedOverRecorded = 10

// maxSkipBatch bounds one statement of skips, as maxClaimBatch bounds a
// claim.
const maxSkipBatch = 1000

// maxSkipLines bounds the lines one recording of skips logs, one per slot;
// the rest are counted in one line.
const maxSkipLines = 10

// passedOverSlots returns the skips of j's slots from first up to, not
// including, latest: the slots a stalled loop did not fire.
func passedOverSlots(owner string, j *registered, first, latest time.Time) []store.SlotSkipParams {
	var items []store.SlotSkipParams
	for slot := first; !slot.IsZero() && slot.Before(latest); slot = j.sched.Next(slot) {
		if len(items) == maxPassedOverRecorded {
			last := &items[len(items)-1]
			last.Log += fmt.Sprintf("; later slots until %s were passed over too, not recorded one by one", latest.UTC().Format(time.RFC3339))
			break
		}
		skip := store.SlotSkipParams{
			Job: j.Name, Slot: slot.UTC(), LeaseName: j.leaseName(slot), Owner: owner, After: latest.UTC(),
			Reason: store.SkipPassedOver,
			Log: fmt.Sprintf("Skipped: passed over, the scheduler (%s) could not fire it in time (its host slept, its process was stopped or its clock jumped) and fired slot %s instead",
				owner, latest.UTC().Format(time.RFC3339)),
		}
		if held, ok := j.excluded(slot); ok {
			// It would not have run had it fired in time.
			skip = excludedSkip(owner, &entry{job: j, slot: slot.UTC()}, held)
		}
		items = append(items, skip)
	}
	return items
}

// givenUp is the skip of e's slot, refused store.ClaimLeaseBusy until it
// was passed (after: the later slot, or the end of a catch-up's window).
func givenUp(owner string, e *entry, writer store.Lease, after time.Time) store.SlotSkipParams {
	return store.SlotSkipParams{
		Job: e.job.Name, Slot: e.slot, LeaseName: e.job.leaseName(e.slot), Owner: owner, After: after,
		CatchUp: e.origin == OriginCatchUp, Reason: store.SkipLeaseBusy,
		Log: fmt.Sprintf("Skipped: given up, a deposed writer (%s at generation %d) stayed inside a transaction fenced under lease %s after it expired, until a later slot was due",
			writer.Owner, writer.Generation, writer.Name),
	}
}

// skipRecorder records skips. What a stall passed over, and excluded
// slots, are recorded off the loop, on one goroutine, batch after batch as fires hand them over (a
// replica that fell behind with thousands of jobs writes thousands at
// once, and a loop that waited for them fell further behind). That
// goroutine is the runner's, so Stop waits for it through the shutdown
// grace, and cancels it after.
type skipRecorder struct {
	e      *env
	beside func(func(ctx context.Context)) // the runner's: a goroutine Stop waits for

	mu        sync.Mutex
	batches   [][]store.SlotSkipParams // each one fire's, apart: a store refuses a batch naming a slot twice
	recording bool
}

// recordLater hands skips found at a fire (what a stall passed over,
// excluded slots) to the goroutine that records them, starting one if
// none runs.
func (r *skipRecorder) recordLater(items []store.SlotSkipParams) {
	if len(items) == 0 {
		return
	}
	r.mu.Lock()
	r.batches = append(r.batches, items)
	lead := !r.recording
	r.recording = true
	r.mu.Unlock()
	if !lead {
		return // the goroutine recording takes this batch next
	}
	r.beside(func(ctx context.Context) {
		for {
			r.mu.Lock()
			if len(r.batches) == 0 {
				r.recording = false
				r.mu.Unlock()
				return
			}
			batch := r.batches[0]
			r.batches = r.batches[1:]
			r.mu.Unlock()
			r.record(ctx, batch)
		}
	})
}

// record writes the skips in statements of at most maxSkipBatch, each
// bounded by StoreTimeout, and tells the Observer of each one written.
// Nothing written is no error: another replica ran the slot, or recorded
// it first. A statement that fails loses its own skips, not the ones after
// it, unless the store did not answer in time: then the rest are given up
// too, as a claim that timed out is not sent again.
func (r *skipRecorder) record(ctx context.Context, items []store.SlotSkipParams) {
	log := r.e.Log
	logged := 0
	for len(items) > 0 {
		n := min(len(items), maxSkipBatch)
		bctx, cancel := r.e.Bounded(ctx)
		runs, err := r.e.Store.SlotSkip(bctx, items[:n])
		err = r.e.TimedOut(ctx, bctx, err)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return // stopping
			}
			if errors.Is(err, service.ErrStoreTimeout) {
				log.Warn("cronfence: could not record slots given up as skipped, nor the ones after them: the store did not answer", "slots", len(items), "first_job", items[0].Job, "error", err)
				break
			}
			log.Warn("cronfence: could not record slots given up as skipped", "slots", n, "first_job", items[0].Job, "error", err)
		}
		for _, run := range runs {
			if logged < maxSkipLines {
				level := slog.LevelWarn
				if run.Reason == string(store.SkipExcluded) {
					level = slog.LevelInfo // as declared
				}
				log.Log(ctx, level, "cronfence: slot recorded as skipped", "job", run.Job, "slot", run.Slot, "reason", run.Reason)
			}
			logged++
			r.e.observe(SkipEvent{Job: run.Job, Slot: run.Slot, Owner: r.e.cfg.Owner, Reason: run.Reason})
		}
		items = items[n:]
	}
	if logged > maxSkipLines {
		log.Warn("cronfence: more slots recorded as skipped", "slots", logged-maxSkipLines)
	}
}
