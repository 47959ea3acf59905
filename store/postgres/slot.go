package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cronfence/cronfence/store"
)

// SlotClaim claims one (job, slot). See store.Store and sql/slotClaim.sql.
func (s *Store) SlotClaim(ctx context.Context, p store.SlotClaimParams) (store.SlotClaimResult, error) {
	res, err := s.SlotClaimBatch(ctx, []store.SlotClaimParams{p})
	if err != nil {
		return store.SlotClaimResult{}, err
	}
	return res[0], nil
}

// SlotClaimBatch claims many (job, slot)s in one statement. See store.Store
// and sql/slotClaim.sql.
func (s *Store) SlotClaimBatch(ctx context.Context, items []store.SlotClaimParams) ([]store.SlotClaimResult, error) {
	if err := store.ValidateClaimBatch(items); err != nil {
		return nil, err
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	// Rows are locked in lease-name order, the same in every statement, so
	// two replicas claiming overlapping sets of jobs cannot deadlock.
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return items[order[a]].LeaseName < items[order[b]].LeaseName })
	sorted := make([]store.SlotClaimParams, len(items))
	for i, j := range order {
		sorted[i] = items[j]
	}
	items = sorted

	args := s.claimArgs(items)
	n, first := len(items), items[0]
	pauseUnread := false
	results, stale, arrived, err := s.claimRows(ctx, s.q.slotClaim, s.q.claimJSON, args, items)
	if isSchemaError(err) {
		// The statement cannot run as written: a table or column is
		// missing or refused. If the pause overrides are what is broken
		// (job_state renamed or dropped), the claim without them runs, on
		// the declared values: a broken pause table fails open. If not,
		// it fails too, and the first error is the one to report. Nothing
		// of the failed statement was written.
		if r, st, at, err2 := s.claimRows(ctx, s.q.slotClaimDeclared, s.q.claimDeclaredJSON, args, items); err2 == nil {
			results, stale, arrived, err, pauseUnread = r, st, at, nil, true
		}
	}
	if err != nil {
		return nil, s.translate(fmt.Sprintf("claim %d slot(s), first of job %q", n, first.Job), err)
	}
	for i := range results {
		results[i].PauseStateUnread = pauseUnread
	}

	// Rare races, which the statement cannot answer from its snapshot:
	// between it and the claim, another owner ended the slot or claimed it
	// under a different lease, and the lease this statement took must be
	// given back; or a concurrent claim created the lease row, so this
	// statement neither took the lease nor saw who holds it. (A claim that
	// waited for its slot has an older snapshot, and meets both more
	// often.) Read what stands.
	for _, i := range stale {
		if taken := results[i].Lease; taken.Generation > 0 {
			if _, err := s.LeaseRelease(ctx, taken.Ref()); err != nil {
				return nil, fmt.Errorf("postgres: claim of job %q lost a race and could not release lease %q: %w", items[i].Job, items[i].LeaseName, err)
			}
		}
		current, err := s.SlotGet(ctx, items[i].Job, items[i].Slot)
		if errors.Is(err, store.ErrNotFound) {
			continue // nothing recorded yet: held, as answered
		}
		if err != nil {
			return nil, err
		}
		r := refusalFor(current, items[i])
		if r.Refusal == store.ClaimHeld {
			if r.Lease, err = s.LeaseGet(ctx, current.LeaseName); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
		}
		r.PauseStateUnread = pauseUnread
		results[i] = r
	}
	// Each Wait counts from the answer's arrival; the caller's count starts
	// now.
	since := time.Since(arrived)
	inOrder := make([]store.SlotClaimResult, n)
	for i, j := range order {
		inOrder[j] = results[i]
		if inOrder[j].Wait > 0 {
			inOrder[j].Wait = max(inOrder[j].Wait-since, 0)
		}
	}
	return inOrder, nil
}

