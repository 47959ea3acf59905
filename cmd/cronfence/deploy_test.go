package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/cronfence/cronfence/cmd/cronfence/internal/config"
	"github.com/cronfence/cronfence/internal/wait"
)

// The deployment recipes under deploy/ and the Dockerfile are tested as
// they are shipped: their configs load, their command lines parse, the
// image builds and serves where podman is installed.

// repoFile is a file of the repository, from this package's directory.
func repoFile(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

// parsesAsCronfence fails t unless args (without the binary) is a command
// line cronfence accepts: the flags exist and take values of their kind.
func parsesAsCronfence(t *testing.T, what string, args []string) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, append(slices.Clone(args), "--help"), &out, &errOut); code != 0 {
		t.Errorf("%s: cronfence %q is refused (exit %d): %s", what, args, code, errOut.String())
	}
}

// loadsAsConfig fails t unless text loads as a serve config file, with env
// set for its ${VAR}s.
func loadsAsConfig(t *testing.T, what, text string, env map[string]string) *config.File {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	path := filepath.Join(t.TempDir(), "cronfence.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s does not load: %v", what, err)
	}
	return f
}

// dockerfile is the Dockerfile's instructions, continuation lines joined.
func dockerfile(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(repoFile("Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, rest, _ := strings.Cut(line, " ")
		out[strings.ToUpper(op)] = append(out[strings.ToUpper(op)], strings.TrimSpace(rest))
	}
	return out
}

func jsonArgs(t *testing.T, s string) []string {
	t.Helper()
	var args []string
	if err := json.Unmarshal([]byte(s), &args); err != nil {
		t.Fatalf("%s: not a JSON list: %v", s, err)
	}
	return args
}

func TestDockerfileServesItsConfig(t *testing.T) {
	df := dockerfile(t)
	if from := df["FROM"]; len(from) != 1 || from[0] != "scratch" {
		t.Errorf("FROM %v, want scratch alone: the image is the static binary", from)
	}
	if ep := jsonArgs(t, df["ENTRYPOINT"][0]); !slices.Equal(ep, []string{"/cronfence"}) {
		t.Errorf("ENTRYPOINT %v", ep)
	}
	cmd := jsonArgs(t, df["CMD"][0])
	parsesAsCronfence(t, "the Dockerfile's CMD", cmd)
	if i := slices.Index(cmd, "--config"); i < 0 || cmd[i+1] != "/etc/cronfence/cronfence.yaml" ||
		!slices.Contains(df["COPY"], "deploy/container/cronfence.yaml /etc/cronfence/cronfence.yaml") {
		t.Errorf("CMD %v does not serve the config the image copies (COPY %v)", cmd, df["COPY"])
	}
	b, err := os.ReadFile(repoFile("deploy", "container", "cronfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	f := loadsAsConfig(t, "deploy/container/cronfence.yaml", string(b), map[string]string{"CRONFENCE_ADMIN_TOKEN": "x-0123456789"})
	if f.SQLitePath != "/data/cronfence.db" || len(f.Jobs) == 0 {
		t.Errorf("the image's config: sqlite %q, %d jobs; want /data/cronfence.db (the volume) and a job", f.SQLitePath, len(f.Jobs))
	}
	for _, j := range f.Jobs {
		if len(j.Command) == 0 || !strings.HasPrefix(j.Command[0], "/cronfence") {
			t.Errorf("job %s runs %q: the image has nothing but /cronfence to run", j.Name, j.Command)
		}
	}
}

func TestSystemdUnitRunsServe(t *testing.T) {
	b, err := os.ReadFile(repoFile("deploy", "systemd", "cronfence.service"))
	if err != nil {
		t.Fatal(err)
	}
	var execStart string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			execStart = v
		}
	}
	args := strings.Fields(execStart)
	if len(args) < 2 || args[0] != "/usr/local/bin/cronfence" || args[1] != "serve" {
		t.Fatalf("ExecStart=%q, want /usr/local/bin/cronfence serve …", execStart)
	}
	parsesAsCronfence(t, "the unit's ExecStart", args[1:])
	for _, want := range []string{"KillSignal=SIGTERM", "TimeoutStopSec=", "Restart=on-failure", "User=cronfence"} {
		if !strings.Contains(string(b), "\n"+want) {
			t.Errorf("the unit has no %s", want)
		}
	}
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		// systemd-analyze verify wants a running systemd to resolve the unit's
		// dependencies; without one it is not run.
		if out, err := exec.Command("systemd-analyze", "verify", repoFile("deploy", "systemd", "cronfence.service")).CombinedOutput(); err != nil {
			t.Errorf("systemd-analyze verify: %v\n%s", err, out)
		}
	}
}

