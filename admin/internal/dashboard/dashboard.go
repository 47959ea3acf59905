package dashboard

import (
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cronfence/cronfence"
	"github.com/cronfence/cronfence/admin/internal/adminapi"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Default and maximum number of runs a job page lists (?limit=).
const (
	DefaultRunsLimit = 50
	MaxRunsLimit     = 1000
)

// alertsPageLimit is how many alerts, open or resolved, /alerts lists.
const alertsPageLimit = 200

// Options configures the dashboard. A nil *Options takes every default.
type Options struct {
	// Logger receives a line for every page the store could not answer.
	// Defaults to slog.Default().
	Logger *slog.Logger
	// ReplicaLiveFor is how recent a replica's heartbeat must be to show it
	// live. Defaults to adminapi.DefaultReplicaLiveFor (30s), as the REST API.
	ReplicaLiveFor time.Duration
	// Prefix is the path the dashboard and the REST API are mounted under
	// ("/cron"), which every link and the buttons' API calls start with;
	// empty for the root. The handler itself sees paths without it (see
	// http.StripPrefix).
	Prefix string
	// API is the REST API the buttons' actions are handed to (POST /act),
	// as the token that opened the page. Nil: no buttons.
	API http.Handler
}

type dashboard struct {
	sched   *cronfence.Scheduler
	tokens  *adminapi.Tokens
	log     *slog.Logger
	liveFor time.Duration
	pages   *template.Template
	static  fs.FS
	api     http.Handler // nil: no actions
}

// New returns the dashboard's handler over sched. It answers its own paths
// (/, /job, /alerts, /static/…) and 404 otherwise; Mount puts it beside the
// REST API.
func New(sched *cronfence.Scheduler, tokens []adminapi.Token, opts *Options) http.Handler {
	d := &dashboard{sched: sched, tokens: adminapi.NewTokens(tokens), log: slog.Default(), liveFor: adminapi.DefaultReplicaLiveFor}
	if opts != nil {
		if opts.Logger != nil {
			d.log = opts.Logger
		}
		if opts.ReplicaLiveFor > 0 {
			d.liveFor = opts.ReplicaLiveFor
		}
		d.api = opts.API
	}
	prefix := ""
	if opts != nil {
		prefix = opts.Prefix
	}
	// path is every link's and every API call's absolute path, under the
	// prefix the handler is mounted at.
	path := func(p string) string { return prefix + p }
	d.pages = template.Must(template.New("").Funcs(funcs).Funcs(template.FuncMap{"path": path, "scheduleForm": scheduleFormOf}).ParseFS(templateFS, "templates/*.html"))
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	d.static = sub
	return d
}

// Mount routes the REST API's paths (/api/, /healthz, /readyz) to api and
// every other path to dash.
func Mount(api, dash http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/api/") || p == "/api" || p == "/healthz" || p == "/readyz" {
			api.ServeHTTP(w, r)
			return
		}
		dash.ServeHTTP(w, r)
	})
}

// contentSecurityPolicy allows this origin's script, style and fetch()
// only: no inline script or style, no framing, no form posts elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

func secure(h http.Header) {
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
}

func (d *dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	if r.URL.Path == "/act" {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			actError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "actions are POSTed by the dashboard's buttons")
			return
		}
		d.act(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		d.plain(w, http.StatusMethodNotAllowed, "The dashboard's pages only read; its buttons post to /act. Scripts write through the REST API with a bearer token.")
		return
	}
	switch r.URL.Path {
	case "/static/app.css", "/static/app.js":
		// Style and script only: nothing about the jobs, so no token.
		http.ServeFileFS(w, r, d.static, strings.TrimPrefix(r.URL.Path, "/static/"))
		return
	}
	var page func(http.ResponseWriter, *http.Request, adminapi.Identity)
	switch r.URL.Path {
	case "/":
		page = d.overview
	case "/job":
		page = d.job
	case "/alerts":
		page = d.alerts
	case "/schedules":
		page = d.schedules
	case "/schedule":
		page = d.schedule
	default:
		d.plain(w, http.StatusNotFound, "No such page: "+r.URL.Path)
		return
	}
	id, ok := d.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="cronfence", charset="UTF-8"`)
		d.plain(w, http.StatusUnauthorized, "The dashboard needs a cronfence token (read or admin) as the password; the user name is not checked.")
		return
	}
	page(w, r, id)
}

// authenticate accepts a token as the password of Basic credentials (what a
// browser sends after its own prompt) or as a bearer token.
func (d *dashboard) authenticate(r *http.Request) (adminapi.Identity, bool) {
	if id, ok := d.tokens.Bearer(r); ok && id.CanRead() {
		return id, true
	}
	if _, password, ok := r.BasicAuth(); ok {
		if id, ok := d.tokens.Match(password); ok && id.CanRead() {
			return id, true
		}
	}
	return adminapi.Identity{}, false
}

// plain answers a short page with only a message.
func (d *dashboard) plain(w http.ResponseWriter, status int, msg string) {
	d.render(w, status, "message.html", messagePage{Title: http.StatusText(status), Message: msg})
}

// render executes a page template into a buffer first, so a template error
// is a 500 and never half a page.
func (d *dashboard) render(w http.ResponseWriter, status int, name string, data any) {
	var b strings.Builder
	if err := d.pages.ExecuteTemplate(&b, name, data); err != nil {
		d.log.Error("dashboard: rendering a page", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// storeError answers a page whose store reads failed: 503, nothing cached.
func (d *dashboard) storeError(w http.ResponseWriter, r *http.Request, op string, err error) {
	d.log.Error("dashboard: store unavailable", "op", op, "path", r.URL.Path, "error", err)
	d.plain(w, http.StatusServiceUnavailable, op+": the store is unavailable: "+err.Error())
}

type messagePage struct {
	Title   string
	Message string
}
