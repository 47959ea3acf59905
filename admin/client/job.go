package client

// Job is one job as GET /api/admin/cron and GET …/{job} answer it, and as
// PUT …/{job} answers it after the change.
type Job struct {
	// Name is the job's name.
	Name string `json:"name"`
	// Schedule is its cron expression or descriptor, as declared.
	Schedule string `json:"schedule"`
	// TimeZone is the zone its schedule is read in: "UTC" unless declared.
	TimeZone string `json:"timeZone"`
	// Overlap is its overlap policy: "skip", "allow" or "buffer-one".
	Overlap string `json:"overlap"`
	// Next is its next slot, in the job's zone; null while the job is not
	// enabled.
	Next *string `json:"next"`
	// NextStart is when the next slot's run starts, delayed by the job's
	// jitter; absent without a jitter (it starts at next).
	NextStart *string `json:"nextStart,omitempty"`
	// Jitter bounds the delay of each slot's start; absent for none.
	Jitter *string `json:"jitter,omitempty"`
	// Exclude is its exclusion windows, its own and those for all jobs;
	// absent for none. Next passes over the slots they hold.
	Exclude []string `json:"exclude,omitempty"`
	// DeclaredEnabled is what the replicas declare, before any override.
	DeclaredEnabled bool `json:"declaredEnabled"`
	// Override is the job's override row, null when none exists.
	Override *Override `json:"override"`
	// Enabled is the effective value: the override's when set, else the
	// declared one.
	Enabled bool `json:"enabled"`
	// LastRun is its latest run, null before the first.
	LastRun *Run `json:"lastRun"`
	// Lease is its lease row, null before the first claim.
	Lease *Lease `json:"lease"`
}

// Override is a job's override row: a pause or resume that holds on every
// replica until removed. A removed override keeps its row, with Enabled
// null, to say who removed it and when.
type Override struct {
	// Enabled is true (resumed), false (paused) or null (removed: the
	// declared value applies).
	Enabled *bool `json:"enabled"`
	// By is who set it: the admin token's name, or the CLI's --by.
	By string `json:"by"`
	// At is when it was set, by the database clock.
	At *string `json:"at"`
	// Note is the reason given with it.
	Note string `json:"note"`
	// Until is when a pause ends by itself (PUT with "until"); absent for
	// one that holds until changed. Once it passed, enabled follows the
	// declared value again.
	Until *string `json:"until,omitempty"`
}

// Lease is a job's lease row as last written. A released or lapsed lease
// stays (generations never go back): Active says whether it is still
// held, by the database clock.
type Lease struct {
	// Holder is the replica that holds or last held it.
	Holder string `json:"holder"`
	// Generation is the lease's fencing token.
	Generation int64 `json:"generation"`
	// AcquiredAt is when Holder took it.
	AcquiredAt *string `json:"acquiredAt"`
	// ExpiresAt is when it lapses unless renewed.
	ExpiresAt *string `json:"expiresAt"`
	// Active says it is held now.
	Active bool `json:"active"`
}
