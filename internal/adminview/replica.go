package adminview

import (
	"context"
	"errors"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/store"
)

// ReplicaOf is the API view of a replica row, judged live against now (the
// database clock): live when its last heartbeat is within liveFor.
func ReplicaOf(r store.Replica, now time.Time, liveFor time.Duration) client.Replica {
	age := now.Sub(r.HeartbeatAt)
	v := client.Replica{
		Owner: r.Owner, Host: r.Host, PID: r.PID, Version: r.Version,
		StartedAt: Time(r.StartedAt), HeartbeatAt: Time(r.HeartbeatAt),
		HeartbeatAge: age.Round(time.Millisecond).String(), Live: !r.HeartbeatAt.IsZero() && age <= liveFor,
		ClockOffset: r.ClockOffset.String(), Timers: r.Timers, Jobs: make([]client.ReplicaJob, 0, len(r.Jobs)),
	}
	for _, j := range r.Jobs {
		v.Jobs = append(v.Jobs, client.ReplicaJob{
			Name: j.Name, Schedule: j.Schedule, TimeZone: j.TimeZone, Timeout: j.Timeout.String(),
			LeaseTTL: j.LeaseTTL.String(), CatchUpWindow: j.CatchUpWindow.String(), CatchUp: catchUpOf(j),
			MaxCatchUp: j.MaxCatchUp, Jitter: j.Jitter.String(), Exclude: j.Exclude, Overlap: j.Overlap,
			Deadline: j.Deadline.String(), MaxAttempts: j.MaxAttempts, Disabled: j.Disabled, Hash: j.Hash,
		})
	}
	return v
}

// Replicas reads the replica registry from st and judges each replica live
// against the database clock; monitorLease is the name of the absence
// checks' lease (cronfence.MonitorLeaseName), whose holder the list names.
// On failure it names the operation that failed.
func Replicas(ctx context.Context, st store.Store, monitorLease string, liveFor time.Duration) (client.ReplicaList, string, error) {
	now, err := st.Now(ctx)
	if err != nil {
		return client.ReplicaList{}, "read the database clock", err
	}
	return ReplicasAt(ctx, st, monitorLease, liveFor, now)
}

// ReplicasAt is Replicas judging liveness against now, a database clock
// reading the caller already made (the dashboard reads it once per page).
func ReplicasAt(ctx context.Context, st store.Store, monitorLease string, liveFor time.Duration, now time.Time) (client.ReplicaList, string, error) {
	rows, err := st.ReplicaList(ctx)
	if err != nil {
		return client.ReplicaList{}, "list replicas", err
	}
	l := client.ReplicaList{Now: Time(now), LiveFor: liveFor.String(), Replicas: make([]client.Replica, 0, len(rows))}
	for _, r := range rows {
		l.Replicas = append(l.Replicas, ReplicaOf(r, now, liveFor))
	}
	ml, err := st.LeaseGet(ctx, monitorLease)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return client.ReplicaList{}, "read the monitor lease", err
	default:
		last := ml.RenewedAt
		if ml.AcquiredAt.After(last) {
			last = ml.AcquiredAt
		}
		l.Monitor = &client.MonitorState{Holder: ml.Owner, Generation: ml.Generation, LastPassAt: Time(last),
			ExpiresAt: Time(ml.ExpiresAt), Active: ml.ExpiresAt.After(now)}
	}
	return l, "", nil
}

// catchUpOf is a registered job's catch-up policy: the registry names only
// all (store.ReplicaJob.CatchUp); the window implies the others.
func catchUpOf(j store.ReplicaJob) string {
	switch {
	case j.CatchUp != "":
		return j.CatchUp
	case j.CatchUpWindow > 0:
		return "latest"
	}
	return "none"
}
