package cronfence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cronfence/cronfence/store"
)

// BackfillParams say which slots of a job a backfill runs.
type BackfillParams struct {
	// From and To are the range: the job's slots at or after From and
	// before To. To must not be ahead of now, by the database clock: a
	// backfill runs past slots.
	From, To time.Time
	// IncludeFailed runs again the slots of the range whose last attempt
	// failed, one attempt more each. Without it only the slots that never
	// ran are run.
	IncludeFailed bool
	// Rate is at most how many slots the backfill starts a second; 0 for
	// no bound but one run at a time. At most store.MaxBackfillRate.
	Rate int
	// By names who asked, kept with the backfill. Required.
	By string
}

// Backfill outcomes of a slot (BackfillSlot.Outcome, and the counts of
// store.BackfillCounts).
const (
	// BackfillRun: the slot never ran; the backfill runs it.
	BackfillRun = "run"
	// BackfillRerun: the slot failed; with IncludeFailed the backfill
	// runs it again.
	BackfillRerun = "rerun"
	// BackfillCompleted: the slot completed; never run again.
	BackfillCompleted = "completed"
	// BackfillFailed: the slot failed, and is left so without
	// IncludeFailed.
	BackfillFailed = "failed"
	// BackfillSkipped: the slot was settled skipped (an overlap, a pause,
	// an exclusion, a stall): a skip is final.
	BackfillSkipped = "skipped"
	// BackfillRunning: another run has the slot now.
	BackfillRunning = "running"
	// BackfillPaused: the job is paused: the slot is left untouched (a
	// claim would settle it skipped).
	BackfillPaused = "paused"
	// BackfillExcluded: the slot is inside one of the job's exclusion
	// windows: left untouched.
	BackfillExcluded = "excluded"
)

// BackfillSlot is one slot of a backfill's range, with what the backfill
// does with it (BackfillPlan).
type BackfillSlot struct {
	Slot    time.Time
	Outcome string // one of the Backfill outcomes
}

// Backfill asks for the slots of job's range that never ran to be run
// (with IncludeFailed, the failed ones too), oldest first, one at a time,
// never overlapping the job's own runs, each once: the store's slot row
// keeps a slot to one run whoever claims it, and a slot that completed is
// never run again. It records the backfill in the store and returns it;
// a replica that registers the job (this one or another, with timers)
// drives it within a few seconds, writing its progress to the row, and
// another goes on from that progress if the driver dies. A job has one
// running backfill at a time: a second is refused, wrapping a
// *store.ConflictError that names the running one. The range's slots are
// counted first: more than Config.MaxBackfillSlots is refused, naming the
// count. Watch it with Backfills or GetBackfill, stop it with
// CancelBackfill, and see what it would do with BackfillPlan.
func (s *Scheduler) Backfill(ctx context.Context, job string, p BackfillParams) (store.Backfill, error) {
	r, total, err := s.checkBackfill(ctx, job, p)
	if err != nil {
		return store.Backfill{}, err
	}
	b, err := s.e.Store.BackfillCreate(ctx, store.BackfillCreateParams{Job: r.Name, From: p.From.UTC(), To: p.To.UTC(),
		IncludeFailed: p.IncludeFailed, Rate: p.Rate, Total: total, By: p.By})
	if err != nil {
		return store.Backfill{}, fmt.Errorf("cronfence: backfill %q: %w", job, err)
	}
	if s.e.timers() {
		// This replica registers the job: it may drive it at once.
		s.backfiller.soon()
		s.loop.poke()
	}
	s.e.Log.Info("cronfence: backfill asked", "backfill", b.ID, "job", b.Job, "from", b.From, "to", b.To, "slots", b.Total,
		"include_failed", b.IncludeFailed, "rate", b.Rate, "by", b.CreatedBy)
	return b, nil
}

// BackfillPlan is what Backfill would do with each slot of the range,
// oldest first, as the store and the job's pause and exclusions stand
// now (a dry run): it writes nothing.
func (s *Scheduler) BackfillPlan(ctx context.Context, job string, p BackfillParams) ([]BackfillSlot, error) {
	r, total, err := s.checkBackfill(ctx, job, p)
	if err != nil {
		return nil, err
	}
	paused, err := pausedNow(ctx, s.e, r)
	if err != nil {
		return nil, fmt.Errorf("cronfence: backfill %q: %w", job, err)
	}
	rows := map[int64]store.Slot{}
	for from := p.From; ; {
		page, err := s.e.Store.SlotList(ctx, store.SlotListParams{Job: r.Name, From: from, To: p.To, Limit: store.MaxSlotListLimit})
		if err != nil {
			return nil, fmt.Errorf("cronfence: backfill %q: %w", job, err)
		}
		for _, row := range page {
			rows[row.Slot.Unix()] = row
		}
		if len(page) < store.MaxSlotListLimit {
			break
		}
		from = page[len(page)-1].Slot.Add(time.Second)
	}
	plan := make([]BackfillSlot, 0, total)
	for slot := r.sched.Next(p.From.Add(-time.Nanosecond)); !slot.IsZero() && slot.Before(p.To); slot = r.sched.Next(slot) {
		row, found := rows[slot.Unix()]
		plan = append(plan, BackfillSlot{Slot: slot.UTC(), Outcome: planOutcome(r, slot, row, found, paused, p.IncludeFailed)})
	}
	return plan, nil
}

