package pgtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// run runs one PostgreSQL program as the server's user, with a timeout.
// Failures carry the program's output and the tail of the server log.
func (c *Cluster) run(name string, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir // the server's user may not be able to enter ours
	cmd.Env = serverEnv()
	cmd.SysProcAttr = sysProcAttr(c.user)
	// The server pg_ctl starts must not keep us waiting on its output.
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("pgtest: %s %s: %w\n%s%s", name, strings.Join(args, " "), err, out, c.logTail())
	}
	return nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.dir, "data") }
func (c *Cluster) logPath() string { return filepath.Join(c.dir, "server.log") }

// logTail returns the last lines of the server log, for failure messages.
func (c *Cluster) logTail() string {
	const maxBytes, maxLines = 4096, 25
	b, err := os.ReadFile(c.logPath())
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > maxBytes {
		b = b[len(b)-maxBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return fmt.Sprintf("server log %s, last lines:\n%s\n", c.logPath(), strings.Join(lines, "\n"))
}

// serverEnv is our environment without libpq's PG* variables, which would
// point pg_ctl at another server, and with C messages, which create matches.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") && !strings.HasPrefix(kv, "LC_ALL=") {
			env = append(env, kv)
		}
	}
	return append(env, "LC_ALL=C")
}
