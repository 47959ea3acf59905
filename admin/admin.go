// Package admin serves cronfence's admin REST API, its dashboard and the
// health probes as one http.Handler, to mount in a service's own mux beside
// its other routes:
//
//	h, err := admin.NewHandler(sched, admin.Options{Prefix: "/cron", Tokens: tokens})
//	mux.Handle("/cron/", h)
//
// Under the prefix:
//
//	GET  /api/admin/cron               every job
//	GET  /api/admin/cron/{job}         one job
//	PUT  /api/admin/cron/{job}         {"enabled": true|false|null, "note": "…"}: pause, resume, unset
//	POST /api/admin/cron/{job}/run     a manual run: 202 with its runId, or 409 CRON_JOB_ALREADY_EXECUTING
//	GET  /api/admin/cron/{job}/runs/{runId}  that run: running, then finished with its row
//	GET  /api/admin/cron/{job}/logs    its runs, newest started first (?limit=N)
//	GET  /api/admin/cron/alerts        the alerts (?open=true, ?kind=, ?subject=, ?limit=N)
//	GET  /api/admin/cron/replicas      the replica registry
//	GET, POST /api/admin/cron/schedules             the stored schedules (?after=, ?limit=); create one
//	GET, PUT, DELETE /api/admin/cron/schedules/{name}  one; update it (the version read in the body); delete it (?version=)
//	GET  /api/admin/cron/schedules/{name}/audit, /api/admin/cron/schedules-audit  the changes, newest first
//	GET  /healthz                      200 while the process serves
//	GET  /readyz                       200 when the store answers and its schema is current
//	GET  /, /job?name=…, /alerts, /schedules, /schedule?name=…  the dashboard (docs/dashboard.md); its buttons call the API
//
// Errors of the API are JSON {"code", "message", "details"}.
//
// Every API request and every dashboard page needs a token: the API takes
// it as a bearer token (never a cookie), the dashboard as HTTP Basic
// credentials (any user name, the token as password). A RoleRead token may
// read; pausing, resuming, triggering and writing stored schedules need a
// RoleAdmin token. With no
// token, every request but the probes is refused (401).
//
// A process that only serves the API (its replicas elsewhere run the
// timers) builds its Scheduler with Config.DisableTimers and registers the
// same jobs: the API and the dashboard show the jobs the scheduler has.
package admin

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
	"github.com/cronfence/cronfence/admin/internal/dashboard"
	"github.com/cronfence/cronfence/store"
)

// Roles a Token may have.
const (
	// RoleAdmin may read and change: pause, resume, trigger.
	RoleAdmin = adminapi.RoleAdmin
	// RoleRead may only read.
	RoleRead = adminapi.RoleRead
)

// DefaultReplicaLiveFor is Options.ReplicaLiveFor's default: three
// heartbeat periods, as the absence checks' default
// (cronfence.AlertThresholds.ReplicaStale), so the API, the dashboard and
// the checks agree on which replicas are live.
const DefaultReplicaLiveFor = adminapi.DefaultReplicaLiveFor

// Token is one secret the handler accepts.
type Token struct {
	// Name identifies the holder: the dashboard shows it, and a pause or
	// resume records it as the override's "by".
	Name string
	// Role is RoleAdmin or RoleRead.
	Role string
	// Secret is the token itself. Secrets are compared as SHA-256 digests
	// in constant time; use long random ones.
	Secret string
}

