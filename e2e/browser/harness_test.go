package browser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// TestMain removes the binary built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// needChromium skips under -short when Chromium is missing and fails
// otherwise: CI must run these tests, never skip them quietly.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if testing.Short() {
			t.Skipf("skipping the browser tests under -short: %s is missing (apt-get install chromium, as .ci/run does)", chromiumPath)
		}
		t.Fatalf("%s is missing: install Debian's chromium (apt-get install chromium, as .ci/run does), or run with -short to skip", chromiumPath)
	}
}

// binary builds cmd/cronfence from the tree once per test process.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "cronfence-browser-bin-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(buildDir, "cronfence")
		// The binary as shipped, built as the chaos suite builds it.
		cmd := exec.Command("make", "-s", "build", "BINDIR="+buildDir)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("make build: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// artifacts returns the directory screenshots go to: $ARTIFACTS/<test>, or
// a new directory under the system's temporary directory. It is kept after
// the test, and printed.
func artifacts(t *testing.T) string {
	t.Helper()
	var dir string
	if base := os.Getenv("ARTIFACTS"); base != "" {
		dir = filepath.Join(base, t.Name())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else {
		var err error
		if dir, err = os.MkdirTemp("", "cronfence-browser-"+t.Name()+"-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// syncBuffer is a bytes.Buffer safe to write from a process's pipe while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// replica is one `cronfence serve --listen` process.
type replica struct {
	url    string
	cmd    *exec.Cmd
	stderr syncBuffer
	done   chan struct{}

	// bin, dir and config are what it was started with (startReplica):
	// the binary, its working directory and its config file.
	bin, dir, config string
}

// The API tokens of every test's config: ops, an admin, and viewer, read
// only.
const (
	adminToken = "browser-admin-s3cret"
	readToken  = "browser-read-s3cret"
	tokens     = `tokens:
  - name: ops
    role: admin
    token: ` + adminToken + `
  - name: viewer
    role: read
    token: ` + readToken + `
`
)

// writeConfig writes a config file in dir: a SQLite store in dir, the
// tokens, then rest (the jobs and any other section, as YAML). It returns
// the file's path.
func writeConfig(t *testing.T, dir, rest string) string {
	t.Helper()
	config := filepath.Join(dir, "cronfence.yaml")
	if err := os.WriteFile(config, []byte("sqlite: "+filepath.Join(dir, "cronfence.db")+"\n"+tokens+rest), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// withBasic is r's URL carrying user:password, as a browser sends it after
// its own prompt.
func (r *replica) withBasic(user, password string) string {
	return strings.Replace(r.url, "http://", "http://"+user+":"+password+"@", 1)
}

// serve writes a config of rest in a new directory (writeConfig) and
// starts a replica of the binary on it (startReplica).
func serve(t *testing.T, rest string) *replica {
	t.Helper()
	dir := t.TempDir()
	return startReplica(t, binary(t), dir, writeConfig(t, dir, rest))
}

// startReplica starts serve with config, listening on a free port, and
// waits until /readyz answers 200. It is stopped (SIGTERM) at cleanup.
func startReplica(t *testing.T, bin, dir, config string) *replica {
	t.Helper()
	addr := freeAddr(t)
	r := &replica{url: "http://" + addr, done: make(chan struct{}), bin: bin, dir: dir, config: config}
	r.cmd = exec.Command(bin, "serve", "--config", config, "--listen", addr, "--shutdown-grace", "1s", "--kill-grace", "500ms")
	r.cmd.Dir = dir
	r.cmd.Stdout = io.Discard
	r.cmd.Stderr = &r.stderr
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CRONFENCE_") {
			r.cmd.Env = append(r.cmd.Env, kv)
		}
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.done
			t.Errorf("serve %s did not stop within 15s of SIGTERM", r.url)
		}
		if t.Failed() {
			t.Logf("serve %s stderr:\n%s", r.url, r.stderr.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(r.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return r
			}
		}
		select {
		case <-r.done:
			t.Fatalf("serve exited before it was ready; stderr:\n%s", r.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve %s not ready within 30s: %v; stderr:\n%s", r.url, err, r.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// api sends one request to the replica's REST API with a bearer token and
// decodes the JSON answer into out (when not nil). It returns the status.
func (r *replica) api(t *testing.T, method, path, token, body string, out any) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, r.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}
