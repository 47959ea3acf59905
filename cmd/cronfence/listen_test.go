package main

import (
	"errors"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cronfence/cronfence/internal/wait"
)

func TestLoopbackOnly(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "127.0.0.2:80": true, "[::1]:8080": true, "localhost:8080": true, "LOCALHOST:1": true,
		":8080": false, "0.0.0.0:8080": false, "[::]:8080": false, "10.0.0.5:8080": false, "cron.internal:8080": false,
		"no-port": false,
	} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}

// serve --listen on an address other hosts reach refuses, before opening
// anything, a short token and the example file's placeholders, naming
// each by name and line and never quoting it; on loopback it serves them.
func TestServeRefusesWeakTokensOnTheNetwork(t *testing.T) {
	t.Parallel()
	network := func(t *testing.T) string {
		_, port, _ := net.SplitHostPort(freeAddr(t))
		return "0.0.0.0:" + port
	}
	strong := strings.Repeat("k", 32)
	for _, tc := range []struct {
		name, tokens string
		want         []string
	}{
		{"short", "  - {name: ops, role: admin, token: s3cret-admin}\n  - {name: viewer, role: read, token: " + strong + "}\n",
			[]string{`cronfence.yaml:2: token "ops" is 12 characters, fewer than 16`, "openssl rand -hex 32"}},
		{"placeholders", "  - {name: ops, role: admin, token: change-me-admin}\n  - {name: viewer, role: read, token: change-me-read}\n",
			[]string{`cronfence.yaml:2: token "ops" is the example file's placeholder`, `cronfence.yaml:3: token "viewer" is the example file's placeholder`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cfg := writeConfig(t, dir, "tokens:\n"+tc.tokens+"jobs: []\n")
			addr := network(t)
			code, _, errOut := runCLI(t, dir, "serve", "--config", cfg, "--listen", addr)
			if code != exitUsage {
				t.Fatalf("serve --listen %s: exit %d, want %d; stderr %s", addr, code, exitUsage, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not say %q", errOut, w)
				}
			}
			for _, secret := range []string{"s3cret-admin", strong} {
				if strings.Contains(errOut, secret) {
					t.Errorf("stderr quotes a secret: %q", errOut)
				}
			}
			// Refused before anything was opened: no SQLite file beside
			// the config.
			if _, err := os.Stat(filepath.Join(dir, "cronfence.db")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the database was opened before the refusal: %v", err)
			}
		})
	}
	t.Run("the same tokens on loopback", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := writeConfig(t, dir, "tokens:\n  - {name: ops, role: admin, token: change-me-admin}\njobs: []\n")
		addr := freeAddr(t)
		p := start(t, dir, "serve", "--config", cfg, "--listen", addr)
		waitForLog(t, p, "admin API listening")
		stopReplicas(t, []*proc{p})
	})
	t.Run("strong tokens on the network", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cfg := writeConfig(t, dir, "tokens:\n  - {name: ops, role: admin, token: "+strong+"}\njobs: []\n")
		p := start(t, dir, "serve", "--config", cfg, "--listen", network(t))
		waitForLog(t, p, "admin API listening")
		stopReplicas(t, []*proc{p})
	})
}

// Without tokens, serve --listen warns that nobody can open the dashboard.
func TestServeWithoutTokensWarns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "jobs: []\n")
	addr := freeAddr(t)
	p := start(t, dir, "serve", "--config", cfg, "--listen", addr)
	waitForLog(t, p, "admin API listening")
	if !strings.Contains(p.stderr.String(), `level=WARN msg="cronfence: --listen without tokens: the dashboard and the REST API refuse every request`) {
		t.Errorf("no warning about the missing tokens:\n%s", p.stderr.String())
	}
	var code int
	wait.For(t, 10*time.Second, func() bool {
		res, err := http.Get("http://" + addr + "/api/admin/cron/jobs")
		if err != nil {
			return false
		}
		res.Body.Close()
		code = res.StatusCode
		return true
	}, func() string { return "the API did not answer" })
	if code != http.StatusUnauthorized {
		t.Errorf("GET /api/admin/cron/jobs without tokens: %d, want 401 (%s)", code, strconv.Itoa(code))
	}
	stopReplicas(t, []*proc{p})
}