// claimArgs are slotClaim.sql's arguments for the items, in their order:
// one array per column, then what every item shares.
func (s *Store) claimArgs(items []store.SlotClaimParams) []any {
	n := len(items)
	var (
		jobs, leaseNames, overlaps = make([]string, n), make([]string, n), make([]string, n)
		slots                      = make([]time.Time, n)
		disabled, catchUp, retry   = make([]bool, n), make([]bool, n), make([]bool, n)
		waitDue                    = make([]bool, n)
		maxAttempts, retryOf       = make([]int32, n), make([]int32, n)
		ttls                       = make([]int64, n)
	)
	for i, p := range items {
		jobs[i], slots[i], leaseNames[i] = p.Job, slotTime(p.Slot), p.LeaseName
		disabled[i], overlaps[i], catchUp[i], retry[i] = p.DeclaredDisabled, string(p.Overlap), p.CatchUp, p.RetryFailed
		maxAttempts[i], ttls[i] = int32(min(p.MaxAttempts, 1<<30)), micros(p.TTL)
		retryOf[i] = int32(min(max(p.RetryOf, 0), 1<<30))
		waitDue[i] = p.WaitDue
		if overlaps[i] == "" {
			overlaps[i] = string(store.OverlapSkip)
		}
	}
	first := items[0]
	return []any{jobs, slots, leaseNames, disabled, overlaps, maxAttempts, ttls, catchUp,
		first.Owner, s.nowArg(first.Now), s.liveKeyArg(first.LiveKey), retry, retryOf, waitDue, micros(store.MaxClaimWait)}
}

// claimRows runs a claim statement (sql/slotClaim.sql or its declared-values
// variant, sql; asJSON is the same answering as JSON) and reads its rows
// into results, in the items' (sorted) order,
// with the indexes of the items it could not answer from its snapshot
// (stale): their lease was taken but their slot was not (the result holds
// that lease), or they were refused held by a holder the statement did not
// see. arrived is when the answer came, on this process's monotonic clock:
// each claimed result's Wait is the time left to its slot from then. The
// error is the driver's, untranslated.
//
// A batch that may wait for its slots (WaitDue) and is small enough to be
// planned as it comes is sent through claim_committed (migration 009),
// which reads the database clock after the claim's commit: the Wait of a
// claim committed ahead of its slot then leaves out the commit's WAL flush
// (a millisecond on a small VM), which a clock read inside the statement
// comes before. Larger batches (timers' claims of hundreds of jobs, whose
// starts a millisecond does not decide) run the statement as it is.
func (s *Store) claimRows(ctx context.Context, sql string, asJSON namedStatement, args []any, items []store.SlotClaimParams) (
	results []store.SlotClaimResult, stale []int, arrived time.Time, err error) {
	n := len(items)
	var answer []claimRow
	var clock time.Time // the database clock the Waits count from
	if n <= genericPlanMax && mayWait(items) {
		answer, clock, arrived, err = s.claimCommitted(ctx, asJSON, args)
	} else {
		answer, arrived, err = s.claimStatement(ctx, sql, n, args)
		if len(answer) > 0 {
			clock = answer[0].readAt
		}
	}
	if err != nil {
		return nil, nil, arrived, err
	}
	if len(answer) != n {
		return nil, nil, arrived, fmt.Errorf("postgres: claim returned %d rows for %d items", len(answer), n)
	}
	results = make([]store.SlotClaimResult, n)
	for i, row := range answer {
		if row.ord != int64(i+1) {
			return nil, nil, arrived, fmt.Errorf("postgres: claim returned item %d where %d was due", row.ord, i+1)
		}
		var isStale bool
		results[i], isStale = row.result(items[i], clock)
		if isStale {
			stale = append(stale, i)
		}
	}
	return results, stale, arrived, nil
}

