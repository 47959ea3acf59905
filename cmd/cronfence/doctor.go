package main

// `cronfence doctor`: the forecast of every job of a config file, read
// before it is served: next slots, what the year's daylight-saving changes
// do to each job, the exclusions it meets, and the settings that will
// surprise (internal/forecast); and, when the database answers, whether the
// live replicas run the jobs in the zones and with the schedules the file
// says.

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/forecast"
	"github.com/cronfence/cronfence/schedule"
	"github.com/cronfence/cronfence/store"
)

// doctorReplicaTimeout bounds the replica comparison: connecting, reading
// the registry. A database that does not answer skips it.
const doctorReplicaTimeout = 10 * time.Second

// doctorCmd is `cronfence doctor`.
type doctorCmd struct {
	Config  string `name:"config" short:"c" required:"" type:"path" placeholder:"FILE" help:"The YAML file of jobs, as given to serve."`
	From    string `name:"from" placeholder:"RFC3339" help:"Forecast from this instant. Defaults to now."`
	Count   int    `name:"count" short:"n" default:"3" help:"How many next slots to print per job."`
	Offline bool   `name:"offline" help:"Do not read the database to compare the file's jobs with the live replicas'."`
}

func (c *doctorCmd) Help() string {
	return "For each job of the file: its next slots (with the jitter's start), what each change of its zone's UTC offset " +
		"in the next year does to it (runs moved, skipped, kept once, run twice), the exclusions it meets in the next year, " +
		"and warnings: a schedule that runs rarely or never, a lease TTL shorter than the timeout, a catch-up window longer " +
		"than the interval with catch_up all, a jitter serve would refuse, and a live replica that runs a job in another zone " +
		"or with another schedule (unless --offline; skipped, with a line saying why, when the database does not answer). " +
		"Exits 0 without warnings, 1 with any, 2 for a usage error or an invalid file. It writes nothing."
}

func (c *doctorCmd) Run(a *app) error {
	if c.Count < 1 || c.Count > maxNextCount {
		return usageError("--count must be between 1 and %d, got %d", maxNextCount, c.Count)
	}
	from, err := parseFrom(c.From)
	if err != nil {
		return err
	}
	// The database is read only for the replica comparison, which may be
	// skipped: a variable it needs does not make the forecast fail.
	f, err := config.LoadFor(c.Config, config.Reads{Schedules: true})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	jobs := make([]forecast.Job, len(f.Jobs))
	for i, j := range f.Jobs {
		if jobs[i], err = forecastJob(j, f.Exclude); err != nil {
			return err
		}
	}
	var replicaNote string
	replicaWarnings := map[string][]forecast.Warning{}
	if c.Offline {
		replicaNote = "replicas: not compared (--offline)"
	} else {
		replicaNote, replicaWarnings = c.compareReplicas(a, f)
	}
	warned := 0
	for i, j := range f.Jobs {
		ws, err := printDoctorJob(a.stdout, j, jobs[i], from, c.Count)
		if err != nil {
			return err
		}
		for _, w := range replicaWarnings[j.Name] {
			fmt.Fprintf(a.stdout, "  warning: %s\n", w)
		}
		if len(ws)+len(replicaWarnings[j.Name]) > 0 {
			warned++
		}
		fmt.Fprintln(a.stdout)
	}
	fmt.Fprintln(a.stdout, replicaNote)
	fmt.Fprintf(a.stdout, "%s: %s, %s with warnings\n", f.Path, counted(len(f.Jobs), "job"), counted(warned, "job"))
	if warned > 0 {
		return &exitError{code: exitFailure}
	}
	return nil
}