// planOutcome is what a backfill does with slot (row, when found), the
// job paused or not: the driver's judgement (backfiller.judge), read
// ahead.
func planOutcome(r *registered, slot time.Time, row store.Slot, found, paused, includeFailed bool) string {
	if found {
		switch row.Status {
		case store.SlotCompleted:
			return BackfillCompleted
		case store.SlotFailed:
			if !includeFailed {
				return BackfillFailed
			}
			if paused {
				return BackfillPaused
			}
			return BackfillRerun
		case store.SlotSkipped:
			return BackfillSkipped
		default:
			return BackfillRunning
		}
	}
	if _, excluded := r.excluded(slot); excluded {
		return BackfillExcluded
	}
	if paused {
		return BackfillPaused
	}
	return BackfillRun
}

// checkBackfill refuses, naming what is wrong, a backfill of a job not
// registered here, a range reversed, empty, ahead of now or of more than
// Config.MaxBackfillSlots slots, a rate out of bounds, and no By; it
// returns the job and the count of its range's slots.
func (s *Scheduler) checkBackfill(ctx context.Context, job string, p BackfillParams) (*registered, int, error) {
	r := s.jobs.get(job)
	if r == nil {
		return nil, 0, unknownJob(job)
	}
	switch {
	case p.From.IsZero() || p.To.IsZero():
		return nil, 0, errInvalid(fmt.Sprintf("backfill %q: From and To are required", job))
	case !p.To.After(p.From):
		return nil, 0, errInvalid(fmt.Sprintf("backfill %q: To %s must be after From %s", job, p.To.UTC().Format(time.RFC3339), p.From.UTC().Format(time.RFC3339)))
	case p.Rate < 0 || p.Rate > store.MaxBackfillRate:
		return nil, 0, errInvalid(fmt.Sprintf("backfill %q: Rate must be from 0 (no bound) to %d a second, got %d", job, store.MaxBackfillRate, p.Rate))
	}
	if err := store.ValidateName("backfill's By", p.By); err != nil {
		return nil, 0, fmt.Errorf("cronfence: backfill %q: %w", job, err)
	}
	now, err := s.e.Store.Now(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("cronfence: backfill %q: %w", job, err)
	}
	if p.To.After(now) {
		return nil, 0, errInvalid(fmt.Sprintf("backfill %q: To %s is ahead of now (%s, the database clock): a backfill runs past slots",
			job, p.To.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	total := 0
	for slot := r.sched.Next(p.From.Add(-time.Nanosecond)); !slot.IsZero() && slot.Before(p.To); slot = r.sched.Next(slot) {
		if total++; total > s.e.cfg.MaxBackfillSlots {
			return nil, 0, errInvalid(fmt.Sprintf("backfill %q: the range holds more than %d slots (Config.MaxBackfillSlots); split it",
				job, s.e.cfg.MaxBackfillSlots))
		}
	}
	if total == 0 {
		return nil, 0, errInvalid(fmt.Sprintf("backfill %q: no slot of %q falls from %s to %s", job, r.Schedule,
			p.From.UTC().Format(time.RFC3339), p.To.UTC().Format(time.RFC3339)))
	}
	return r, total, nil
}

// pausedNow reports whether r is paused now: an override, or declared
// disabled.
func pausedNow(ctx context.Context, e *env, r *registered) (bool, error) {
	states, err := e.Store.JobStateList(ctx)
	if err != nil {
		return false, err
	}
	now := e.Now()
	for _, st := range states {
		if st.Job == r.Name {
			if o := st.Override(now); o != nil {
				return !*o, nil
			}
		}
	}
	return r.Disabled, nil
}

// GetBackfill returns backfill id, or an error wrapping store.ErrNotFound.
func (s *Scheduler) GetBackfill(ctx context.Context, id int64) (store.Backfill, error) {
	b, err := s.e.Store.BackfillGet(ctx, id)
	if err != nil {
		return store.Backfill{}, fmt.Errorf("cronfence: backfill %d: %w", id, err)
	}
	return b, nil
}

// Backfills lists backfills, newest first (store.BackfillListParams).
func (s *Scheduler) Backfills(ctx context.Context, p store.BackfillListParams) ([]store.Backfill, error) {
	list, err := s.e.Store.BackfillList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("cronfence: list backfills: %w", err)
	}
	return list, nil
}

// CancelBackfill stops backfill id: its driver claims no slot after it
// reads the cancel (a run in flight ends as it would). It returns the
// backfill, cancelled; one that had ended already is returned as it is,
// with an error wrapping ErrBackfillEnded.
func (s *Scheduler) CancelBackfill(ctx context.Context, id int64, by string) (store.Backfill, error) {
	if err := store.ValidateName("cancel's by", by); err != nil {
		return store.Backfill{}, fmt.Errorf("cronfence: cancel backfill %d: %w", id, err)
	}
	b, cancelled, err := s.e.Store.BackfillCancel(ctx, id, by)
	switch {
	case err != nil:
		return store.Backfill{}, fmt.Errorf("cronfence: cancel backfill %d: %w", id, err)
	case !cancelled:
		return b, fmt.Errorf("cronfence: cancel backfill %d: %w (%s)", id, ErrBackfillEnded, b.State)
	}
	s.e.Log.Info("cronfence: backfill cancelled", "backfill", b.ID, "job", b.Job, "by", by)
	return b, nil
}

// ErrBackfillEnded is CancelBackfill's answer for a backfill that was
// done or cancelled already.
var ErrBackfillEnded = errors.New("the backfill has ended")
