// Package finishbatch is the group commit of runs' ends: the first attempt
// to record each end goes through a Batcher, and the ends that come in
// while a batch is in flight wait for it and go together in the next
// (store.Store.SlotFinishBatch, one round trip and one transaction). One
// end alone goes at once, as one SlotFinish; a replica ending thousands of
// runs a second sends a few batches instead of a round trip each.
package finishbatch

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cronfence/cronfence/store"
)

// ErrTimeout is the cause of an attempt to record an end that the store
// did not answer in time.
var ErrTimeout = errors.New("cronfence: the store did not answer in time")

// MaxBatch bounds one group commit: a statement batch of this many
// finishes takes tens of milliseconds, not seconds.
const MaxBatch = 1000

// Batcher sends the ends handed to it (Finish), each only after its
// handler returned. The leader (the caller that found no batch in flight)
// sends the first batch, its own end in it; ends queued meanwhile are sent
// by a goroutine of their own until the queue is empty, so no run waits for
// more than its own batch and the one in flight before it, however long the
// load lasts. The zero value with a Store is ready.
type Batcher struct {
	Store store.Store

	mu       sync.Mutex
	queue    []*queuedFinish
	flushing bool
	queued   uint64        // ends ever queued
	answered uint64        // ends ever answered; batches go in queue order
	moved    chan struct{} // closed, and replaced, when answered moves
}

type queuedFinish struct {
	p     store.SlotFinishParams
	bound time.Duration // the attempt's bound (the caller's attempt)
	done  chan finishAnswer
}

type finishAnswer struct {
	res store.SlotFinishResult
	err error
}

// Finish records one end within about bound: the wait for a batch in
// flight and its own batch take at most half of it each, so a lease whose
// renewals are held meanwhile (Hold.Quiesce) lives as long as a lone
// attempt would leave it.
func (b *Batcher) Finish(p store.SlotFinishParams, bound time.Duration) (store.SlotFinishResult, error) {
	q := &queuedFinish{p: p, bound: bound, done: make(chan finishAnswer, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, q)
	b.queued++
	lead := !b.flushing
	b.flushing = true
	b.mu.Unlock()
	if lead && b.sendNext() {
		go b.flush() // the ends queued while this one went
	}
	a := <-q.done
	return a.res, a.err
}

// flush sends the queue in batches until it is empty.
func (b *Batcher) flush() {
	for b.sendNext() {
	}
}

// sendNext sends the next batch of the queue and reports whether more
// came meanwhile; when none did, the batcher is idle again.
func (b *Batcher) sendNext() (more bool) {
	b.mu.Lock()
	n := min(len(b.queue), MaxBatch)
	batch := make([]*queuedFinish, n)
	copy(batch, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.mu.Unlock()
	if n > 0 {
		b.send(batch)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.flushing = false
		return false
	}
	return true
}

func (b *Batcher) send(batch []*queuedFinish) {
	bound := batch[0].bound
	items := make([]store.SlotFinishParams, len(batch))
	for i, q := range batch {
		items[i] = q.p
		bound = min(bound, q.bound)
	}
	// Real time, as every attempt: it bounds how long the database takes.
	ctx, cancel := context.WithTimeoutCause(context.Background(), bound/2, ErrTimeout)
	defer cancel()
	var results []store.SlotFinishResult
	var err error
	if len(items) == 1 {
		var res store.SlotFinishResult
		res, err = b.Store.SlotFinish(ctx, items[0])
		results = []store.SlotFinishResult{res}
	} else {
		results, err = b.Store.SlotFinishBatch(ctx, items)
	}
	for i, q := range batch {
		if err != nil {
			q.done <- finishAnswer{err: err} // each retries alone (the caller's attempt)
			continue
		}
		q.done <- finishAnswer{res: results[i]}
	}
	b.mu.Lock()
	b.answered += uint64(len(batch))
	if b.moved != nil {
		close(b.moved)
		b.moved = nil
	}
	b.mu.Unlock()
}

// Drain waits, at most limit (real time) and while ctx lasts, until every
// end queued before it was called has been answered, when ends wait
// beyond the batch in flight: a backlog, which only load builds.
// Otherwise it returns at once.
func (b *Batcher) Drain(ctx context.Context, limit time.Duration) {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.mu.Unlock()
		return
	}
	target := b.queued
	b.mu.Unlock()
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		b.mu.Lock()
		if b.answered >= target {
			b.mu.Unlock()
			return
		}
		if b.moved == nil {
			b.moved = make(chan struct{})
		}
		moved := b.moved
		b.mu.Unlock()
		select {
		case <-moved:
		case <-timeout.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// Queued is how many ends wait beyond the batch in flight: a backlog,
// which only load builds.
func (b *Batcher) Queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Draining reports whether a Drain waits for the backlog.
func (b *Batcher) Draining() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.moved != nil
}
