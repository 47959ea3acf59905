package cronfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// Slots nobody will run are recorded, never only logged: a slot given up
// because a deposed writer held its lease until a later slot was due, and
// slots passed over when the loop could not fire them in time (the host
// slept, the process was stopped, the clock jumped) and fired the job's
// latest instead. Store.SlotSkip writes each as skipped with a skip run row
// naming the reason, once across replicas, and only where no replica
// claimed or ran the slot: after one replica's stall the others usually
// did, and nothing is written.

// maxPassedOverRecorded bounds the skip rows one stall writes for one job:
// an every-second job whose host slept for a day passed over 86,399 slots,
// and a row for each would bury the history. The last row written says
// that more followed.
const maxPassedOverRecorded = 10

// maxSkipBatch bounds one statement of skips, as maxClaimBatch bounds a
// claim: a stall of thousands of jobs passes over tens of thousands of
// slots, and one statement of them all took seconds.
const maxSkipBatch = 1000

// passedOverSlots returns the skips for the job's slots from first up to, not
// including, latest: the slots a stalled loop did not fire.
func (s *Scheduler) passedOverSlots(j *registered, first, latest time.Time) []store.SlotSkipParams {
	owner := s.cfg.Owner
	var items []store.SlotSkipParams
	for slot := first; !slot.IsZero() && slot.Before(latest); slot = j.sched.Next(slot) {
		if len(items) == maxPassedOverRecorded {
			last := &items[len(items)-1]
			last.Log += fmt.Sprintf("; later slots until %s were passed over too, not recorded one by one", latest.UTC().Format(time.RFC3339))
			break
		}
		items = append(items, store.SlotSkipParams{
			Job: j.Name, Slot: slot.UTC(), LeaseName: j.leaseName(slot), Owner: owner, After: latest.UTC(),
			Reason: store.SkipPassedOver,
			Log: fmt.Sprintf("Skipped: passed over, the scheduler (%s) could not fire it in time (its host slept, its process was stopped or its clock jumped) and fired slot %s instead",
				owner, latest.UTC().Format(time.RFC3339)),
		})
	}
	return items
}

// givenUp is the skip of a slot refused store.ClaimLeaseBusy until it was
// passed (after: the later slot, or the end of a catch-up's window).
func (s *Scheduler) givenUp(e *entry, writer store.Lease, after time.Time) store.SlotSkipParams {
	return store.SlotSkipParams{
		Job: e.job.Name, Slot: e.slot, LeaseName: e.job.leaseName(e.slot), Owner: s.cfg.Owner, After: after,
		CatchUp: e.origin == OriginCatchUp, Reason: store.SkipLeaseBusy,
		Log: fmt.Sprintf("Skipped: given up, a deposed writer (%s at generation %d) stayed inside a transaction fenced under lease %s after it expired, until a later slot was due",
			writer.Owner, writer.Generation, writer.Name),
	}
}

// recordPassedOver records the slots a stall passed over (fire), off the
// loop: a replica that fell behind with thousands of jobs writes thousands
// of skips at once, half a second at 10,000 jobs, more while they give way
// to the others' claims, and a loop that waited for them fired nothing
// meanwhile and fell further behind. One goroutine records them, batch
// after batch as the passes handed them over, each batch in one store call
// as before. It is counted as a run and ends as runs do: Stop waits for it
// through the shutdown grace (what was passed over is still recorded, each
// call bounded by StoreTimeout), and cancels it after.
func (s *Scheduler) recordPassedOver(items []store.SlotSkipParams) {
	if len(items) == 0 {
		return
	}
	q := &s.passed
	q.mu.Lock()
	q.batches = append(q.batches, items)
	lead := !q.recording
	q.recording = true
	q.mu.Unlock()
	if !lead {
		return // the goroutine recording takes this batch next
	}
	s.beside(func() {
		for {
			q.mu.Lock()
			if len(q.batches) == 0 {
				q.recording = false
				q.mu.Unlock()
				return
			}
			batch := q.batches[0]
			q.batches = q.batches[1:]
			q.mu.Unlock()
			s.recordSkips(s.runsCtx, batch)
		}
	})
}

// skipQueue is the batches of passed-over slots not yet recorded
// (recordPassedOver). Batches stay apart: each is one pass's, with its
// clock, and a store refuses a batch that names a slot twice.
type skipQueue struct {
	mu        sync.Mutex
	batches   [][]store.SlotSkipParams
	recording bool // a goroutine is recording the batches
}

