package mgmtcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/openhcp/openhcp/internal/restart"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/internal/spawn"
)

// ProcSpec describes one child process of the region.
type ProcSpec struct {
	// Name identifies the process in logs and errors; its log file is <LogDir>/<Name>.log.
	Name string
	Path string
	Args []string
	// Env is appended to the launcher's own environment.
	Env []string
	Dir string
	// LogDir receives <Name>.log with the child's stdout and stderr.
	LogDir string
	// LogMaxBytes, when positive, bounds the log: past it <Name>.log becomes <Name>.log.1
	// (replacing the one before) and a new <Name>.log begins, so the two hold at most twice
	// this. For a child whose output someone else drives (a hosted kube-apiserver logs a line
	// for each failed call of its customer's webhooks). The output then passes through a pipe
	// of the launcher's.
	LogMaxBytes int64
	// Credential, when set, runs the child as another user (postgres refuses to run as root).
	Credential *syscall.Credential
	// Start, when set, starts the prepared command instead of cmd.Start: to start it inside a
	// network namespace (netns.NS.Start).
	Start func(*exec.Cmd) error
}

// Process is a running child. It is started in its own process group so that Stop ends the
// whole tree it may have spawned, and nothing else. With a RestartPolicy (Supervise) a child that
// exits without Stop or Kill is started again, as a kubelet restarts a crashed container.
type Process struct {
	Spec    ProcSpec
	LogPath string

	done    chan struct{} // closed when the process has exited for good
	stopped chan struct{} // closed by Stop or Kill: ends a restart backoff at once

	mu       sync.Mutex
	cmd      *exec.Cmd
	log      io.Closer
	err      error
	stopping bool
	policy   *RestartPolicy
	restarts int
}

// RestartPolicy and ProcessCrash are the one restart loop's (internal/restart), which the
// make deploy node's components share.
type (
	RestartPolicy = restart.Policy
	ProcessCrash  = restart.Crash
)

// DefaultRestartPolicy is restart.Default: 1 s doubling to 30 s, reset after a minute of
// running.
func DefaultRestartPolicy(onCrash func(ProcessCrash)) RestartPolicy { return restart.Default(onCrash) }

// StartProcess starts spec and returns at once; use a Wait* helper to wait for readiness.
func StartProcess(ctx context.Context, spec ProcSpec) (*Process, error) {
	p := &Process{Spec: spec, done: make(chan struct{}), stopped: make(chan struct{})}
	p.LogPath = filepath.Join(spec.LogDir, spec.Name+".log")
	cmd, lf, err := p.start()
	if err != nil {
		return nil, err
	}
	p.cmd, p.log = cmd, lf
	go p.run()
	return p, nil
}