// printDoctorJob prints job j's forecast from the instant from and returns
// its warnings.
func printDoctorJob(w io.Writer, j config.Job, fj forecast.Job, from time.Time, count int) ([]forecast.Warning, error) {
	header := fmt.Sprintf("%s: %q in %s", j.Name, j.Schedule, j.TimeZone)
	if j.Jitter > 0 {
		header += fmt.Sprintf(", jitter %s", j.Jitter)
	}
	if j.Disabled {
		header += " (enabled: false; serve does not run it)"
	}
	fmt.Fprintln(w, header)
	slots, err := forecast.Slots(fj, from, count, false)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(w, "  next slots:")
	if len(slots) == 0 {
		fmt.Fprintln(w, "    none")
	}
	for _, s := range slots {
		printSlot(w, s, "    ")
	}
	end := from.Add(forecast.Year)
	effects, err := forecast.Effects(fj.Schedule, from, end)
	if err != nil {
		return nil, err
	}
	if len(effects) == 0 {
		fmt.Fprintf(w, "  daylight saving: no change of UTC offset in %s before %s\n", zoneName(fj, from), end.Format(time.DateOnly))
	} else {
		fmt.Fprintf(w, "  daylight saving, until %s:\n", end.Format(time.DateOnly))
		for _, e := range effects {
			fmt.Fprintf(w, "    %s: %s\n", e.Change, e)
		}
	}
	year := forecast.CountSpan(fj, from, end)
	switch {
	case fj.Exclusions.Len() == 0:
	case len(year.Excluded) == 0:
		fmt.Fprintf(w, "  exclusions: none holds a slot before %s\n", end.Format(time.DateOnly))
	default:
		fmt.Fprintf(w, "  exclusions, until %s:\n", year.To.Format(time.DateOnly))
		for _, m := range year.Excluded {
			fmt.Fprintf(w, "    %q holds %s, the first %s\n", m.Entry, counted(m.Count, "slot"), m.First.Format(time.RFC3339))
		}
	}
	ws := forecast.Warnings(fj, from, year)
	for _, x := range ws {
		fmt.Fprintf(w, "  warning: %s\n", x)
	}
	return ws, nil
}

// printSlot prints one slot: its instant, its wall time, its jittered
// start, the exclusion holding it and how a change of offset touches it.
func printSlot(w io.Writer, s forecast.Slot, indent string) {
	line := indent + s.At.Format(time.RFC3339) + "  " + s.At.Format("Mon 2006-01-02 15:04:05 MST")
	if s.Delay > 0 {
		// To the millisecond, the delay and the start alike.
		d := s.Delay.Truncate(time.Millisecond)
		line += fmt.Sprintf("  starts +%s at %s", d, s.At.Add(d).Format("15:04:05.000 MST"))
	}
	fmt.Fprintln(w, line)
	if s.Excluded != "" {
		fmt.Fprintf(w, "%s  excluded by %q: does not run\n", indent, s.Excluded)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(w, "%s  daylight saving: %s\n", indent, n)
	}
}

// zoneName is the zone j's slots are in.
func zoneName(j forecast.Job, from time.Time) string {
	if n := j.Schedule.Next(from); !n.IsZero() {
		return n.Location().String()
	}
	return "its zone"
}

// forecastJob is config job j as the forecast reads it, with the
// scheduler's defaults; all is the file's exclusions for every job.
func forecastJob(j config.Job, all []string) (forecast.Job, error) {
	loc, err := time.LoadLocation(j.TimeZone)
	if err != nil {
		return forecast.Job{}, usageError("job %s: time_zone %q: %w", j.Name, j.TimeZone, err)
	}
	s, err := schedule.Parse(j.Schedule, &schedule.Options{Location: loc})
	if err != nil {
		return forecast.Job{}, usageError("job %s: %w", j.Name, err)
	}
	// The job's own exclusions and the file's, each read in the job's
	// zone and then joined, as the scheduler joins Job.Exclude and
	// Config.Exclude.
	x, err := schedule.ParseExclusions(j.Exclude, loc)
	if err != nil {
		return forecast.Job{}, usageError("job %s: exclude: %w", j.Name, err)
	}
	if len(all) > 0 {
		y, err := schedule.ParseExclusions(all, loc)
		if err != nil {
			return forecast.Job{}, usageError("exclude: %w", err)
		}
		x = x.With(y)
	}
	fj := forecast.Job{
		Name: j.Name, Schedule: s, Jitter: j.Jitter, Exclusions: x,
		Timeout: j.Timeout, Deadline: j.Deadline, LeaseTTL: j.LeaseTTL,
		CatchUp: j.CatchUp, CatchUpWindow: j.CatchUpWindow, MaxCatchUp: j.MaxCatchUp,
		CompletesInTx: j.CompletesInTx,
	}
	if fj.LeaseTTL == 0 {
		fj.LeaseTTL = cronfence.DefaultLeaseTTL
	}
	if fj.CatchUp == string(cronfence.CatchUpAll) && fj.MaxCatchUp == 0 {
		fj.MaxCatchUp = cronfence.DefaultMaxCatchUp
	}
	return fj, nil
}