// mayWait reports whether a claim of items may wait for a slot (store.
// SlotClaimParams.WaitDue): a slot of the batch is asked to be waited for
// and the clock is the database's.
func mayWait(items []store.SlotClaimParams) bool {
	if !items[0].Now.IsZero() {
		return false
	}
	for _, p := range items {
		if p.WaitDue {
			return true
		}
	}
	return false
}

// claimStatement runs a claim statement and scans its rows; arrived is
// when the first came (the statement read the clock before).
func (s *Store) claimStatement(ctx context.Context, sql string, n int, args []any) (answer []claimRow, arrived time.Time, err error) {
	rows, err := s.querySized(ctx, sql, n, args)
	if err != nil {
		return nil, time.Now(), err
	}
	defer rows.Close()
	answer = make([]claimRow, 0, n)
	// One row scanned into, copied out after each: zeroed first, so that
	// no row shares the skip lines the driver read into another's slice.
	var row claimRow
	fields := row.fields()
	dest := make([]any, len(fields))
	for i, f := range fields {
		dest[i] = f.dest
	}
	for rows.Next() {
		if len(answer) == 0 {
			arrived = time.Now()
		}
		row = claimRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, arrived, err
		}
		answer = append(answer, row)
	}
	return answer, arrived, rows.Err()
}

// claimCommitted runs a claim statement answering JSON (st) through
// claim_committed (migration 009): committed, and the database clock read
// after the commit. The statement is prepared on the connection under a
// name of its text, which the procedure executes (its plan kept, as any
// prepared claim's). The CALL itself is sent unprepared: PostgreSQL 15's
// pg_stat_statements counts a prepared CALL only at its first run (it
// clears the statement's query id as it runs it), and the statements a
// slot are counted there.
//
// arrived is when the answer came, before it is decoded.
func (s *Store) claimCommitted(ctx context.Context, st namedStatement, args []any) (answer []claimRow, committed, arrived time.Time, err error) {
	var raw []byte
	err = s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		if _, err := c.Conn().Prepare(ctx, st.name, st.sql); err != nil {
			return err
		}
		return c.QueryRow(ctx, s.q.claimCommitted, append([]any{pgx.QueryExecModeCacheDescribe, st.name}, args...)...).Scan(&raw, &committed)
	})
	arrived = time.Now()
	if err != nil {
		return nil, committed, arrived, err
	}
	var objects []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &objects); err != nil {
		return nil, committed, arrived, fmt.Errorf("postgres: decode a claim's answer: %w", err)
	}
	answer = make([]claimRow, len(objects))
	for i, o := range objects {
		for _, f := range answer[i].fields() {
			v, ok := o[f.name]
			if !ok {
				return nil, committed, arrived, fmt.Errorf("postgres: a claim's answer lacks its column %q", f.name)
			}
			if err := json.Unmarshal(v, f.dest); err != nil {
				return nil, committed, arrived, fmt.Errorf("postgres: decode a claim's answer, column %q: %w", f.name, err)
			}
		}
	}
	return answer, committed, arrived, nil
}

// claimRow is one row of a claim's answer (sql/slotClaim.sql). Its
// nullable columns are pgtype values, not pointers: a busy replica reads
// thousands of rows a second, and a pointer column cost an allocation
// each.
type claimRow struct {
	ord               int64 // the item's place in the batch, from 1
	refusal, recorded pgtype.Text
	claim, prev       nullSlot
	lease, holder     nullLease
	skipID            pgtype.Int8
	skipAt            pgtype.Timestamptz
	skipLogs          []string
	// dueAt is when the claimed runs may start, for a claim committed
	// ahead of its slots (NULL otherwise); readAt the database clock,
	// read after the rest of the statement.
	dueAt  pgtype.Timestamptz
	readAt time.Time
}

// claimField is a column of the claim's answer and where it goes.
type claimField struct {
	name string
	dest any
}