// start execs the child once, its output appended to its log; the returned closer closes
// the log once the child has exited.
func (p *Process) start() (*exec.Cmd, io.Closer, error) {
	spec := p.Spec
	lf, path, err := OpenLog(spec.LogDir, spec.Name+".log")
	if err != nil {
		return nil, nil, fmt.Errorf("open log for %s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.Stdout = lf
	cmd.Stderr = lf
	var pr, pw *os.File
	if spec.LogMaxBytes > 0 {
		if pr, pw, err = os.Pipe(); err != nil {
			lf.Close()
			return nil, nil, fmt.Errorf("log pipe for %s: %w", spec.Name, err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: spec.Credential}
	// Forked from the process's one forking thread: the parent-death signal follows the thread
	// that forks, and any other thread may end while the child runs (internal/spawn). A spec's
	// own Start forks on its own thread (a namespace's), which must outlive the child.
	start := func() error { return spawn.Start(cmd) }
	if spec.Start != nil {
		start = func() error { return spec.Start(cmd) }
	}
	if err := start(); err != nil {
		lf.Close()
		if pr != nil {
			pr.Close()
			pw.Close()
		}
		return nil, nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	if pr == nil {
		return cmd, lf, nil
	}
	pw.Close() // the child holds its own copy
	return cmd, startCappedLog(pr, lf, path, spec.LogMaxBytes), nil
}

// cappedLog copies a child's output from a pipe into its log file, and when the file reaches
// max bytes renames it to <path>.1 (replacing the one before) and begins a new one.
type cappedLog struct {
	r    *os.File
	f    *os.File // nil when a new file could not be opened: output is dropped
	path string
	max  int64
	size int64
	done chan struct{}
}

func startCappedLog(r, f *os.File, path string, max int64) *cappedLog {
	c := &cappedLog{r: r, f: f, path: path, max: max, done: make(chan struct{})}
	if fi, err := f.Stat(); err == nil {
		c.size = fi.Size()
	}
	go c.copy()
	return c
}

func (c *cappedLog) copy() {
	defer close(c.done)
	buf := make([]byte, 32<<10)
	for {
		n, err := c.r.Read(buf)
		c.write(buf[:n])
		if err != nil {
			return
		}
	}
}

func (c *cappedLog) write(b []byte) {
	for len(b) > 0 {
		if c.size >= c.max {
			c.rotate()
		}
		n := min(int64(len(b)), c.max-c.size)
		if c.f != nil {
			_, _ = c.f.Write(b[:n])
		}
		c.size += n
		b = b[n:]
	}
}

func (c *cappedLog) rotate() {
	c.size = 0
	if c.f != nil {
		c.f.Close()
		c.f = nil
	}
	_ = os.Rename(c.path, c.path+".1")
	f, err := os.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, LogFileMode)
	if err != nil {
		return
	}
	_ = f.Chmod(LogFileMode)
	c.f = f
}

// Close waits for the child's last output (the pipe ends when every holder of its write end
// has exited; a descendant that keeps it gets 5 s) and closes the log.
func (c *cappedLog) Close() error {
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
	}
	c.r.Close()
	<-c.done
	if c.f != nil {
		return c.f.Close()
	}
	return nil
}

// run waits for the child and, while a RestartPolicy says so, starts it again after each
// unexpected exit (restart.Keep). done closes when it has exited for good.
func (p *Process) run() {
	restart.Keep(p.Spec.Name, processRuns{p})
	close(p.done)
}

// Supervise makes the process restart after an unexpected exit, as policy says. Stop and Kill
// still end it for good.
func (p *Process) Supervise(policy RestartPolicy) {
	p.mu.Lock()
	p.policy = &policy
	p.mu.Unlock()
}

// Restarts is how many times a supervised process was started again after a crash.
func (p *Process) Restarts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// Log files and their directory: logs carry cluster names, identities and sometimes request
// bodies, so only the owner and its group (the operators) may read them; others get nothing.
const (
	LogDirMode  = 0o750
	LogFileMode = 0o640
)

// OpenLog opens dir/name for appending with LogFileMode, creating dir with LogDirMode. Both
// modes are set on existing files and directories too, so a state dir from an older launcher
// is tightened rather than kept as it was.
func OpenLog(dir, name string) (*os.File, string, error) {
	if err := os.MkdirAll(dir, LogDirMode); err != nil {
		return nil, "", fmt.Errorf("create log dir %s: %w", dir, err)
	}
	if err := os.Chmod(dir, LogDirMode); err != nil {
		return nil, "", fmt.Errorf("set the mode of log dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, LogFileMode)
	if err != nil {
		return nil, "", err
	}
	if err := f.Chmod(LogFileMode); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("set the mode of %s: %w", path, err)
	}
	return f, path, nil
}

// PID is the child's process ID (the current one, for a supervised child that was restarted).
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Done is closed when the process has exited for good.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the process ended for good, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stopping reports whether Stop or Kill was called, so an exit is expected rather than a crash.
func (p *Process) Stopping() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopping
}

// markStopping records that the process is to end for good and returns its process group.
func (p *Process) markStopping() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stopping {
		p.stopping = true
		close(p.stopped)
	}
	return p.cmd.Process.Pid
}

// Stop sends SIGTERM to the process group, and SIGKILL after grace.
func (p *Process) Stop(grace time.Duration) {
	pid := p.markStopping()
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process group at once with SIGKILL, as a crash would, and for good.
func (p *Process) Kill() {
	pid := p.markStopping()
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-p.done
}

// LogTail returns the last n bytes of the process log, for crash reports.
func (p *Process) LogTail(n int64) string {
	return FileTail(p.LogPath, n)
}

// FileTail returns the last n bytes of a file, or a note saying why it could not be read.
func FileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot stat %s: %v)", path, err)
	}
	if st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot seek %s: %v)", path, err)
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// FreePorts returns n distinct free ports.
func FreePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// ErrExited is returned by the Wait helpers when the process died while being waited on.
var ErrExited = errors.New("process exited")

// WaitFor polls check until it succeeds, the process exits, or timeout passes. The error names
// the process and carries the tail of its log.
func (p *Process) WaitFor(ctx context.Context, timeout time.Duration, what string, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s: %w (%v) while waiting for %s; log tail:\n%s", p.Spec.Name, ErrExited, err, what, p.LogTail(3000))
		}
		if last = check(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s not ready after %s: %v; log tail:\n%s", p.Spec.Name, what, timeout, last, p.LogTail(3000))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TCPReady succeeds once addr accepts connections.
func TCPReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// HTTPReady succeeds once url answers 200 using client (nil means http.DefaultClient).
func HTTPReady(client *http.Client, url string) func(context.Context) error {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, bytes.TrimSpace(body))
		}
		return nil
	}
}
