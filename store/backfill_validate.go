package store

import "time"

// The instants a backfill's range and a slot listing may name: those every
// store can keep (MySQL's DATETIME holds years 1000 to 9999).
var (
	minRangeInstant = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	maxRangeInstant = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// validRange checks a range [from, to): both set, to after from, and both
// instants a store can keep.
func validRange(from, to time.Time) error {
	switch {
	case from.IsZero() || to.IsZero():
		return invalid("from and to must be set")
	case !to.After(from):
		return invalid("to (%s) must be after from (%s)", to.UTC().Format(time.RFC3339Nano), from.UTC().Format(time.RFC3339Nano))
	case from.Before(minRangeInstant) || !to.Before(maxRangeInstant):
		return invalid("from and to must be from year 1000 to 9999, got %s and %s",
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Validate checks the arguments of BackfillCreate.
func (p BackfillCreateParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if err := validRange(p.From, p.To); err != nil {
		return err
	}
	if p.Total < 0 || p.Total > MaxBackfillSlots {
		return invalid("total must be from 0 to %d, got %d", MaxBackfillSlots, p.Total)
	}
	if p.Rate < 0 || p.Rate > MaxBackfillRate {
		return invalid("rate must be from 0 to %d, got %d", MaxBackfillRate, p.Rate)
	}
	return ValidateName("by", p.By)
}

// Validate checks the arguments of BackfillList.
func (p BackfillListParams) Validate() error {
	if p.Job != "" {
		if err := ValidateName("job", p.Job); err != nil {
			return err
		}
	}
	if p.Before < 0 {
		return invalid("before must not be negative, got %d", p.Before)
	}
	if p.Limit < 0 || p.Limit > MaxBackfillListLimit {
		return invalid("limit must be from 0 to %d, got %d", MaxBackfillListLimit, p.Limit)
	}
	return nil
}

// EffectiveLimit is the limit BackfillList applies.
func (p BackfillListParams) EffectiveLimit() int {
	if p.Limit == 0 {
		return DefaultBackfillListLimit
	}
	return p.Limit
}

// Validate checks the arguments of BackfillProgress.
func (p BackfillProgressParams) Validate() error {
	if p.ID < 1 {
		return invalid("backfill ID must be at least 1, got %d", p.ID)
	}
	c := p.Counts
	for _, n := range []int{c.Ran, c.Failed, c.Completed, c.FailedBefore, c.Skipped, c.Running, c.Paused, c.Excluded, c.Taken} {
		if n < 0 {
			return invalid("counts must not be negative, got %+v", c)
		}
	}
	if c.Handled() > MaxBackfillSlots {
		return invalid("counts must add up to at most %d, got %d", MaxBackfillSlots, c.Handled())
	}
	if !p.Cursor.IsZero() && (p.Cursor.Before(minRangeInstant) || !p.Cursor.Before(maxRangeInstant)) {
		return invalid("cursor must be from year 1000 to 9999, got %s", p.Cursor.UTC().Format(time.RFC3339Nano))
	}
	return ValidateName("driver", p.Driver)
}

// ValidateBackfillCancel checks the arguments of BackfillCancel.
func ValidateBackfillCancel(id int64, by string) error {
	if id < 1 {
		return invalid("backfill ID must be at least 1, got %d", id)
	}
	return ValidateName("by", by)
}

// ValidateBackfillID checks the argument of BackfillGet.
func ValidateBackfillID(id int64) error {
	if id < 1 {
		return invalid("backfill ID must be at least 1, got %d", id)
	}
	return nil
}

// Validate checks the arguments of SlotList.
func (p SlotListParams) Validate() error {
	if err := ValidateName("job", p.Job); err != nil {
		return err
	}
	if err := validRange(p.From, p.To); err != nil {
		return err
	}
	if p.Limit < 0 || p.Limit > MaxSlotListLimit {
		return invalid("limit must be from 0 to %d, got %d", MaxSlotListLimit, p.Limit)
	}
	return nil
}

// EffectiveLimit is the limit SlotList applies.
func (p SlotListParams) EffectiveLimit() int {
	if p.Limit == 0 {
		return MaxSlotListLimit
	}
	return p.Limit
}
