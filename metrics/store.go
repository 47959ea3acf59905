package metrics

import (
	"context"
	"time"

	"github.com/cronfence/cronfence/store"
)

// opKey carries the store operation a query belongs to, for the
// PostgreSQL tracer.
type opKey struct{}

// withOp names the store operation ctx's queries belong to.
func withOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, opKey{}, op)
}

// opOf returns the operation ctx belongs to, or "other" (migrations, the
// liveness session's unlock, queries outside the store).
func opOf(ctx context.Context) string {
	if op, ok := ctx.Value(opKey{}).(string); ok {
		return op
	}
	return "other"
}

// InstrumentStore wraps s so that every call is named after its method:
// with timeCalls, the call's duration is recorded as one round trip of
// that op (right for SQLite, where a call is one round trip to a local
// file); without, the call only names the op for QueryTracer, which times
// each query at the driver (PostgreSQL). The wrapper keeps the optional
// store.Liveness and store.Notices interfaces when s has them, since the
// scheduler finds them by type assertion (Listen passes through: it sends
// one statement per connection, not per call).
func (c *Collector) InstrumentStore(s store.Store, timeCalls bool) store.Store {
	w := &instrumented{Store: s, c: c, timed: timeCalls}
	l, live := s.(store.Liveness)
	n, tells := s.(store.Notices)
	switch {
	case live && tells:
		return struct {
			*instrumented
			*liveness
			store.Notices
		}{w, &liveness{l, w}, n}
	case live:
		return struct {
			*instrumented
			*liveness
		}{w, &liveness{l, w}}
	case tells:
		return struct {
			*instrumented
			store.Notices
		}{w, n}
	}
	return w
}

// instrumented overrides every store.Store method; a method added to the
// interface later passes through the embedded store untimed until it is
// added here.
type instrumented struct {
	store.Store
	c     *Collector
	timed bool
}

// op names ctx's operation and, when calls are timed, returns the func
// that records the call's duration.
func (w *instrumented) op(ctx context.Context, name string) (context.Context, func()) {
	ctx = withOp(ctx, name)
	if !w.timed {
		return ctx, func() {}
	}
	start := time.Now()
	return ctx, func() { w.c.ObserveRoundTrip(name, time.Since(start)) }
}

func (w *instrumented) Migrate(ctx context.Context) error {
	ctx, done := w.op(ctx, "Migrate")
	defer done()
	return w.Store.Migrate(ctx)
}

func (w *instrumented) SchemaVersion(ctx context.Context) (int, int, error) {
	ctx, done := w.op(ctx, "SchemaVersion")
	defer done()
	return w.Store.SchemaVersion(ctx)
}

func (w *instrumented) Now(ctx context.Context) (time.Time, error) {
	ctx, done := w.op(ctx, "Now")
	defer done()
	return w.Store.Now(ctx)
}

func (w *instrumented) LeaseAcquire(ctx context.Context, p store.LeaseAcquireParams) (store.Lease, bool, error) {
	ctx, done := w.op(ctx, "LeaseAcquire")
	defer done()
	return w.Store.LeaseAcquire(ctx, p)
}

func (w *instrumented) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Lease, error) {
	ctx, done := w.op(ctx, "LeaseRenew")
	defer done()
	return w.Store.LeaseRenew(ctx, p)
}

func (w *instrumented) LeaseRenewBatch(ctx context.Context, items []store.LeaseRenewParams) ([]store.Lease, error) {
	ctx, done := w.op(ctx, "LeaseRenewBatch")
	defer done()
	return w.Store.LeaseRenewBatch(ctx, items)
}

func (w *instrumented) LeaseRelease(ctx context.Context, ref store.LeaseRef) (bool, error) {
	ctx, done := w.op(ctx, "LeaseRelease")
	defer done()
	return w.Store.LeaseRelease(ctx, ref)
}

func (w *instrumented) LeaseGet(ctx context.Context, name string) (store.Lease, error) {
	ctx, done := w.op(ctx, "LeaseGet")
	defer done()
	return w.Store.LeaseGet(ctx, name)
}

func (w *instrumented) LeaseFence(ctx context.Context, tx any, name string, generation int64) error {
	ctx, done := w.op(ctx, "LeaseFence")
	defer done()
	return w.Store.LeaseFence(ctx, tx, name, generation)
}

func (w *instrumented) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	ctx, done := w.op(ctx, "SlotClaim")
	defer done()
	return w.Store.SlotClaim(ctx, p)
}

func (w *instrumented) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	ctx, done := w.op(ctx, "SlotClaimBatch")
	defer done()
	return w.Store.SlotClaimBatch(ctx, items)
}

func (w *instrumented) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	ctx, done := w.op(ctx, "SlotFinish")
	defer done()
	return w.Store.SlotFinish(ctx, p)
}

func (w *instrumented) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	ctx, done := w.op(ctx, "SlotListInterrupted")
	defer done()
	return w.Store.SlotListInterrupted(ctx)
}

func (w *instrumented) RunListPerJob(ctx context.Context, p store.RunListPerJobParams) ([][]store.Run, error) {
	ctx, done := w.op(ctx, "RunListPerJob")
	defer done()
	return w.Store.RunListPerJob(ctx, p)
}

