package mgmtcluster

import (
	"syscall"

	"github.com/openhcp/openhcp/internal/restart"
)

// processRuns is a Process as restart.Keep sees it.
type processRuns struct{ p *Process }

func (r processRuns) WaitExit() (*restart.Policy, error) {
	p := r.p
	p.mu.Lock()
	cmd, lf := p.cmd, p.log
	p.mu.Unlock()
	err := cmd.Wait()
	lf.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err = err
	if p.stopping {
		return nil, err
	}
	return p.policy, err
}

func (r processRuns) StartAgain() error {
	p := r.p
	next, lf, err := p.start()
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd, p.log = next, lf
	stopping := p.stopping
	p.mu.Unlock()
	if stopping {
		// Stop came while the child was being started: it ends with the rest.
		_ = syscall.Kill(-next.Process.Pid, syscall.SIGKILL)
	}
	return nil
}

func (r processRuns) Stopped() <-chan struct{} { return r.p.stopped }

func (r processRuns) CountRestart() int {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.restarts++
	return r.p.restarts
}

func (r processRuns) LogTail() string { return r.p.LogTail(4000) }
