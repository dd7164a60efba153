package mgmtcluster

import (
	"syscall"
	"time"

	"github.com/openhcp/openhcp/internal/backoff"
)

// Restartable is a child that KeepRestarting starts again after each crash: a Process, or a
// child another package starts its own way (the local region's PgBouncer).
type Restartable interface {
	// WaitExit returns once the current run has exited, with how it ended and the policy to
	// restart it by: nil when that exit is final (it was stopped on purpose, or is not
	// supervised).
	WaitExit() (*RestartPolicy, error)
	// StartAgain runs it again after a crash.
	StartAgain() error
	// Stopped is closed once it is stopped on purpose: a wait to start it again ends there.
	Stopped() <-chan struct{}
	// CountRestart counts one more restart and returns how many there have been.
	CountRestart() int
	// LogTail is the end of its log, for the crash report.
	LogTail() string
}

// KeepRestarting is the one restart loop of the region's children. It waits for c's exits and
// starts it again after each that is not final: after the policy's backoff (begun anew once c
// has run ResetAfter), with OnCrash told of each crash, and of each failed attempt to start it
// again, before the wait. It returns once an exit is final, or c is stopped while it waits.
func KeepRestarting(name string, c Restartable) {
	var delays *backoff.Delays
	for {
		began := time.Now()
		policy, err := c.WaitExit()
		if policy == nil {
			return
		}
		if delays == nil || time.Since(began) >= policy.ResetAfter {
			delays = backoff.Policy{Initial: policy.Backoff, Max: policy.MaxBackoff}.Delays()
		}
		wait := delays.Next()
		restarts := c.CountRestart()
		policy.report(ProcessCrash{Name: name, Err: err, Restarts: restarts, After: wait, LogTail: c.LogTail()})
		for {
			select {
			case <-c.Stopped():
				return
			case <-time.After(wait):
			}
			err := c.StartAgain()
			if err == nil {
				break
			}
			select {
			case <-c.Stopped(): // it failed because it was stopped meanwhile: no crash
				return
			default:
			}
			wait = delays.Next()
			policy.report(ProcessCrash{Name: name, Err: err, Restarts: restarts, After: wait})
		}
	}
}

func (rp *RestartPolicy) report(c ProcessCrash) {
	if rp.OnCrash != nil {
		rp.OnCrash(c)
	}
}

// processRuns is a Process as KeepRestarting sees it.
type processRuns struct{ p *Process }

func (r processRuns) WaitExit() (*RestartPolicy, error) {
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