// fields are the row's columns, in the statement's order, by the names it
// gives them.
func (r *claimRow) fields() []claimField {
	return []claimField{
		{"ord", &r.ord}, {"refusal", &r.refusal},
		{"claim_status", &r.claim.status}, {"claim_owner", &r.claim.owner}, {"claim_lease_name", &r.claim.leaseName},
		{"claim_generation", &r.claim.generation}, {"claim_attempts", &r.claim.attempts}, {"claim_started_at", &r.claim.startedAt},
		{"prev_status", &r.prev.status}, {"prev_owner", &r.prev.owner}, {"prev_lease_name", &r.prev.leaseName},
		{"prev_generation", &r.prev.generation}, {"prev_attempts", &r.prev.attempts}, {"prev_started_at", &r.prev.startedAt},
		{"prev_finished_at", &r.prev.finishedAt},
		{"lease_owner", &r.lease.owner}, {"lease_generation", &r.lease.generation}, {"lease_acquired_at", &r.lease.acquiredAt},
		{"lease_renewed_at", &r.lease.renewedAt}, {"lease_expires_at", &r.lease.expiresAt},
		{"holder_name", &r.holder.name}, {"holder_owner", &r.holder.owner}, {"holder_generation", &r.holder.generation},
		{"holder_acquired_at", &r.holder.acquiredAt}, {"holder_renewed_at", &r.holder.renewedAt}, {"holder_expires_at", &r.holder.expiresAt},
		{"recorded", &r.recorded}, {"skip_id", &r.skipID}, {"skip_started_at", &r.skipAt}, {"skip_logs", &r.skipLogs},
		{"due_at", &r.dueAt}, {"read_at", &r.readAt},
	}
}

// result is the row's answer to the claim p, its Wait counted from the
// database clock reading clock; stale when the statement could not answer
// it from its snapshot (see claimRows).
func (row claimRow) result(p store.SlotClaimParams, clock time.Time) (r store.SlotClaimResult, stale bool) {
	slot := slotTime(p.Slot)
	lease := row.lease
	lease.name = pgtype.Text{String: p.LeaseName, Valid: true}
	switch {
	case row.claim.status.Valid:
		r = store.SlotClaimResult{Claimed: true, Slot: row.claim.slot(p.Job, slot), Lease: lease.lease()}
		if row.dueAt.Valid {
			r.Wait = max(row.dueAt.Time.Sub(clock), 0)
		}
	case row.refusal.Valid:
		r = store.SlotClaimResult{Refusal: store.ClaimRefusal(row.refusal.String), Slot: row.prev.slot(p.Job, slot)}
		if r.Refusal == store.ClaimHeld || r.Refusal == store.ClaimLeaseBusy {
			r.Lease = row.holder.lease() // for lease_busy, the deposed writer's
		}
		if row.skipID.Valid { // a paused slot this statement settled
			r.Recorded, r.SkipRun = store.SlotSkipped, row.skipRun(p, slot, store.ClaimPaused)
		}
	case !lease.generation.Valid:
		// The gate let the item through but another run holds the lease.
		r = store.SlotClaimResult{Refusal: store.ClaimHeld, Slot: row.prev.slot(p.Job, slot), Lease: row.holder.lease()}
		if row.recorded.Valid {
			r.Recorded = store.SlotStatus(row.recorded.String)
		}
		if row.skipID.Valid {
			r.SkipRun = row.skipRun(p, slot, store.ClaimHeld)
		}
		stale = !row.holder.generation.Valid && !row.recorded.Valid
	default:
		r.Lease = lease.lease()
		stale = true
	}
	return r, stale
}

// skipRun is the skip run row the statement wrote for the item p (its
// slot, slot), for the reason why.
func (row claimRow) skipRun(p store.SlotClaimParams, slot time.Time, why store.ClaimRefusal) store.Run {
	return store.Run{
		ID: row.skipID.Int64, Job: p.Job, Slot: slot, CatchUp: p.CatchUp, Owner: p.Owner,
		StartedAt: row.skipAt.Time.UTC(), FinishedAt: row.skipAt.Time.UTC(), Success: true, Skipped: true,
		Reason: string(why), Logs: row.skipLogs,
	}
}

