package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// readyTimeout bounds a replica's start-up until /readyz answers 200.
const readyTimeout = 30 * time.Second

// replica is one `cronfence serve` process slot: it survives kills and
// restarts, each start an incarnation with a new pid (and owner id). Its
// database traffic, the job's psql included, goes through its own proxy.
type replica struct {
	h      *harness
	name   string           // r0, r1, …
	proxy  *toxiproxy.Proxy // between this replica and PostgreSQL; nil on SQLite
	second *toxiproxy.Proxy // with a standby, to the other server of the pair (see failover); else nil
	listen string           // the admin API's address
	log    string           // the job's append-only start log

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has been reaped
	offset  time.Duration // the running incarnation's clock offset
	starts  int
	stopped bool     // frozen with SIGSTOP
	ending  bool     // the harness signalled the incarnation to end
	crashes []string // incarnations that exited without being told to
}

// dbURL is the database as this replica sees it: through its proxy ("" on
// SQLite). With a standby, both servers of the pair, through their proxies,
// and target_session_attrs=read-write, as an HA deployment lists them:
// whichever is the primary now is the one connected to.
// proxyHost and proxyPort are the replica's proxy's address, for the
// MySQL job's client; empty without a proxy.
func (r *replica) proxyHost() string {
	if r.proxy == nil {
		return ""
	}
	host, _, _ := net.SplitHostPort(r.proxy.Listen)
	return host
}

func (r *replica) proxyPort() string {
	if r.proxy == nil {
		return ""
	}
	_, port, _ := net.SplitHostPort(r.proxy.Listen)
	return port
}

func (r *replica) dbURL() string {
	switch {
	case r.proxy == nil:
		return ""
	case r.h.mysql != nil:
		return mysqlURL(r.proxy)
	case r.second != nil:
		return fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&connect_timeout=5&target_session_attrs=read-write",
			r.proxy.Listen, r.second.Listen)
	}
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&connect_timeout=5", r.proxy.Listen)
}

// start starts an incarnation with the scheduler's clock shifted by offset
// and waits until its API says ready.
func (r *replica) start(offset time.Duration) error {
	exited, err := r.launch(offset)
	if err != nil {
		return err
	}
	return r.waitReady(exited)
}

// launch starts the process and returns a channel closed when it has been
// reaped.
func (r *replica) launch(offset time.Duration) (chan struct{}, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return nil, fmt.Errorf("%s: already running as pid %d", r.name, r.cmd.Process.Pid)
	}
	r.starts++
	out, err := os.Create(filepath.Join(r.h.dir, fmt.Sprintf("%s.%d.stderr", r.name, r.starts)))
	if err != nil {
		return nil, err
	}
	db := []string{"--database", r.dbURL()}
	if r.h.sqlite != "" {
		db = []string{"--sqlite", r.h.sqlite}
	}
	cmd := exec.Command(r.h.bin, append(append([]string{"serve", "--config", r.h.config}, db...),
		"--listen", r.listen, "--shutdown-grace", "5s", "--kill-grace", "2s", "--log-format", "json")...)
	if r.h.guard != "" {
		args := []string{"-guard", r.h.guard, "-database", r.dbURL(), "-script", filepath.Join(r.h.dir, "job.sh"),
			"-listen", r.listen, "-ttl", leaseTTL.String()}
		for _, j := range jobs {
			args = append(args, "-job", fmt.Sprintf("%s:%d:%s:%s", j.Name, j.Every, seconds(j.Work), seconds(j.Hold)))
		}
		cmd = exec.Command(r.h.weakBin, args...)
	}
	cmd.Env = append(os.Environ(),
		"CHAOS_RUN_ID="+r.h.runID,
		"CHAOS_REPLICA="+r.name,
		"CHAOS_LOG="+r.log,
		"CHAOS_DB_URL="+r.dbURL(),
		"CHAOS_SQLITE="+r.h.sqlite,
		"CHAOS_MYSQL_HOST="+r.proxyHost(),
		"CHAOS_MYSQL_PORT="+r.proxyPort(),
		"CHAOS_BREAK_FENCING="+boolEnv(r.h.breakFencing),
		"CHAOS_WRITE="+string(r.h.write),
	)
	if offset != 0 {
		cmd.Env = append(cmd.Env, "CRONFENCE_TEST_CLOCK_OFFSET="+offset.String())
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	exited := make(chan struct{})
	go func() {
		err := cmd.Wait()
		out.Close()
		r.mu.Lock()
		if !r.ending {
			r.crashes = append(r.crashes, fmt.Sprintf("%s (pid %d) exited on its own: %v; the end of its stderr:\n%s",
				r.name, cmd.Process.Pid, err, tail(out.Name(), 2048)))
		}
		r.mu.Unlock()
		close(exited)
	}()
	r.cmd, r.exited, r.offset, r.stopped, r.ending = cmd, exited, offset, false, false
	return exited, nil
}

