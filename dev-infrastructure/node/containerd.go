package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Containerd is Debian's containerd run with the node's own config, root, state and sockets under
// one directory, inside the node's network namespace.
type Containerd struct {
	Dir    string // owns config.toml, root/, state/, run/ and containerd.log
	Socket string
	runDir string // the sockets' short directory (unix socket paths are limited to 104 bytes)
	ns     *Netns
	proc   *proc
}

// containerdConfig is the node's containerd configuration. restrict_oom_score_adj is mandatory on
// this machine: CAP_SYS_RESOURCE is missing from every process's bounding set, so containerd may
// not lower a container's OOM score below its own. The sandbox image is built locally, never pulled.
const containerdConfig = `version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.internal.v1.opt", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  enable_selinux = false
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = %[7]q
    max_conf_num = 1
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
`

// StartContainerd writes the config under dir and starts containerd inside ns, returning once its
// socket answers. sandboxImage is the pod sandbox (pause) image's reference; the caller imports
// it (it is built locally, never pulled).
func StartContainerd(ctx context.Context, ns *Netns, dir, sandboxImage string) (*Containerd, error) {
	runDir, err := os.MkdirTemp("", "ohcp-ctrd-")
	if err != nil {
		return nil, fmt.Errorf("containerd socket directory: %w", err)
	}
	c := &Containerd{Dir: dir, Socket: filepath.Join(runDir, "containerd.sock"), runDir: runDir, ns: ns}
	for _, d := range []string{"root", "state", "run", "cni/net.d"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			_ = os.RemoveAll(runDir)
			return nil, fmt.Errorf("containerd directory: %w", err)
		}
	}
	cfg := fmt.Sprintf(containerdConfig, filepath.Join(dir, "root"), filepath.Join(dir, "state"), c.Socket,
		c.Socket+".ttrpc", sandboxImage, filepath.Join(dir, "run", "runc"), filepath.Join(dir, "cni", "net.d"))
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("containerd config: %w", err)
	}
	if err := c.start(ctx); err != nil {
		return nil, errors.Join(err, os.RemoveAll(runDir))
	}
	return c, nil
}

// start runs containerd with the config under Dir and returns once its socket answers; the log
// is appended to, so a restart keeps what came before.
func (c *Containerd) start(ctx context.Context) error {
	logPath := filepath.Join(c.Dir, "containerd.log")
	// Not tied to ctx: Stop ends it by PID.
	p, err := startProc("containerd", logPath, func() *exec.Cmd {
		return c.ns.Command(context.WithoutCancel(ctx), "containerd", "--config", filepath.Join(c.Dir, "config.toml"))
	})
	if err != nil {
		return err
	}
	for {
		if err := exec.CommandContext(ctx, "ctr", "--address", c.Socket, "version").Run(); err == nil {
			c.proc = p
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("containerd exited before answering: %v: %s", p.err, fileTail(logPath, 2000))
		case <-ctx.Done():
			p.stop()
			return errors.Join(fmt.Errorf("waiting for containerd: %w", ctx.Err()), unmountUnder(c.Dir))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Restart crashes containerd and starts it again, as a node's containerd dying and its service
// manager restarting it would: SIGKILL to containerd's own PID only (each container's shim runs
// in a process group of its own, so the containers keep running), then containerd again with the
// same config, root, state and socket. It returns the PID it killed once the new containerd
// answers; the kubelet reconnects by itself.
func (c *Containerd) Restart(ctx context.Context) (int, error) {
	if c.proc == nil {
		return 0, errors.New("restart containerd: it is not running")
	}
	old := c.proc
	pid, starts, err := old.killIfRunning()
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("kill containerd (pid %d): %w", pid, err)
	}
	if old.supervised() {
		// Its supervisor starts it again after the policy's delay: wait for that one to answer.
		for {
			if old.startCount() > starts {
				if _, err := c.Ctr(ctx, "version"); err == nil {
					return pid, nil
				}
			}
			select {
			case <-old.done:
				return pid, fmt.Errorf("containerd (pid %d) was stopped instead of restarted", pid)
			case <-ctx.Done():
				return pid, fmt.Errorf("containerd (pid %d) was not started again: %w", pid, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	select {
	case <-old.done:
	case <-ctx.Done():
		return pid, fmt.Errorf("containerd (pid %d) did not exit: %w", pid, ctx.Err())
	}
	c.proc = nil
	if err := c.start(ctx); err != nil {
		return pid, fmt.Errorf("restart containerd: %w", err)
	}
	return pid, nil
}

// supervise makes containerd restart after each crash from now on, reported as the node's
// other components' are (Node.Start calls it once the node is up).
func (c *Containerd) supervise(policy RestartPolicy, onCrash func(Crash)) {
	if c.proc != nil {
		c.proc.supervise(policy, onCrash)
	}
}

// TaskPID is the PID of a container's main process (its containerd task in the CRI's k8s.io
// namespace), by container ID.
func (c *Containerd) TaskPID(ctx context.Context, containerID string) (int, error) {
	out, err := c.Ctr(ctx, "-n", "k8s.io", "tasks", "ls")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == containerID {
			pid, err := strconv.Atoi(f[1])
			if err != nil || pid <= 0 {
				return 0, fmt.Errorf("task %s: PID %q", containerID, f[1])
			}
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no task %s in the node's containerd", containerID)
}

// Ctr runs ctr against this containerd.
func (c *Containerd) Ctr(ctx context.Context, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", c.Socket}, args...)...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// Stop ends containerd's process group by its PID (SIGTERM, then SIGKILL after 10 s) and unmounts
// whatever is still mounted under its directory.
func (c *Containerd) Stop() error {
	if c.proc != nil {
		c.proc.stop()
		c.proc = nil
	}
	return errors.Join(unmountUnder(c.Dir), os.RemoveAll(c.runDir))
}

// unmountUnder lazily unmounts every mount point below dir, deepest first.
func unmountUnder(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading mounts: %w", err)
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	var errs []error
	for i := len(points) - 1; i >= 0; i-- {
		if err := syscall.Unmount(points[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", points[i], err))
		}
	}
	return errors.Join(errs...)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