// Options configures the handler. The zero value mounts it at the root with
// no token (every request but the probes refused).
type Options struct {
	// Prefix is the path the handler is mounted under: "" for the root, or
	// a path such as "/cron" (starting with "/", not ending with one). Mount
	// the handler at Prefix+"/" (http.ServeMux: mux.Handle("/cron/", h));
	// it removes the prefix itself, and every link of the dashboard starts
	// with it.
	Prefix string
	// Tokens are the secrets accepted, each with its role.
	Tokens []Token
	// Logger receives a line for every request the store could not answer.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// ReplicaLiveFor is how recent a replica's heartbeat must be, by the
	// database clock, for the API and the dashboard to call it live.
	// Defaults to DefaultReplicaLiveFor (30s); set it to the replicas'
	// Config.Alerts.ReplicaStale.
	ReplicaLiveFor time.Duration
	// StoreTimeout bounds the store's work for one request: a database that
	// does not answer gets 503 within it. Defaults to 5s.
	StoreTimeout time.Duration
	// APIOnly serves the REST API and the probes without the dashboard.
	APIOnly bool
}

// NewHandler returns the handler of the REST API, the dashboard and the
// probes over s, which may be started before or after. It returns an
// error wrapping store.ErrInvalidArgument for a nil scheduler, a bad
// prefix or a bad token, naming which.
func NewHandler(s *cronfence.Scheduler, opts Options) (http.Handler, error) {
	if s == nil {
		return nil, invalid("the scheduler is nil")
	}
	if err := validPrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if opts.ReplicaLiveFor < 0 || opts.StoreTimeout < 0 {
		return nil, invalid(fmt.Sprintf("Options.ReplicaLiveFor (%s) and Options.StoreTimeout (%s) must not be negative", opts.ReplicaLiveFor, opts.StoreTimeout))
	}
	tokens := make([]adminapi.Token, len(opts.Tokens))
	secrets := make(map[string]int, len(opts.Tokens))
	for i, t := range opts.Tokens {
		first, dup := secrets[t.Secret]
		switch {
		case t.Name == "":
			return nil, invalid(fmt.Sprintf("Options.Tokens[%d]: the name is empty", i))
		case t.Role != RoleAdmin && t.Role != RoleRead:
			return nil, invalid(fmt.Sprintf("Options.Tokens[%d] (%s): role %q is neither %q nor %q", i, t.Name, t.Role, RoleAdmin, RoleRead))
		case t.Secret == "":
			return nil, invalid(fmt.Sprintf("Options.Tokens[%d] (%s): the secret is empty", i, t.Name))
		case dup:
			// Which role would it have?
			return nil, invalid(fmt.Sprintf("Options.Tokens[%d] (%s) has the secret of Options.Tokens[%d]; each must be distinct", i, t.Name, first))
		}
		secrets[t.Secret] = i
		tokens[i] = adminapi.Token{Name: t.Name, Role: t.Role, Secret: t.Secret}
	}
	api := adminapi.New(s, tokens, &adminapi.Options{Logger: opts.Logger, ReplicaLiveFor: opts.ReplicaLiveFor, StoreTimeout: opts.StoreTimeout})
	var h http.Handler = api
	if !opts.APIOnly {
		dash := dashboard.New(s, tokens, &dashboard.Options{Logger: opts.Logger, ReplicaLiveFor: opts.ReplicaLiveFor, Prefix: opts.Prefix, API: api})
		h = dashboard.Mount(api, dash)
	}
	if opts.Prefix == "" {
		return h, nil
	}
	return http.StripPrefix(opts.Prefix, h), nil
}

// validPrefix checks Options.Prefix.
func validPrefix(p string) error {
	switch {
	case p == "":
		return nil
	case !strings.HasPrefix(p, "/"):
		return invalid(fmt.Sprintf("Options.Prefix %q must start with /", p))
	case strings.HasSuffix(p, "/"):
		return invalid(fmt.Sprintf("Options.Prefix %q must not end with / (mount the handler at %q)", p, p))
	case strings.ContainsAny(p, "?#%\"'<> \t\r\n"):
		return invalid(fmt.Sprintf("Options.Prefix %q must be a plain path (no query, fragment, escapes, quotes or spaces)", p))
	}
	return nil
}

func invalid(msg string) error {
	return errors.Join(errors.New("admin: "+msg), store.ErrInvalidArgument)
}