// isSchemaError reports a statement refused because what it names does not
// exist or may not be used (undefined_table, undefined_column,
// insufficient_privilege): a damaged schema, not an unreachable server.
func isSchemaError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "42P01" || pgErr.Code == "42703" || pgErr.Code == "42501")
}

// refusalFor says why an existing slot row cannot be claimed.
func refusalFor(current store.Slot, p store.SlotClaimParams) store.SlotClaimResult {
	r := store.SlotClaimResult{Slot: current}
	switch {
	case current.Status == store.SlotCompleted:
		r.Refusal = store.ClaimCompleted
	case current.Status == store.SlotSkipped:
		r.Refusal = store.ClaimSkipped
	case current.Status == store.SlotFailed && !p.RetriesFailed(current.Attempts):
		r.Refusal = store.ClaimFailed
	case current.Attempts >= p.MaxAttempts && current.Status != store.SlotRunning:
		r.Refusal = store.ClaimAttemptsExhausted
	default:
		r.Refusal = store.ClaimHeld
	}
	return r
}

// SlotFinish ends a claimed run in one round trip. See store.Store.
func (s *Store) SlotFinish(ctx context.Context, p store.SlotFinishParams) (store.SlotFinishResult, error) {
	args, err := s.finishArgs(p)
	if err != nil {
		return store.SlotFinishResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.SlotFinishResult{}, err
	}
	res, err := scanFinish(s.pool.QueryRow(ctx, s.q.slotFinish, args...))
	if err != nil {
		return store.SlotFinishResult{}, s.translate(fmt.Sprintf("finish slot of job %q", p.Job), err)
	}
	return res, nil
}

// SlotFinishBatch ends many runs in one statement (sql/slotFinishBatch.sql),
// so in one round trip and one transaction: the items commit together (one
// WAL flush for all) or not at all. Items go in lease name order, the
// order every claim locks lease rows in, so a batch and a claim never wait
// on each other in a cycle. See store.Store.
func (s *Store) SlotFinishBatch(ctx context.Context, items []store.SlotFinishParams) ([]store.SlotFinishResult, error) {
	if err := store.ValidateFinishBatch(items); err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	if err := s.usable(); err != nil {
		return nil, err
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return items[order[a]].LeaseName < items[order[b]].LeaseName })
	args, err := s.finishBatchArgs(items, order)
	if err != nil {
		return nil, err
	}
	rows, err := s.querySized(ctx, s.q.slotFinishBatch, len(items), args)
	if err != nil {
		return nil, s.translate(fmt.Sprintf("finish %d slot(s), job %q among them", len(items), items[0].Job), err)
	}
	defer rows.Close()
	results := make([]store.SlotFinishResult, len(items))
	n := 0
	for rows.Next() {
		if n >= len(items) {
			return nil, fmt.Errorf("postgres: finish returned more rows than the %d items", len(items))
		}
		var ord int64
		res, err := scanFinishRow(rows, &ord)
		if err != nil {
			return nil, s.translate(fmt.Sprintf("finish %d slot(s)", len(items)), err)
		}
		if ord != int64(n+1) {
			return nil, fmt.Errorf("postgres: finish returned item %d where %d was due", ord, n+1)
		}
		results[order[n]] = res
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(fmt.Sprintf("finish %d slot(s), job %q among them", len(items), items[0].Job), err)
	}
	if n != len(items) {
		return nil, fmt.Errorf("postgres: finish returned %d rows for %d items", n, len(items))
	}
	return results, nil
}

