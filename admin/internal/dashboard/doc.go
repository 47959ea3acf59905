// Package dashboard serves cronfence's operator page at "/" of serve
// --listen: the jobs table, a page per job with its runs and logs, the open
// alerts and the replica registry. Pages are rendered on the server with
// html/template from embedded files (no build step) and read fine without
// JavaScript.
//
// # Authentication
//
// The pages show what the admin API shows, so they need the same tokens.
// A page accepts HTTP Basic authentication whose password is a token (read
// or admin; the user name is ignored), so a browser asks for it natively,
// and also a bearer token for scripts.
//
// Writes never go through the dashboard: its pause, resume, unset,
// trigger and acknowledge buttons call the REST API with fetch() and an
// "Authorization: Bearer" header built from a token the operator types,
// kept in the tab's sessionStorage. The REST API accepts only bearer
// tokens, never Basic credentials nor cookies, because a browser attaches
// those to any request to the origin, a cross-site form post included: a
// write must carry a header that only this origin's script can set (CSRF).
//
// Every answer carries X-Frame-Options: DENY, a Content-Security-Policy
// that allows only this origin's script and style (no inline script), and
// Cache-Control: no-store.
package dashboard
