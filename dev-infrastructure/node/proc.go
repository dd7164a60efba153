package node

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/internal/restart"
)

// The node's processes are restarted after a crash, as a machine's service manager restarts its
// kubelet and the kubelet its static pods, by the same loop and policy as the local region's
// children (internal/restart).

// RestartPolicy is how the node restarts a crashed process (its OnCrash is set by the node).
type RestartPolicy = restart.Policy

// DefaultRestartPolicy is the local region's: 1 s doubling to 30 s, reset after a minute of
// running.
var DefaultRestartPolicy = restart.Default(nil)

// Crash is one unexpected exit of a supervised process of the node (Name is the component's),
// or a failed attempt to start it again.
type Crash = restart.Crash

// proc is one process of the node in a process group of its own (so stop ends whatever it
// spawned, and nothing else). Once supervised, an exit that stop did not ask for is a crash: it
// is reported and the process is started again (a new command from the same spec) after the
// policy's delay. done closes once it has exited for good.
type proc struct {
	name    string
	command func() *exec.Cmd // a fresh command, output not yet set
	logPath string           // its output is appended here

	done    chan struct{} // closed once it has exited for good
	stopped chan struct{} // closed by stop: ends a restart delay at once

	mu       sync.Mutex
	cmd      *exec.Cmd
	exited   bool // cmd has exited (and is not yet replaced)
	err      error
	stopping bool
	policy   *RestartPolicy // its OnCrash set: supervise
	restarts int
	starts   int // processes started again by the supervisor
}

// startProc starts name's first process (command's, output appended to logPath) and watches it.
func startProc(name, logPath string, command func() *exec.Cmd) (*proc, error) {
	p := &proc{name: name, command: command, logPath: logPath, done: make(chan struct{}), stopped: make(chan struct{})}
	cmd, err := p.exec()
	if err != nil {
		return nil, err
	}
	p.cmd = cmd
	go p.run()
	return p, nil
}

// exec starts one process of p in a new process group, its output appended to its log.
func (p *proc) exec() (*exec.Cmd, error) {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", p.name, err)
	}
	defer logf.Close() // the child holds its own copy
	cmd := p.command()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", p.name, err)
	}
	return cmd, nil
}

// supervise makes p restart after each unexpected exit from now on, as policy says, telling
// onCrash of each crash first. stop still ends it for good.
func (p *proc) supervise(policy RestartPolicy, onCrash func(Crash)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	policy.OnCrash = onCrash
	p.policy = &policy
}

// run waits for p's process and, while p is supervised and not stopped, starts it again after
// each exit (restart.Keep).
func (p *proc) run() {
	restart.Keep(p.name, procRuns{p})
	close(p.done)
}

// procRuns is a proc as restart.Keep sees it.
type procRuns struct{ p *proc }

func (r procRuns) WaitExit() (*RestartPolicy, error) {
	p := r.p
	p.mu.Lock()
	cmd := p.cmd
	p.mu.Unlock()
	err := cmd.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err, p.exited = err, true
	if p.stopping || p.policy == nil {
		return nil, err
	}
	return p.policy, exitError(err)
}

func (r procRuns) StartAgain() error {
	p := r.p
	cmd, err := p.exec()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd, p.exited = cmd, false
	p.starts++
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		// stop came while it was being started: it ends with the rest.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return nil
}

func (r procRuns) Stopped() <-chan struct{} { return r.p.stopped }

func (r procRuns) CountRestart() int {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.restarts++
	return r.p.restarts
}

func (r procRuns) LogTail() string { return fileTail(r.p.logPath, 3000) }

// exitError names an exit without an error (a clean exit is a crash too, for a process meant
// to run until stopped).
func exitError(err error) error {
	if err == nil {
		return fmt.Errorf("exited with status 0")
	}
	return err
}

// pid is the PID of p's current process, the leader of its process group.
func (p *proc) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// supervised reports whether p is restarted after a crash.
func (p *proc) supervised() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.policy != nil
}

// killIfRunning sends SIGKILL to p's current process, unless it has exited (its PID may belong
// to another process by now); it returns that PID and how many times p was started again so far.
func (p *proc) killIfRunning() (pid, starts int, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		err = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
	}
	return p.cmd.Process.Pid, p.starts, err
}

// startCount is how many times p's supervisor started it again.
func (p *proc) startCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// restartCount is how many times p was started again after a crash.
func (p *proc) restartCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.restarts
}

// running reports whether p has not exited for good.
func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig to p's current process group, unless that process has exited (its PID may
// belong to another process by now).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.exited {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// stop ends p for good: no restart from now on, SIGTERM to its process group, SIGKILL after 10 s.
func (p *proc) stop() {
	p.mu.Lock()
	if !p.stopping {
		p.stopping = true
		close(p.stopped)
	}
	p.mu.Unlock()
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// fileTail is the last n bytes of a file, or a note saying why it could not be read.
func fileTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return fmt.Sprintf("(cannot seek %s: %v)", path, err)
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}
