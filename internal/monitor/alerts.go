package monitor

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/cronfence/cronfence/internal/absence"
	"github.com/cronfence/cronfence/internal/service"
	"github.com/cronfence/cronfence/store"
)

// alertRefreshEvery is how often an open alert that the checks still
// find, unchanged, has its LastSeenAt refreshed: each refresh is a
// committed write, and hundreds of alerts open at once (an outage) should
// not cost hundreds of writes every pass.
const alertRefreshEvery = time.Minute

// Alerter raises and resolves alerts in the store, where they are raised
// once and resolved once however many replicas try: only the replica whose
// call changed one logs it and tells Changed. The checks reconcile their
// verdicts through it; the scheduler raises the deposed-writer alert
// through it.
type Alerter struct {
	*service.Base
	InRegistry bool // this replica keeps a registry row; without one it raises no deposed-writer alert
	// Changed is told of an alert this replica raised (raised), resolved,
	// or raised again because it changed since it was acknowledged
	// (endedAck not zero).
	Changed func(a store.Alert, raised bool, endedAck store.AlertAck)

	mu      sync.Mutex
	deposed map[string]bool // jobs whose deposed-writer alert this replica raised or refreshed
}

// Reconcile raises what should be open (refreshing the message and
// last-seen time of what already is, when they changed or every
// alertRefreshEvery) and resolves what no longer should be, among the open
// alerts the checks could judge. One round trip per alert raised,
// refreshed or resolved. now is the database clock of the pass.
func (a *Alerter) Reconcile(ctx context.Context, now time.Time, res absence.Result, open []store.Alert) {
	opened := make(map[absence.Key]store.Alert, len(open))
	for _, al := range open {
		opened[absence.Key{Kind: al.Kind, Subject: al.Subject}] = al
	}
	want := make(map[absence.Key]bool, len(res.Alerts))
	for _, al := range res.Alerts {
		want[al.Key()] = true
		if cur, ok := opened[al.Key()]; ok && cur.Message == al.Message && maps.Equal(cur.Details, al.Details) &&
			cur.Fingerprint == absence.Fingerprint(al.Kind, al.Details) && now.Sub(cur.LastSeenAt) < alertRefreshEvery {
			continue
		}
		a.Raise(ctx, store.AlertRaiseParams{Kind: al.Kind, Subject: al.Subject, Message: al.Message, Details: al.Details, RaisedBy: a.Owner})
	}
	for _, al := range open {
		if want[absence.Key{Kind: al.Kind, Subject: al.Subject}] || !res.Judged(al.Kind, al.Subject) {
			continue
		}
		a.Resolve(ctx, al.Kind, al.Subject)
	}
}

// Raise raises (or refreshes) an alert, with its fingerprint; the replica
// whose call opened it, or ended its acknowledgement (it changed), logs it
// and tells Changed. A failure is logged, unless ctx ended.
func (a *Alerter) Raise(ctx context.Context, p store.AlertRaiseParams) {
	p.Fingerprint = absence.Fingerprint(p.Kind, p.Details)
	res, err := a.Store.AlertRaise(ctx, p)
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Warn("cronfence: could not raise an alert", "kind", p.Kind, "subject", p.Subject, "error", err)
		}
		return
	}
	al := res.Alert
	switch {
	case res.Raised:
		a.Log.Warn("cronfence: alert raised: "+al.Message, "kind", al.Kind, "subject", al.Subject,
			"alert_id", al.ID, "details", al.Details)
		a.changed(al, true, store.AlertAck{})
	case !res.EndedAck.IsZero():
		a.Log.Warn("cronfence: alert raised again: it changed since it was acknowledged: "+al.Message, "kind", al.Kind,
			"subject", al.Subject, "alert_id", al.ID, "details", al.Details,
			"acknowledged_by", res.EndedAck.By, "acknowledged_at", res.EndedAck.At)
		a.changed(al, true, res.EndedAck)
	}
}

// Resolve resolves the open alert of (kind, subject), if any.
func (a *Alerter) Resolve(ctx context.Context, kind store.AlertKind, subject string) {
	al, resolved, err := a.Store.AlertResolve(ctx, kind, subject)
	if err != nil {
		if ctx.Err() == nil {
			a.Log.Warn("cronfence: could not resolve an alert", "kind", kind, "subject", subject, "error", err)
		}
		return
	}
	if resolved {
		a.Log.Info("cronfence: alert resolved", "kind", kind, "subject", subject, "alert_id", al.ID,
			"raised_at", al.RaisedAt, "message", al.Message)
		a.changed(al, false, store.AlertAck{})
	}
}

// A deposed writer sitting on an expired lease is an alert, not only a log
// line: its process lost the lease (frozen, cut off) while inside a
// transaction fenced under it, and until that transaction ends the job's
// slots cannot be taken over. The replica that meets it raises
// store.AlertDeposedWriter (once across replicas, refreshed by the
// others), and a replica that met it resolves it as soon as a claim of the
// job finds the lease takeable again: claimed, or held by a live run.

// RaiseDeposed raises the deposed-writer alert for the job, met at its
// slot.
func (a *Alerter) RaiseDeposed(ctx context.Context, job string, slot time.Time, writer store.Lease) {
	if !a.InRegistry {
		return
	}
	a.mu.Lock()
	if a.deposed == nil {
		a.deposed = map[string]bool{}
	}
	a.deposed[job] = true
	a.mu.Unlock()
	ctx, cancel := a.Bounded(ctx)
	defer cancel()
	a.Raise(ctx, store.AlertRaiseParams{
		Kind: store.AlertDeposedWriter, Subject: job, RaisedBy: a.Owner,
		Message: fmt.Sprintf("job %q waits for a deposed writer: %s, whose lease %s at generation %d expired at %s, is still inside a transaction fenced under it; its slots cannot be taken over until that transaction ends",
			job, writer.Owner, writer.Name, writer.Generation, writer.ExpiresAt.UTC().Format(time.RFC3339)),
		Details: map[string]string{
			"writer":     writer.Owner,
			"lease":      writer.Name,
			"generation": strconv.FormatInt(writer.Generation, 10),
			"expired_at": writer.ExpiresAt.UTC().Format(time.RFC3339Nano),
			"slot":       slot.UTC().Format(time.RFC3339),
		},
	})
}

// ResolveDeposed resolves the job's deposed-writer alert, if this replica
// met one, once a claim of the job found its lease takeable again.
func (a *Alerter) ResolveDeposed(ctx context.Context, job string, r store.SlotClaimResult) {
	if !r.Claimed && r.Refusal != store.ClaimHeld {
		return // the answer says nothing of the lease (not due, paused, …), or it is still busy
	}
	a.mu.Lock()
	met := a.deposed[job]
	delete(a.deposed, job)
	a.mu.Unlock()
	if !met {
		return
	}
	ctx, cancel := a.Bounded(ctx)
	defer cancel()
	a.Resolve(ctx, store.AlertDeposedWriter, job)
}

func (a *Alerter) changed(al store.Alert, raised bool, endedAck store.AlertAck) {
	if a.Changed != nil {
		a.Changed(al, raised, endedAck)
	}
}
