// Package adminapi serves cronfence's admin REST API under /api/admin/cron,
// plus /healthz and /readyz, over a running Scheduler.
//
// Every /api/admin/ request needs a bearer token in the Authorization header
// (never a cookie); with no token configured every request is refused (401).
// A "read" token may GET; writes (PUT, POST) need an "admin" token. Errors are
// always JSON {"code", "message", "details"}.
//
//	GET  /api/admin/cron               every job (see Job)
//	GET  /api/admin/cron/{job}         one job
//	PUT  /api/admin/cron/{job}         {"enabled": true|false|null, "note": "…"}
//	POST /api/admin/cron/{job}/run     manual run: 202, or 409 CRON_JOB_ALREADY_EXECUTING
//	GET  /api/admin/cron/{job}/logs    ?limit=N (default 50, at most 1000), newest first
//	GET  /healthz                      200 "ok" while the process serves
//	GET  /readyz                       200 when the store answers and its schema is current
//
// A job name containing "/" is sent escaped (%2F) in the path.
package adminapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/cronfence/cronfence"
)

// Roles a Token may have.
const (
	// RoleAdmin may read and change: pause, resume, trigger.
	RoleAdmin = "admin"
	// RoleRead may only read.
	RoleRead = "read"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is
// zero.
const DefaultMaxBodyBytes = 64 << 10

// Default and maximum ?limit= of the logs endpoint.
const (
	DefaultLogsLimit = 50
	MaxLogsLimit     = 1000
)

// Prefix is the path the admin API is served under.
const Prefix = "/api/admin/cron"

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
	// Defaults to DefaultMaxBodyBytes (64 KiB).
	MaxBodyBytes int64
}

type tokenDigest struct {
	name, role string
	sum        [sha256.Size]byte
}

type api struct {
	sched   *cronfence.Scheduler
	tokens  []tokenDigest
	log     *slog.Logger
	maxBody int64
}

// New returns the handler of the admin API, /healthz and /readyz over sched.
// tokens are copied; with none, every admin request is answered 401.
func New(sched *cronfence.Scheduler, tokens []Token, opts *Options) http.Handler {
	a := &api{sched: sched, log: slog.Default(), maxBody: DefaultMaxBodyBytes}
	if opts != nil {
		if opts.Logger != nil {
			a.log = opts.Logger
		}
		if opts.MaxBodyBytes > 0 {
			a.maxBody = opts.MaxBodyBytes
		}
	}
	for _, t := range tokens {
		if t.Secret == "" {
			continue
		}
		a.tokens = append(a.tokens, tokenDigest{name: t.Name, role: t.Role, sum: sha256.Sum256([]byte(t.Secret))})
	}
	return a
}

// authenticate returns the token the request carries in its Authorization
// header, or nil. Secrets are compared as SHA-256 digests in constant time
// against every configured token, so neither which token matched nor a
// secret's length shows in the timing.
func (a *api) authenticate(r *http.Request) *tokenDigest {
	h := r.Header.Get("Authorization")
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return nil
	}
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(secret))
	var found *tokenDigest
	for i := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 && found == nil {
			found = &a.tokens[i]
		}
	}
	return found
}

// route is a matched admin path.
type route struct {
	kind  string // "list", "job", "run", "logs"
	job   string
	allow string // the methods the path accepts
}

// match parses an admin path; ok is false for a path the API does not have.
func match(escaped string) (route, bool) {
	rest, ok := strings.CutPrefix(escaped, Prefix)
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
	switch {
	case len(parts) == 1:
		return route{kind: "job", job: name, allow: "GET, HEAD, PUT"}, true
	case len(parts) == 2 && parts[1] == "run":
		return route{kind: "run", job: name, allow: "POST"}, true
	case len(parts) == 2 && parts[1] == "logs":
		return route{kind: "logs", job: name, allow: "GET, HEAD"}, true
	}
	return route{}, false
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if path != Prefix && !strings.HasPrefix(path, Prefix+"/") {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such path: "+r.URL.Path, nil)
		return
	}
	// Authenticate before anything else so an anonymous caller learns
	// nothing, not even which paths exist.
	tok := a.authenticate(r)
	if tok == nil || (tok.role != RoleAdmin && tok.role != RoleRead) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cronfence"`)
		writeError(w, http.StatusUnauthorized, "UNAUTHORIZED", "a valid bearer token is required in the Authorization header", nil)
		return
	}
	rt, ok := match(path)
	if !ok {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "no such path: "+r.URL.Path, nil)
		return
	}
	if !methodIn(w, r, rt.allow) {
		return
	}
	write := r.Method != http.MethodGet && r.Method != http.MethodHead
	if write && tok.role != RoleAdmin {
		writeError(w, http.StatusForbidden, "FORBIDDEN", "token "+tok.name+" may only read; this needs an admin token", nil)
		return
	}
	switch rt.kind {
	case "list":
		a.listJobs(w, r)
	case "job":
		if r.Method == http.MethodPut {
			a.putJob(w, r, tok.name, rt.job)
		} else {
			a.getJob(w, r, rt.job)
		}
	case "run":
		a.runJob(w, r, rt.job)
	case "logs":
		a.logs(w, r, rt.job)
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