// parseFrom parses --from; empty is now.
func parseFrom(s string) (time.Time, error) {
	if s == "" {
		return time.Now(), nil
	}
	from, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usageError("--from %q: not an RFC 3339 instant such as 2024-03-09T12:00:00Z", s)
	}
	return from, nil
}

// compareReplicas compares the zone and schedule of each job of f with
// those the live replicas on f's database registered. It returns a line
// saying what was compared, or why nothing was, and the differences as
// warnings by job.
func (c *doctorCmd) compareReplicas(a *app, f *config.File) (string, map[string][]forecast.Warning) {
	skipped := func(err error) (string, map[string][]forecast.Warning) {
		return "replicas: not compared: " + strings.ReplaceAll(err.Error(), "\n", "; "), nil
	}
	df, err := loadConfig(a.globals, c.Config, config.Reads{Monitor: true})
	if err != nil {
		return skipped(err)
	}
	ctx, cancel := context.WithTimeout(a.ctx, doctorReplicaTimeout)
	defer cancel()
	ac := *a
	ac.ctx = ctx
	db, err := openDirect(&ac, df)
	if err != nil {
		return skipped(err)
	}
	defer db.close()
	reps, err := db.ReplicaList(ctx)
	if err != nil {
		return skipped(fmt.Errorf("listing the replicas in %s: %w", db.where, err))
	}
	now, err := db.Now(ctx)
	if err != nil {
		return skipped(fmt.Errorf("reading the clock of %s: %w", db.where, err))
	}
	stale := df.Monitor.ReplicaStale
	if stale <= 0 {
		stale = defaultStaleAfter
	}
	var live []store.Replica
	for _, r := range reps {
		if now.Sub(r.HeartbeatAt) <= stale {
			live = append(live, r)
		}
	}
	if len(live) == 0 {
		return fmt.Sprintf("replicas: not compared: no replica in %s sent a heartbeat within %s (%d in the registry)", db.where, stale, len(reps)), nil
	}
	out := map[string][]forecast.Warning{}
	for _, j := range f.Jobs {
		var exclude []string
		if fj, err := forecastJob(j, f.Exclude); err == nil {
			exclude = fj.Exclusions.Entries() // as the scheduler registers them
		}
		for _, r := range live {
			for _, rj := range r.Jobs {
				if rj.Name != j.Name {
					continue
				}
				zone := rj.TimeZone
				if zone == "" {
					zone = config.DefaultTimeZone
				}
				if zone != j.TimeZone || rj.Schedule != j.Schedule {
					out[j.Name] = append(out[j.Name], forecast.Warning{Code: "replica", Text: fmt.Sprintf(
						"replica %s (%s) runs it as %q in %s; this file says %q in %s", r.Owner, r.Host, rj.Schedule, zone, j.Schedule, j.TimeZone)})
				}
				if !slices.Equal(rj.Exclude, exclude) {
					out[j.Name] = append(out[j.Name], forecast.Warning{Code: "replica", Text: fmt.Sprintf(
						"replica %s (%s) excludes %q; this file excludes %q", r.Owner, r.Host, rj.Exclude, exclude)})
				}
			}
		}
	}
	return fmt.Sprintf("replicas: %s live in %s, compared", counted(len(live), "replica"), db.where), out
}

// counted is "1 job", "2 jobs".
func counted(n int, noun string) string {
	return fmt.Sprintf("%d %s%s", n, noun, plural(n))
}