func (w *instrumented) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	ctx, done := w.op(ctx, "SlotFinishBatch")
	defer done()
	return w.Store.SlotFinishBatch(ctx, items)
}

func (w *instrumented) SlotAbandon(ctx context.Context, p store.SlotAbandonParams) (store.SlotFinishResult, error) {
	ctx, done := w.op(ctx, "SlotAbandon")
	defer done()
	return w.Store.SlotAbandon(ctx, p)
}

func (w *instrumented) RunInterrupted(ctx context.Context, items []store.RunInterruptedParams) ([]store.Run, error) {
	ctx, done := w.op(ctx, "RunInterrupted")
	defer done()
	return w.Store.RunInterrupted(ctx, items)
}

func (w *instrumented) SlotSkip(ctx context.Context, items []store.SlotSkipParams) ([]store.Run, error) {
	ctx, done := w.op(ctx, "SlotSkip")
	defer done()
	return w.Store.SlotSkip(ctx, items)
}

func (w *instrumented) SlotGet(ctx context.Context, job string, slot time.Time) (store.Slot, error) {
	ctx, done := w.op(ctx, "SlotGet")
	defer done()
	return w.Store.SlotGet(ctx, job, slot)
}

func (w *instrumented) RunInsert(ctx context.Context, run store.Run) (store.Run, error) {
	ctx, done := w.op(ctx, "RunInsert")
	defer done()
	return w.Store.RunInsert(ctx, run)
}

func (w *instrumented) RunGet(ctx context.Context, leaseName string, generation int64) (store.Run, error) {
	ctx, done := w.op(ctx, "RunGet")
	defer done()
	return w.Store.RunGet(ctx, leaseName, generation)
}

func (w *instrumented) RunList(ctx context.Context, p store.RunListParams) ([]store.Run, error) {
	ctx, done := w.op(ctx, "RunList")
	defer done()
	return w.Store.RunList(ctx, p)
}

func (w *instrumented) Prune(ctx context.Context, p store.PruneParams) (store.PruneResult, error) {
	ctx, done := w.op(ctx, "Prune")
	defer done()
	return w.Store.Prune(ctx, p)
}

func (w *instrumented) JobStateSet(ctx context.Context, p store.JobStateSetParams) (store.JobState, error) {
	ctx, done := w.op(ctx, "JobStateSet")
	defer done()
	return w.Store.JobStateSet(ctx, p)
}

func (w *instrumented) JobStateList(ctx context.Context) ([]store.JobState, error) {
	ctx, done := w.op(ctx, "JobStateList")
	defer done()
	return w.Store.JobStateList(ctx)
}

func (w *instrumented) ReplicaHeartbeat(ctx context.Context, r store.Replica) (store.Replica, error) {
	ctx, done := w.op(ctx, "ReplicaHeartbeat")
	defer done()
	return w.Store.ReplicaHeartbeat(ctx, r)
}

func (w *instrumented) ReplicaList(ctx context.Context) ([]store.Replica, error) {
	ctx, done := w.op(ctx, "ReplicaList")
	defer done()
	return w.Store.ReplicaList(ctx)
}

func (w *instrumented) ReplicaRemove(ctx context.Context, owner string) error {
	ctx, done := w.op(ctx, "ReplicaRemove")
	defer done()
	return w.Store.ReplicaRemove(ctx, owner)
}

func (w *instrumented) AlertRaise(ctx context.Context, p store.AlertRaiseParams) (store.AlertRaiseResult, error) {
	ctx, done := w.op(ctx, "AlertRaise")
	defer done()
	return w.Store.AlertRaise(ctx, p)
}

func (w *instrumented) AlertAcknowledge(ctx context.Context, p store.AlertAcknowledgeParams) (store.Alert, error) {
	ctx, done := w.op(ctx, "AlertAcknowledge")
	defer done()
	return w.Store.AlertAcknowledge(ctx, p)
}

func (w *instrumented) AlertResolve(ctx context.Context, kind store.AlertKind, subject string) (store.Alert, bool, error) {
	ctx, done := w.op(ctx, "AlertResolve")
	defer done()
	return w.Store.AlertResolve(ctx, kind, subject)
}

func (w *instrumented) AlertList(ctx context.Context, p store.AlertListParams) ([]store.Alert, error) {
	ctx, done := w.op(ctx, "AlertList")
	defer done()
	return w.Store.AlertList(ctx, p)
}

func (w *instrumented) MonitorSnapshot(ctx context.Context, p store.MonitorSnapshotParams) (store.MonitorSnapshot, error) {
	ctx, done := w.op(ctx, "MonitorSnapshot")
	defer done()
	return w.Store.MonitorSnapshot(ctx, p)
}

func (w *instrumented) LeaseList(ctx context.Context, p store.LeaseListParams) (store.LeaseListResult, error) {
	ctx, done := w.op(ctx, "LeaseList")
	defer done()
	return w.Store.LeaseList(ctx, p)
}

// liveness names the liveness session's queries. The hold lasts the
// process's life, so only its opening is one op.
type liveness struct {
	store.Liveness
	w *instrumented
}

func (l *liveness) LivenessHold(ctx context.Context, owner string) (int64, func(), error) {
	ctx, done := l.w.op(ctx, "LivenessHold")
	defer done()
	return l.Liveness.LivenessHold(ctx, owner)
}