func (r *replica) waitReady(exited chan struct{}) error {
	deadline := time.Now().Add(readyTimeout)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%s: exited during start-up; see %s.%d.stderr", r.name, r.name, r.starts)
		default:
		}
		resp, err := client.Get("http://" + r.listen + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: not ready within %s", r.name, readyTimeout)
}

// running reports whether an incarnation is up, and its pid.
func (r *replica) running() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0, false
	}
	return r.cmd.Process.Pid, true
}

// kill sends SIGKILL and waits for the process to be reaped. Its command's
// process group gets SIGKILL from the kernel (Pdeathsig).
func (r *replica) kill() error { return r.end(syscall.SIGKILL, 10*time.Second) }

// term sends SIGTERM (a graceful stop: running commands get the shutdown
// grace) and waits; SIGKILL after wait.
func (r *replica) term(wait time.Duration) error {
	err := r.end(syscall.SIGTERM, wait)
	if errors.Is(err, errStillRunning) {
		return errors.Join(err, r.kill())
	}
	return err
}

var errStillRunning = errors.New("still running")

func (r *replica) end(sig syscall.Signal, wait time.Duration) error {
	r.mu.Lock()
	cmd, exited, stopped := r.cmd, r.exited, r.stopped
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	r.mu.Lock()
	r.ending = true
	r.mu.Unlock()
	if stopped {
		r.thaw()
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(wait):
		return fmt.Errorf("%s: pid %d %w %s after %s", r.name, cmd.Process.Pid, errStillRunning, wait, sig)
	}
	r.mu.Lock()
	r.cmd, r.stopped = nil, false
	r.mu.Unlock()
	return nil
}

// freeze stops the replica's whole tree with SIGSTOP, the serve process and
// every descendant (command supervisors, shells, psql), as a long GC pause
// or a suspended VM would: nothing of it runs, its connections stay open.
func (r *replica) freeze() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || r.stopped {
		return fmt.Errorf("%s: not running", r.name)
	}
	pid := r.cmd.Process.Pid
	// Serve is stopped first so it forks nothing new; each level is stopped
	// before its children are listed, so none escapes.
	for level := []int{pid}; len(level) > 0; {
		var next []int
		for _, p := range level {
			_ = syscall.Kill(p, syscall.SIGSTOP)
			next = append(next, childrenOf(p)...)
		}
		level = next
	}
	r.stopped = true
	return nil
}

// thaw continues what freeze stopped: every descendant, then serve.
func (r *replica) thaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || !r.stopped {
		return
	}
	pid := r.cmd.Process.Pid
	var tree []int
	for level := []int{pid}; len(level) > 0; {
		var next []int
		for _, p := range level {
			tree = append(tree, p)
			next = append(next, childrenOf(p)...)
		}
		level = next
	}
	for i := len(tree) - 1; i >= 0; i-- {
		_ = syscall.Kill(tree[i], syscall.SIGCONT)
	}
	r.stopped = false
}

// childrenOf lists the pids whose parent is pid, from /proc.
func childrenOf(pid int) []int {
	var out []int
	for _, p := range procPids() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// The command name may hold spaces: fields start after the last ')'.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

func procPids() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

// setEnabled pauses (false) or unsets the override of (nil) a job through
// this replica's admin API.
func (r *replica) setEnabled(ctx context.Context, job string, enabled *bool) error {
	body := `{"enabled": null, "note": "chaos"}`
	if enabled != nil {
		body = fmt.Sprintf(`{"enabled": %t, "note": "chaos"}`, *enabled)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://"+r.listen+"/api/admin/cron/"+job, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: PUT %s: HTTP %d", r.name, job, resp.StatusCode)
	}
	return nil
}

func boolEnv(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// tail is the last n bytes of a file, for messages.
func tail(path string, n int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if int64(len(b)) > n {
		b = b[int64(len(b))-n:]
	}
	return string(b)
}
