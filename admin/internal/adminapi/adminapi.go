package adminapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/client"
)

// Roles a Token may have.
const (
	// RoleAdmin may read and change: pause, resume, trigger, acknowledge
	// an alert.
	RoleAdmin = "admin"
	// RoleRead may only read.
	RoleRead = "read"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is
// zero.
const DefaultMaxBodyBytes = 64 << 10

// Token is one bearer token the API accepts.
type Token struct {
	// Name identifies the holder; it is recorded as the "by" of an override.
	Name string
	// Role is RoleAdmin or RoleRead. Any other role is refused everything.
	Role string
	// Secret is the bearer token itself. An empty secret never matches.
	Secret string
}

// Options configures the handler. A nil *Options takes every default.
type Options struct {
	// Logger receives a line for every 5xx answer. Defaults to
	// slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body; a larger one is answered 413.
	// A stored schedule's create or update may be up to
	// MinScheduleBodyBytes all the same, room for its 64 KiB of arguments.
	// Defaults to DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
	// ReplicaLiveFor is how recent a replica's last heartbeat must be, by
	// the database clock, for GET /api/admin/cron/replicas to call it live.
	// Defaults to DefaultReplicaLiveFor (30s).
	ReplicaLiveFor time.Duration
	// StoreTimeout bounds the store's work for one request: a database
	// that accepts connections but does not answer (a hung server, a lock,
	// a half-open network) gets 503 STORE_UNAVAILABLE within it, and a
	// change that could not be saved in time is not saved. Defaults to
	// DefaultStoreTimeout (5s).
	StoreTimeout time.Duration
}

// DefaultStoreTimeout is the default of Options.StoreTimeout.
const DefaultStoreTimeout = 5 * time.Second

type api struct {
	sched   *cronfence.Scheduler
	tokens  *Tokens
	log     *slog.Logger
	maxBody int64
	liveFor time.Duration
	timeout time.Duration // of the store's work for one request
}

// New returns the handler of the admin API, /healthz and /readyz over sched.
// tokens are copied; with none, every admin request is answered 401.
func New(sched *cronfence.Scheduler, tokens []Token, opts *Options) http.Handler {
	a := &api{sched: sched, log: slog.Default(), maxBody: DefaultMaxBodyBytes, liveFor: DefaultReplicaLiveFor, timeout: DefaultStoreTimeout}
	if opts != nil {
		if opts.Logger != nil {
			a.log = opts.Logger
		}
		if opts.MaxBodyBytes > 0 {
			a.maxBody = opts.MaxBodyBytes
		}
		if opts.ReplicaLiveFor > 0 {
			a.liveFor = opts.ReplicaLiveFor
		}
		if opts.StoreTimeout > 0 {
			a.timeout = opts.StoreTimeout
		}
	}
	a.tokens = NewTokens(tokens)
	return a
}

// route is a matched admin path.
type route struct {
	kind    string // "list", "job", "run", "runGet", "logs", "alerts", "alertAck", "replicas", or one of schedules (schedules.go)
	job     string // or the stored schedule's name
	runID   string // of "runGet"; the backfill's ID of "backfill"
	alert   string // the kind of "alertAck"
	subject string // of "alertAck"
	allow   string // the methods the path accepts
}

// Segments under Prefix that name an endpoint rather than a job.
const (
	alertsSegment   = "alerts"
	replicasSegment = "replicas"
)

// match parses an admin path (escaped, as sent); ok is false for a path
// the API does not have.
//
// "alerts", "replicas" and "schedules-audit" are also valid job names. The literal segment,
// read with GET or HEAD, is the endpoint; a job of that name is read with
// any percent-escaped spelling of its name (/api/admin/cron/%61lerts), and
// its PUT, /run and /logs, which the endpoints do not have, work as
// written. The escaped path is what tells them apart, so no job name is
// refused. The literal "schedules" is the stored schedules' endpoints
// whatever the method and the segments after it (matchSchedules): a job
// of that name is reached escaped for every method (client.JobPath).
func match(escaped, method string) (route, bool) {
	rest, ok := strings.CutPrefix(escaped, client.Prefix)
	if !ok {
		return route{}, false
	}
	if rest == "" || rest == "/" {
		return route{kind: "list", allow: "GET, HEAD"}, true
	}
	if rest[0] != '/' {
		return route{}, false
	}
	parts := strings.Split(rest[1:], "/")
	name, err := url.PathUnescape(parts[0])
	if err != nil || name == "" {
		return route{}, false
	}
	if parts[0] == schedulesSegment {
		return matchSchedules(parts)
	}
	if len(parts) == 1 && (method == http.MethodGet || method == http.MethodHead) {
		switch parts[0] {
		case alertsSegment:
			return route{kind: "alerts", allow: "GET, HEAD"}, true
		case replicasSegment:
			return route{kind: "replicas", allow: "GET, HEAD"}, true
		case schedulesAuditSegment:
			return route{kind: "schedulesAudit", allow: "GET, HEAD"}, true
		}
	}
	switch {
	case len(parts) == 4 && parts[0] == alertsSegment && parts[3] == "ack":
		// No job path has four segments: this is the alert's, whatever
		// job is named "alerts".
		kind, err1 := url.PathUnescape(parts[1])
		subject, err2 := url.PathUnescape(parts[2])
		if err1 != nil || err2 != nil || kind == "" || subject == "" {
			return route{}, false
		}
		return route{kind: "alertAck", alert: kind, subject: subject, allow: "POST"}, true
	case len(parts) == 1:
		return route{kind: "job", job: name, allow: "GET, HEAD, PUT"}, true
	case len(parts) == 2 && parts[1] == "run":
		return route{kind: "run", job: name, allow: "POST"}, true
	case len(parts) >= 2 && parts[1] == backfillsSegment:
		return matchBackfills(parts, name)
	case len(parts) == 2 && parts[1] == "logs":
		return route{kind: "logs", job: name, allow: "GET, HEAD"}, true
	case len(parts) == 3 && parts[1] == "runs" && parts[2] != "":
		return route{kind: "runGet", job: name, runID: parts[2], allow: "GET, HEAD"}, true
	}
	return route{}, false
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every store call a request makes is bounded: a database that does
	// not answer gets a 503 in time (storeError), not a request left open.
	ctx, cancel := context.WithTimeout(r.Context(), a.timeout)
	defer cancel()
	r = r.WithContext(ctx)
	path := r.URL.EscapedPath()
	switch path {
	case "/healthz":
		if !methodIn(w, r, "GET, HEAD") {
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
		return
	case "/readyz":
		if !methodIn(w, r, "GET, HEAD") {
			return
		}
		a.readyz(w, r)
		return
	}
	if path != client.Prefix && !strings.HasPrefix(path, client.Prefix+"/") {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such path: "+r.URL.Path, nil)
		return
	}
	// Authenticate before anything else so an anonymous caller learns
	// nothing, not even which paths exist.
	tok, ok := a.tokens.identityOf(r)
	if !ok || !tok.CanRead() {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cronfence"`)
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "a valid bearer token is required in the Authorization header", nil)
		return
	}
	rt, ok := match(path, r.Method)
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such path: "+r.URL.Path, nil)
		return
	}
	if !methodIn(w, r, rt.allow) {
		return
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	if write && tok.Role != RoleAdmin {
		writeError(w, http.StatusForbidden, "FORBIDDEN", "token "+tok.Name+" may only read; this needs an admin token", nil)
		return
	}
	switch rt.kind {
	case "list":
		a.listJobs(w, r)
	case "job":
		if r.Method == http.MethodPut {
			a.putJob(w, r, tok.Name, rt.job)
		} else {
			a.getJob(w, r, rt.job)
		}
	case "run":
		a.runJob(w, r, rt.job)
	case "runGet":
		a.getRun(w, r, rt.job, rt.runID)
	case "logs":
		a.logs(w, r, rt.job)
	case "alerts":
		a.alerts(w, r)
	case "alertAck":
		a.alertAck(w, r, tok.Name, rt.alert, rt.subject)
	case "replicas":
		a.replicas(w, r)
	case "backfills", "backfill":
		a.serveBackfills(w, r, tok, rt)
	default:
		a.serveSchedules(w, r, tok, rt)
	}
}

// methodIn answers 405 with an Allow header unless r's method is in allow.
func methodIn(w http.ResponseWriter, r *http.Request, allow string) bool {
	for _, m := range strings.Split(allow, ", ") {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", r.Method+" is not allowed here; allowed: "+allow, nil)
	return false
}
