package store

import (
	"context"
	"time"
)

// Notices is implemented by a store that tells every replica, as they
// commit and without a statement of the replica's own, what the others'
// claims, finishes and heartbeats did. A scheduler on such a store claims
// each slot on one preferred replica only, and scans for dead runs only
// while a run it watches goes on (see docs/design.md, "Who claims").
//
// Notices are a saving, never a guarantee: one may be lost (a broken
// connection; NoticeGap says so), arrive late or twice. Every decision
// that matters (who runs a slot, whether a run is dead) is still taken by
// a statement; a notice only lets a replica skip one that would be
// answered "already settled".
type Notices interface {
	// Listen delivers every notice to fn, one at a time and in commit
	// order, from one goroutine, until ctx ends; then it returns ctx's
	// error. Each time it starts listening (at first, and again after its
	// connection broke) it delivers a NoticeGap first: notices from before
	// may be lost. Right after the gap it delivers a NoticeClaimed for
	// every slot running then, whose claim may be among them. When it
	// stops hearing (the connection broke) it delivers a NoticeLost, so a
	// listener can do without notices meanwhile.
	Listen(ctx context.Context, fn func(Notice)) error
}

// NoticeKind is what a Notice tells.
type NoticeKind byte

const (
	// NoticeGap: the listener (re)started; notices before it may have
	// been missed. Only Kind is set.
	NoticeGap NoticeKind = iota + 1
	// NoticeLost: the listener stopped hearing (its connection broke);
	// nothing is delivered until the next NoticeGap. Only Kind is set.
	NoticeLost
	// NoticeClaimed: a run of (Job, Slot) started, under Owner.
	NoticeClaimed
	// NoticeSettled: a claim of (Job, Slot) by Owner was answered for
	// good without starting a run: the slot was recorded skipped or
	// buffered, or refused for a reason a retry would not change. Or
	// Owner recorded the slot skipped with SlotSkip (passed over, given
	// up).
	NoticeSettled
	// NoticeEnded: the run of (Job, Slot) by Owner ended: finished, or
	// abandoned as failed by another replica. A run that ends leaving its
	// slot running, for a resume, is not told ended.
	NoticeEnded
	// NoticeAlive: Owner, a replica with timers, sent a heartbeat.
	NoticeAlive
	// NoticeGone: Owner removed itself from the replica registry (it
	// stopped).
	NoticeGone
	// NoticeSchedule: a stored schedule changed; Seq is the change's
	// sequence number (Schedules.ScheduleChanges) and Job its name.
	NoticeSchedule
	// NoticeBackfill: a backfill of Job was created (Backfills.BackfillCreate).
	NoticeBackfill
)

// Notice is one thing a replica's statement did, as Notices tells it.
type Notice struct {
	Kind  NoticeKind
	Job   string    // for claims and ends
	Slot  time.Time // for claims and ends
	Owner string
	Seq   int64 // for NoticeSchedule
}