// finishBatchArgs are slotFinishBatch.sql's arguments for the items, taken
// in order: one array per column, and the log lines of every item in one
// array that each item takes a slice of (SQL arrays cannot hold arrays of
// different lengths).
func (s *Store) finishBatchArgs(items []store.SlotFinishParams, order []int) ([]any, error) {
	n := len(items)
	var (
		jobs, leases, owners, statuses    = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		reasons, errs, takenOver, notDone = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		slots, pinned, started, finished  = make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		retryUntil                        = make([]pgtype.Timestamptz, n)
		generations                       = make([]int64, n)
		manual, catchUp, success, skipped = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
		attempts, logsFrom, logsTo        = make([]int32, n), make([]int32, n), make([]int32, n)
		logs                              []string
	)
	// Values, not pointers, for the nullable times: one allocation fewer
	// each, on every run's end.
	timeOrNil := func(t time.Time) pgtype.Timestamptz {
		return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
	}
	for k, i := range order {
		p := items[i]
		run, err := finishRun(p)
		if err != nil {
			return nil, fmt.Errorf("item %d (job %q): %w", i, p.Job, err)
		}
		jobs[k], leases[k], owners[k], statuses[k] = p.Job, p.LeaseName, p.Owner, string(p.Status)
		reasons[k], errs[k] = run.Reason, run.Error
		takenOver[k] = store.TakenOverError(p.Generation, run.Error)
		notDone[k] = store.Run{Error: p.NotCompletedError}.Bounded().Error
		slots[k], started[k], finished[k] = timeOrNil(run.Slot), timeOrNil(run.StartedAt), timeOrNil(run.FinishedAt)
		retryUntil[k] = timeOrNil(p.RetryUntil)
		if now, ok := s.nowArg(p.Now).(time.Time); ok {
			pinned[k] = timeOrNil(now)
		}
		generations[k], attempts[k] = p.Generation, int32(run.Attempt)
		manual[k], catchUp[k], success[k], skipped[k] = run.Manual, run.CatchUp, run.Success, run.Skipped
		// PostgreSQL arrays count from 1; an item without lines takes
		// from > to, an empty slice.
		logsFrom[k] = int32(len(logs) + 1)
		logs = append(logs, run.Logs...)
		logsTo[k] = int32(len(logs))
	}
	if logs == nil {
		logs = []string{}
	}
	return []any{jobs, slots, leases, owners, generations, statuses, pinned, manual, catchUp, attempts,
		started, finished, success, skipped, reasons, errs, logs, logsFrom, logsTo, takenOver, notDone, retryUntil}, nil
}

// finishRun is the run row a finish of p writes, checked and bounded: the
// caller's row, with the finish's job, slot and holding. p itself must be
// valid already.
func finishRun(p store.SlotFinishParams) (store.Run, error) {
	run := p.Run
	run.Job, run.Slot, run.Owner, run.Generation, run.LeaseName = p.Job, slotTime(p.Slot), p.Owner, p.Generation, p.LeaseName
	if err := run.Validate(); err != nil {
		return store.Run{}, err
	}
	return run.Bounded(), nil
}

// finishArgs checks a finish and returns the finish statement's arguments.
func (s *Store) finishArgs(p store.SlotFinishParams) ([]any, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	run, err := finishRun(p)
	if err != nil {
		return nil, err
	}
	return []any{
		p.Job, nullTime(run.Slot), p.LeaseName, p.Owner, p.Generation, string(p.Status), s.nowArg(p.Now),
		run.Manual, run.CatchUp, run.Attempt, nullTime(run.StartedAt), nullTime(run.FinishedAt),
		run.Success, run.Skipped, run.Reason, run.Error, logsArg(run.Logs), store.TakenOverError(p.Generation, run.Error),
		store.Run{Error: p.NotCompletedError}.Bounded().Error, nullTime(p.RetryUntil),
	}, nil
}

// scanFinish reads the finish statement's one row.
func scanFinish(row pgx.Row) (store.SlotFinishResult, error) {
	return scanFinishRow(row, nil)
}