func TestKubernetesDeployment(t *testing.T) {
	b, err := os.ReadFile(repoFile("deploy", "kubernetes", "cronfence.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet struct {
			Path string `yaml:"path"`
			Port string `yaml:"port"`
		} `yaml:"httpGet"`
	}
	type doc struct {
		Kind     string            `yaml:"kind"`
		Data     map[string]string `yaml:"data"`
		Metadata struct {
			Name string `yaml:"name"`
		} `yaml:"metadata"`
		Spec struct {
			Replicas int `yaml:"replicas"`
			Template struct {
				Spec struct {
					Grace      int `yaml:"terminationGracePeriodSeconds"`
					Containers []struct {
						Args  []string `yaml:"args"`
						Ports []struct {
							Name string `yaml:"name"`
							Port int    `yaml:"containerPort"`
						} `yaml:"ports"`
						Env []struct {
							Name string `yaml:"name"`
						} `yaml:"env"`
						Readiness probe `yaml:"readinessProbe"`
						Liveness  probe `yaml:"livenessProbe"`
						Mounts    []struct {
							Path string `yaml:"mountPath"`
						} `yaml:"volumeMounts"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	var docs []doc
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var d doc
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	var dep, cm *doc
	for i := range docs {
		switch docs[i].Kind {
		case "Deployment":
			dep = &docs[i]
		case "ConfigMap":
			cm = &docs[i]
		}
	}
	if dep == nil || cm == nil {
		t.Fatalf("the manifest has no Deployment or no ConfigMap: %d documents", len(docs))
	}
	if dep.Spec.Replicas < 2 {
		t.Errorf("%d replicas: the point is several", dep.Spec.Replicas)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	parsesAsCronfence(t, "the container's args", c.Args)
	if i := slices.Index(c.Args, "--listen"); i < 0 || c.Args[i+1] != ":8080" || len(c.Ports) == 0 || c.Ports[0].Port != 8080 {
		t.Errorf("args %v and ports %+v: the probes' port is not the one --listen serves", c.Args, c.Ports)
	}
	if c.Readiness.HTTPGet.Path != "/readyz" || c.Liveness.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness %q, liveness %q; want /readyz and /healthz", c.Readiness.HTTPGet.Path, c.Liveness.HTTPGet.Path)
	}
	if dep.Spec.Template.Spec.Grace <= 30 {
		t.Errorf("terminationGracePeriodSeconds %d: not longer than serve's 30s shutdown grace", dep.Spec.Template.Spec.Grace)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = "value-0123456789-" + e.Name
	}
	if _, ok := env["CRONFENCE_DATABASE_URL"]; !ok {
		t.Errorf("no CRONFENCE_DATABASE_URL: replicas on several nodes need one PostgreSQL")
	}
	delete(env, "CRONFENCE_DATABASE_URL")
	i := slices.Index(c.Args, "--config")
	if i < 0 || filepath.Dir(c.Args[i+1]) != c.Mounts[0].Path {
		t.Fatalf("--config %v is not in the ConfigMap's mount %+v", c.Args, c.Mounts)
	}
	text, ok := cm.Data[filepath.Base(c.Args[i+1])]
	if !ok {
		t.Fatalf("the ConfigMap has no %s", filepath.Base(c.Args[i+1]))
	}
	loadsAsConfig(t, "the ConfigMap's cronfence.yaml", text, env)
}

// The image builds with podman (FROM scratch needs no registry) and
// serves: /readyz answers, a manual run of its job succeeds, SIGTERM stops
// it with exit 0. Where the sandbox refuses podman's runtime (no setrlimit,
// as here), the same image's filesystem runs its ENTRYPOINT and CMD under
// chroot instead, which needs root.
func TestContainerImageServes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and an image")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman is not installed (apt-get install podman)")
	}
	ctxDir := t.TempDir()
	build := exec.Command("make", "-s", "build", "BINDIR="+filepath.Join(ctxDir, "bin"))
	build.Dir = repoFile()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	for _, f := range []string{"Dockerfile", filepath.Join("deploy", "container", "cronfence.yaml"), filepath.Join("deploy", "container", "data", "README")} {
		b, err := os.ReadFile(repoFile(f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(ctxDir, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ctxDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tag := "localhost/cronfence-test:" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if out, err := exec.Command(podman, "build", "-q", "-t", tag, ctxDir).CombinedOutput(); err != nil {
		t.Fatalf("podman build: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })

	addr := freeAddr(t)
	token := "admin-token-0123456789"
	var serve *exec.Cmd
	probe := exec.Command(podman, "run", "--rm", tag, "version")
	if out, err := probe.CombinedOutput(); err == nil {
		if !strings.HasPrefix(string(out), "cronfence ") {
			t.Fatalf("podman run %s version: %q", tag, out)
		}
		serve = exec.Command(podman, "run", "--rm", "--network", "host", "-e", "CRONFENCE_ADMIN_TOKEN="+token, tag,
			"serve", "--config", "/etc/cronfence/cronfence.yaml", "--listen", addr)
	} else {
		if !strings.Contains(string(out), "setrlimit") && !strings.Contains(string(out), "permission denied") {
			t.Fatalf("podman run: %v\n%s", err, out)
		}
		if os.Geteuid() != 0 {
			t.Skipf("podman cannot run containers here (%s) and chroot needs root", strings.TrimSpace(string(out)))
		}
		t.Logf("podman cannot run containers in this sandbox (%s); running the image's filesystem under chroot", strings.TrimSpace(string(out)))
		root := exportImage(t, podman, tag)
		runtimeMounts(t, root)
		entry := inspectArgs(t, podman, tag)
		args := append(entry[1:len(entry)-1], addr) // the image's CMD, on a free port
		serve = exec.Command("chroot", append([]string{"--userspec=65534:65534", root, entry[0]}, args...)...)
	}
	serve.Env = append(os.Environ(), "CRONFENCE_ADMIN_TOKEN="+token)
	var out lockedBuffer
	serve.Stdout, serve.Stderr = &out, &out
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	t.Cleanup(func() { _ = serve.Process.Kill(); <-exited })

	base := "http://" + addr
	wait.For(t, time.Minute, func() bool {
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("the image's serve exited: %v\n%s", err, out.String())
		default:
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}, func() string { return "the image's /readyz never answered 200:\n" + out.String() })

	req, _ := http.NewRequest("POST", base+"/api/admin/cron/heartbeat/run", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger heartbeat: %v %v\n%s", resp, err, out.String())
	}
	resp.Body.Close()
	wait.For(t, time.Minute, func() bool {
		req, _ := http.NewRequest("GET", base+"/api/admin/cron/heartbeat/logs", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(b), `"success":true`) && strings.Contains(string(b), "cronfence ")
	}, func() string {
		return "the manual run of heartbeat did not succeed with the version in its log:\n" + out.String()
	})

	if err := serve.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("SIGTERM: serve exited with %v\n%s", err, out.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not stop on SIGTERM:\n%s", out.String())
	}
}

// exportImage writes the image's filesystem into a directory and returns it.
func exportImage(t *testing.T, podman, tag string) string {
	t.Helper()
	id, err := exec.Command(podman, "create", tag).Output()
	if err != nil {
		t.Fatalf("podman create: %v", err)
	}
	cid := strings.TrimSpace(string(id))
	defer exec.Command(podman, "rm", "-f", cid).Run()
	// Not t.TempDir: the directory gets /dev and /proc mounted into it (see
	// runtimeMounts), and it is removed only once they are gone.
	root, err := os.MkdirTemp("", "cronfence-image-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o755); err != nil { // an image's / is; the image's user must reach /cronfence
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if mounted := mountsUnder(t, root); len(mounted) > 0 {
			t.Errorf("%s still has %v mounted: left in place, not removed", root, mounted)
			return
		}
		_ = os.RemoveAll(root)
	})
	export := exec.Command(podman, "export", cid)
	untar := exec.Command("tar", "-x", "-C", root)
	pipe, err := export.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		t.Fatal(err)
	}
	if err := export.Run(); err != nil {
		t.Fatalf("podman export: %v", err)
	}
	if err := untar.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	return root
}

// runtimeMounts gives root what a container runtime gives every
// container, which a FROM scratch image does not have: /dev (a command's
// stdin is /dev/null) and /proc (the job supervisor re-executes
// /proc/self/exe). /dev is bound read-only, so nothing can remove the
// host's device nodes through it; both are unmounted at cleanup, before
// exportImage's cleanup removes root.
func runtimeMounts(t *testing.T, root string) {
	t.Helper()
	for _, m := range []struct {
		dir  string
		args []string
	}{
		{"dev", []string{"--bind", "-o", "ro", "/dev"}},
		{"proc", []string{"-t", "proc", "proc"}},
	} {
		target := filepath.Join(root, m.dir)
		if err := os.MkdirAll(target, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", append(m.args, target)...).CombinedOutput(); err != nil {
			t.Skipf("cannot mount %s for the chroot: %v %s", target, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("umount", target).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", target, err, out)
			}
		})
	}
	// A bind mount is writable unless remounted read-only.
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", filepath.Join(root, "dev")).CombinedOutput(); err != nil {
		t.Fatalf("remounting %s/dev read-only: %v %s", root, err, out)
	}
}

// mountsUnder returns the mount points at or below dir.
func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// inspectArgs returns the image's ENTRYPOINT followed by its CMD.
func inspectArgs(t *testing.T, podman, tag string) []string {
	t.Helper()
	b, err := exec.Command(podman, "image", "inspect", "--format", "{{json .Config.Entrypoint}}\n{{json .Config.Cmd}}", tag).Output()
	if err != nil {
		t.Fatalf("podman image inspect: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return append(jsonArgs(t, lines[0]), jsonArgs(t, lines[1])...)
}