// recordSkips writes the skips in statements of at most maxSkipBatch, each
// bounded by StoreTimeout, and tells the Observer of each one written.
// Nothing written is not an error: another replica ran the slot, or
// recorded it first. A statement that fails loses its own skips, not the
// ones after it, unless the store did not answer it in time: then the
// rest are given up too, as a claim that timed out is not sent again.
func (s *Scheduler) recordSkips(ctx context.Context, items []store.SlotSkipParams) {
	logged := 0
	for len(items) > 0 {
		n := min(len(items), maxSkipBatch)
		runs, err := s.skipChunk(ctx, items[:n])
		if err != nil {
			if ctx.Err() != nil {
				return // stopping
			}
			if errors.Is(err, errStoreTimeout) {
				// The statements after it would only wait as long again.
				s.log.Warn("cronfence: could not record slots given up as skipped, nor the ones after them: the store did not answer", "slots", len(items), "first_job", items[0].Job, "error", err)
				break
			}
			s.log.Warn("cronfence: could not record slots given up as skipped", "slots", n, "first_job", items[0].Job, "error", err)
		}
		for _, r := range runs {
			if logged < maxSkipLines {
				s.log.Warn("cronfence: slot recorded as skipped", "job", r.Job, "slot", r.Slot, "reason", r.Reason)
			}
			logged++
			s.observe(SkipEvent{Job: r.Job, Slot: r.Slot, Reason: r.Reason})
		}
		items = items[n:]
	}
	if logged > maxSkipLines {
		s.log.Warn("cronfence: more slots recorded as skipped", "slots", logged-maxSkipLines)
	}
}

// skipChunk is one statement of skips, bounded by StoreTimeout; one the
// store did not answer in time fails with an error wrapping
// errStoreTimeout.
func (s *Scheduler) skipChunk(ctx context.Context, items []store.SlotSkipParams) ([]store.Run, error) {
	bctx, cancel := s.bounded(ctx)
	defer cancel()
	runs, err := s.store.SlotSkip(bctx, items)
	return runs, s.timedOut(ctx, bctx, err)
}

// maxSkipLines bounds the lines one recording of skips logs, one per slot;
// the rest are counted in one line (each is a run row, and an event for
// observers). A replica that fell behind with thousands of jobs recorded
// tens of thousands at once.
const maxSkipLines = 10

// A deposed writer sitting on an expired lease is an alert, not only a
// log line: its process lost the lease (frozen, cut off) while inside a
// transaction fenced under it, and until that transaction ends the job's
// slots cannot be taken over; each waits, and is given up once a later slot
// is due. The replica that meets it raises store.AlertDeposedWriter (raised
// once across replicas, refreshed by the others), and a replica that met it
// resolves it as soon as a claim of the job finds the lease takeable again:
// claimed, or held by a live run.

// raiseDeposed raises the deposed-writer alert for the job.
func (s *Scheduler) raiseDeposed(ctx context.Context, e *entry, writer store.Lease) {
	if !s.registers() {
		return
	}
	s.mu.Lock()
	s.deposed[e.job.Name] = true
	s.mu.Unlock()
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	s.raiseAlert(ctx, store.AlertRaiseParams{
		Kind: store.AlertDeposedWriter, Subject: e.job.Name, RaisedBy: s.cfg.Owner,
		Message: fmt.Sprintf("job %q waits for a deposed writer: %s, whose lease %s at generation %d expired at %s, is still inside a transaction fenced under it; its slots cannot be taken over until that transaction ends",
			e.job.Name, writer.Owner, writer.Name, writer.Generation, writer.ExpiresAt.UTC().Format(time.RFC3339)),
		Details: map[string]string{
			"writer":     writer.Owner,
			"lease":      writer.Name,
			"generation": strconv.FormatInt(writer.Generation, 10),
			"expired_at": writer.ExpiresAt.UTC().Format(time.RFC3339Nano),
			"slot":       e.slot.UTC().Format(time.RFC3339),
		},
	})
}

// resolveDeposed resolves the job's deposed-writer alert, if this replica
// met one, once a claim of the job found its lease takeable again.
func (s *Scheduler) resolveDeposed(ctx context.Context, job string, r store.SlotClaimResult) {
	if !r.Claimed && r.Refusal != store.ClaimHeld {
		return // the answer says nothing of the lease (not due, paused, …), or it is still busy
	}
	s.mu.Lock()
	met := s.deposed[job]
	delete(s.deposed, job)
	s.mu.Unlock()
	if !met {
		return
	}
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	s.resolveAlert(ctx, store.AlertDeposedWriter, job)
}