// scanFinishRow reads a row of a finish statement: its result columns,
// the item's position when ord is not nil (slotFinishBatch.sql's rows
// carry it), and the run row.
func scanFinishRow(row pgx.Row, ord *int64) (store.SlotFinishResult, error) {
	var res store.SlotFinishResult
	var sr scannedRun
	var buffered *time.Time
	var status *string
	dest := []any{&res.SlotUpdated, &status, &res.LeaseReleased, &buffered}
	if ord != nil {
		dest = append(dest, ord)
	}
	if err := row.Scan(append(dest, sr.dest()...)...); err != nil {
		return store.SlotFinishResult{}, err
	}
	res.SlotStatus = store.SlotStatus(deref(status))
	res.Run = sr.run()
	if buffered != nil {
		res.Buffered = buffered.UTC()
	}
	return res, nil
}

// SlotAbandon ends a dead slot that has no attempt left as failed. See
// store.Store.
func (s *Store) SlotAbandon(ctx context.Context, p store.SlotAbandonParams) (store.SlotFinishResult, error) {
	if err := p.Validate(); err != nil {
		return store.SlotFinishResult{}, err
	}
	if err := s.usable(); err != nil {
		return store.SlotFinishResult{}, err
	}
	// The row as each way of finding the run dead would have it; the
	// statement picks one. The rest comes from the slot row.
	expired, gone, taken := p.Run(0, time.Time{}, store.DeadLeaseExpired, time.Time{}),
		p.Run(0, time.Time{}, store.DeadOwnerGone, time.Time{}), p.Run(0, time.Time{}, store.DeadLeaseTaken, time.Time{})
	var res store.SlotFinishResult
	var sr scannedRun
	var buffered *time.Time
	err := s.pool.QueryRow(ctx, s.q.slotAbandon,
		p.Job, slotTime(p.Slot), p.LeaseName, p.Owner, p.Generation, p.MaxAttempts, s.nowArg(p.Now),
		logsArg(expired.Logs), p.Grace.Microseconds(), store.ReasonInterrupted, expired.Error, gone.Error, taken.Error,
	).Scan(append([]any{&buffered}, sr.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return res, nil // alive again, finished, or attempts left: not ours to end
	}
	if err != nil {
		return store.SlotFinishResult{}, s.translate(fmt.Sprintf("abandon slot of job %q", p.Job), err)
	}
	res.SlotUpdated, res.Run = true, sr.run()
	if buffered != nil {
		res.Buffered = buffered.UTC()
	}
	return res, nil
}

// interruptedScanSQL keeps the scan for interrupted runs to plain index
// scans, never bitmap ones. Between two vacuums the partial index of
// running slots keeps an entry for every run since the last one: a run's
// end moves its slot row out of the index's predicate but leaves the old
// entry, pointing at a dead row version. A bitmap scan reads every such
// row's heap page on every scan: at 10,000 runs a second, 400,000 to
// 550,000 entries, 170 to 580 ms a scan, reading pages from outside
// shared_buffers and pushing out the ones the claims need; the replicas
// scanning every ResumeEvery while their runs' ends were late turned a
// busy second into a stall. A plain index scan marks the entries of rows
// dead to every transaction as it passes them (killed), and later scans
// skip them without the heap: 27 ms. One more statement per scan, in the
// same round trip; the scan is rare while nothing is late.
const interruptedScanSQL = "SELECT set_config('enable_bitmapscan', 'off', true)"

// SlotListInterrupted returns running slots whose run is dead. See
// store.Store.
func (s *Store) SlotListInterrupted(ctx context.Context) ([]store.Slot, error) {
	if err := s.usable(); err != nil {
		return nil, err
	}
	rows, err := s.queryBehind(ctx, []string{interruptedScanSQL}, s.q.slotListInterrupted, []any{s.nowArg(time.Time{})})
	if err != nil {
		return nil, s.translate("list interrupted slots", err)
	}
	slots, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Slot, error) { return scanSlot(row) })
	if err != nil {
		return nil, s.translate("list interrupted slots", err)
	}
	return slots, nil
}

