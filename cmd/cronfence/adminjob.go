package main

// The JOB argument of pause, resume, unset, logs and trigger: a valid name,
// and one the replicas know. In direct mode a job the replicas do not know
// is refused, as the API's 404 refuses it through --server: a command
// pointed at the wrong database or job says so rather than succeeding
// where no replica looks.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/store"
)

// validJob checks a job name argument.
func validJob(job string) error {
	if err := store.ValidateName("job name", job); err != nil {
		return usageError("%w", err)
	}
	return nil
}

// jobPath is the REST API path of job.
func jobPath(job string) string { return client.JobPath(job) }

// unknownJob is the error for a job the replicas do not know: exit 1, as
// through --server, where the API answers 404 CRON_JOB_NOT_FOUND.
func unknownJob(format string, args ...any) error {
	return &exitError{code: exitFailure, err: fmt.Errorf(format, args...)}
}

// declaredJob returns the index of job in the config file f, or the
// unknown-job error: with --config, the file's jobs are the known ones, as
// a server knows the jobs of its file.
func declaredJob(f *config.File, job string) (int, error) {
	if i := slices.IndexFunc(f.Jobs, func(j config.Job) bool { return j.Name == job }); i >= 0 {
		return i, nil
	}
	const shown = 10
	names := make([]string, 0, shown)
	for _, j := range f.Jobs[:min(len(f.Jobs), shown)] {
		names = append(names, strconv.Quote(j.Name))
	}
	more := ""
	if len(f.Jobs) > shown {
		more = fmt.Sprintf(" and %d more", len(f.Jobs)-shown)
	}
	return -1, unknownJob("no job named %q in %s (it declares %s%s)", job, f.Path, strings.Join(names, ", "), more)
}

// storeKnows says whether the store has a trace of job: a stored schedule
// of that name, a run row (Prune keeps each job's latest, so a job that
// ever ran or was skipped keeps one), an override (so a stale one can
// still be removed), or a replica in the registry that registers it (a
// running one, or one gone without a graceful stop and not pruned yet).
// That is what direct mode without --config can know of the replicas'
// jobs: a job declared but never run, on replicas that are not running,
// needs --config.
func storeKnows(ctx context.Context, db *database, job string) (bool, error) {
	if ok, err := isStored(ctx, db, job); ok || err != nil {
		return ok, err
	}
	if ok, err := hasRuns(ctx, db, job); ok || err != nil {
		return ok, err
	}
	states, err := db.JobStateList(ctx)
	if err != nil {
		return false, fmt.Errorf("reading the job states in %s: %w", db.where, err)
	}
	if slices.ContainsFunc(states, func(s store.JobState) bool { return s.Job == job }) {
		return true, nil
	}
	reps, err := db.ReplicaList(ctx)
	if err != nil {
		return false, fmt.Errorf("listing the replicas in %s: %w", db.where, err)
	}
	for _, r := range reps {
		if slices.ContainsFunc(r.Jobs, func(j store.ReplicaJob) bool { return j.Name == job }) {
			return true, nil
		}
	}
	return false, nil
}

// isStored says whether job is a stored schedule.
func isStored(ctx context.Context, db *database, job string) (bool, error) {
	_, err := db.ScheduleGet(ctx, job)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, wrapInvalid(fmt.Errorf("reading the stored schedule %s in %s: %w", job, db.where, err))
	}
	return true, nil
}

// hasRuns says whether the store keeps a run of job.
func hasRuns(ctx context.Context, db *database, job string) (bool, error) {
	runs, err := db.RunList(ctx, store.RunListParams{Job: job, Limit: 1})
	if err != nil {
		return false, wrapInvalid(fmt.Errorf("listing the runs of %s in %s: %w", job, db.where, err))
	}
	return len(runs) > 0, nil
}

// directJob opens the database of a direct-mode command on job (see
// openDirect) once job is known. With a --config file, the known jobs are
// the ones it declares and the stored schedules (a job of every replica
// as much as the file's); with runsKnown (logs), also a job whose runs are
// kept though nothing declares it any more, as the API answers them. A
// stale override of a job the file does not declare is refused: the
// command is likely pointed at the wrong file or database. Without
// --config, any trace in the store (storeKnows) makes a job known.
func directJob(a *app, configPath, job string, runsKnown bool) (*database, error) {
	f, err := loadConfig(a.globals, configPath, config.Reads{}) // the database and the job names
	if err != nil {
		return nil, err
	}
	var notDeclared error
	if f != nil {
		if _, notDeclared = declaredJob(f, job); notDeclared == nil {
			return openDirect(a, f)
		}
	}
	db, err := openDirect(a, f)
	if err != nil {
		return nil, err
	}
	if err := storeMakesKnown(a.ctx, db, job, notDeclared, runsKnown); err != nil {
		db.close()
		return nil, err
	}
	return db, nil
}

// storeMakesKnown returns nil when the store makes job known to directJob,
// else the unknown-job error (or the store's). notDeclared is the
// --config file's refusal of job, nil without a file.
func storeMakesKnown(ctx context.Context, db *database, job string, notDeclared error, runsKnown bool) error {
	var known bool
	var err error
	if notDeclared == nil {
		known, err = storeKnows(ctx, db, job)
	} else if known, err = isStored(ctx, db, job); err == nil && !known && runsKnown {
		known, err = hasRuns(ctx, db, job)
	}
	switch {
	case err != nil:
		return err
	case known:
		return nil
	case notDeclared != nil:
		return unknownJob("%v; nor is it a stored schedule in %s", notDeclared, db.where)
	}
	return unknownJob("no job named %q in %s: no stored schedule, no runs, no override, and no replica registers it. "+
		"Check the name; for a job that has not run yet, give --config FILE (the serve config declaring it)", job, db.where)
}
