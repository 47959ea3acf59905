package main

// How the admin commands (jobs, pause, resume, unset, logs, trigger and
// alerts; check with --server) reach the replicas: directly on the
// database (the one --config FILE names, as serve resolves it, else the
// global --database / --sqlite flags) or, with --server, through the admin
// REST API of a running `serve --listen`. In direct mode they never create
// or migrate the database (only migrate and serve do).

import (
	"context"
	"net/url"
	"time"

	"github.com/cronfence/cronfence/admin/client"
	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
)

// httpTimeout bounds one request to a server.
const httpTimeout = 30 * time.Second

// serverFlags select server mode.
type serverFlags struct {
	Server string `name:"server" env:"CRONFENCE_SERVER" placeholder:"URL" help:"Base URL of a cronfence serve --listen process (http://host:port). Empty: work directly on the database."`
	Token  string `name:"token" env:"CRONFENCE_TOKEN" placeholder:"TOKEN" help:"Bearer token for --server."`
}

// call sends one request to the server (client.Client, whose tests run it
// against the real handler) and decodes a 2xx answer into out. A non-2xx
// answer is returned as *client.Error.
func (s *serverFlags) call(ctx context.Context, method, path string, body, out any) error {
	if s.Token == "" {
		return usageError("--server needs --token (or CRONFENCE_TOKEN)")
	}
	if u, err := url.Parse(s.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("--server %q: not an http:// or https:// URL", s.Server)
	}
	ctx, cancel := context.WithTimeout(ctx, httpTimeout)
	defer cancel()
	c := client.Client{Base: s.Server, Token: s.Token}
	return c.Do(ctx, method, path, body, out)
}

// loadConfig loads the --config file of a direct-mode command, nil without
// one, requiring the variables of what r says it reads and of its database:
// unless --database overrides it (fileReads). A file that cannot be loaded
// is a usage error, as for serve.
func loadConfig(g *Globals, path string, r config.Reads) (*config.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := config.LoadFor(path, g.fileReads(r))
	if err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	return f, nil
}

// openDirect opens the database of a direct-mode command: the one of the
// config file f exactly as serve resolves it (configGlobals), else the one
// of the global flags; as it is (openExisting), never created or migrated.
func openDirect(a *app, f *config.File) (*database, error) {
	g := a.globals
	if f != nil {
		g = configGlobals(g, f)
	}
	return g.openExisting(a.ctx)
}