func scanSlot(row pgx.Row) (store.Slot, error) {
	var (
		sl       store.Slot
		status   string
		finished *time.Time
	)
	if err := row.Scan(&sl.Job, &sl.Slot, &status, &sl.Owner, &sl.LeaseName, &sl.Generation, &sl.Attempts, &sl.StartedAt, &finished); err != nil {
		return store.Slot{}, err
	}
	sl.Status = store.SlotStatus(status)
	sl.Slot, sl.StartedAt = sl.Slot.UTC(), sl.StartedAt.UTC()
	if finished != nil {
		sl.FinishedAt = finished.UTC()
	}
	return sl, nil
}

// SlotGet returns the claim of (job, slot).
func (s *Store) SlotGet(ctx context.Context, job string, slot time.Time) (store.Slot, error) {
	if err := store.ValidateName("job", job); err != nil {
		return store.Slot{}, err
	}
	if err := s.usable(); err != nil {
		return store.Slot{}, err
	}
	sl, err := scanSlot(s.pool.QueryRow(ctx, s.q.slotGet, job, slotTime(slot)))
	if err != nil {
		return store.Slot{}, s.translate(fmt.Sprintf("get slot %s of job %q", slotTime(slot).Format(time.RFC3339Nano), job), err)
	}
	return sl, nil
}

// nullSlot and nullLease receive the nullable columns of sql/slotClaim.sql.
type nullSlot struct {
	status, owner, leaseName pgtype.Text
	generation               pgtype.Int8
	attempts                 pgtype.Int4
	startedAt, finishedAt    pgtype.Timestamptz
}

func (n nullSlot) slot(job string, slot time.Time) store.Slot {
	if !n.status.Valid {
		return store.Slot{}
	}
	s := store.Slot{Job: job, Slot: slot, Status: store.SlotStatus(n.status.String)}
	s.Owner = n.owner.String
	s.LeaseName = n.leaseName.String
	s.Generation = n.generation.Int64
	s.Attempts = int(n.attempts.Int32)
	s.StartedAt = n.startedAt.Time.UTC()
	if n.finishedAt.Valid {
		s.FinishedAt = n.finishedAt.Time.UTC()
	}
	return s
}

type nullLease struct {
	name, owner                      pgtype.Text
	generation                       pgtype.Int8
	acquiredAt, renewedAt, expiresAt pgtype.Timestamptz
}

func (n nullLease) lease() store.Lease {
	if !n.generation.Valid {
		return store.Lease{}
	}
	return store.Lease{
		Name:       n.name.String,
		Owner:      n.owner.String,
		Generation: n.generation.Int64,
		AcquiredAt: n.acquiredAt.Time.UTC(),
		RenewedAt:  n.renewedAt.Time.UTC(),
		ExpiresAt:  n.expiresAt.Time.UTC(),
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// SlotComplete fences tx and marks the slot the holding runs completed, in
// tx. See store.Store and sql/slotComplete.sql. tx is a pgx.Tx or a *sql.Tx, as
// for LeaseFence.
func (s *Store) SlotComplete(ctx context.Context, tx any, p store.SlotCompleteParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if err := s.usable(); err != nil {
		return err
	}
	q, err := txQuerier(tx)
	if err != nil {
		return fmt.Errorf("postgres: complete slot of job %q: %w", p.Job, err)
	}
	now := s.nowArg(time.Time{})
	if p.Slot.IsZero() {
		// A manual run: no slot to complete, the fence alone.
		return s.fence(ctx, q, p.LeaseName, p.Generation, s.q.leaseFence, p.LeaseName, p.Generation, now)
	}
	return s.fence(ctx, q, p.LeaseName, p.Generation, s.q.slotComplete, p.Job, slotTime(p.Slot), p.LeaseName, p.Generation, now)
}
