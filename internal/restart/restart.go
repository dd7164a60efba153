// Package restart holds the one restart loop of the processes our tooling supervises (the local
// region's children, the make deploy node's components): a child that exits without being
// stopped is started again after a jittered, doubling delay, as a kubelet restarts a crashed
// container, and each crash is reported.
package restart

import (
	"time"

	"github.com/openhcp/openhcp/internal/backoff"
)

// Policy restarts a crashed child with exponential backoff: Backoff after the first crash,
// doubled after each further one up to MaxBackoff, and back to Backoff once the child has run
// ResetAfter without crashing; each wait is jittered (internal/backoff: never under Backoff nor
// over MaxBackoff). OnCrash, when set, is told of every crash before the wait.
type Policy struct {
	Backoff, MaxBackoff, ResetAfter time.Duration
	OnCrash                         func(Crash)
}

// Default is the kubelet's shape at a laptop's scale: 1 s doubling to 30 s, reset after a minute
// of running.
func Default(onCrash func(Crash)) Policy {
	return Policy{Backoff: time.Second, MaxBackoff: 30 * time.Second, ResetAfter: time.Minute, OnCrash: onCrash}
}

// Crash is one unexpected exit of a supervised child, or a failed attempt to start it again.
type Crash struct {
	Name string
	Err  error
	// Restarts counts the restarts so far, the one that follows included.
	Restarts int
	// After is how long the supervisor waits before it starts the child again.
	After   time.Duration
	LogTail string
}

// Child is what Keep starts again after each crash.
type Child interface {
	// WaitExit returns once the current run has exited, with how it ended and the policy to
	// restart it by: nil when that exit is final (it was stopped on purpose, or is not
	// supervised).
	WaitExit() (*Policy, error)
	// StartAgain runs it again after a crash.
	StartAgain() error
	// Stopped is closed once it is stopped on purpose: a wait to start it again ends there.
	Stopped() <-chan struct{}
	// CountRestart counts one more restart and returns how many there have been.
	CountRestart() int
	// LogTail is the end of its log, for the crash report.
	LogTail() string
}

// Keep waits for c's exits and starts it again after each that is not final: after the policy's
// backoff (begun anew once c has run ResetAfter), with OnCrash told of each crash, and of each
// failed attempt to start it again, before the wait. It returns once an exit is final, or c is
// stopped while it waits.
func Keep(name string, c Child) {
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
		policy.report(Crash{Name: name, Err: err, Restarts: restarts, After: wait, LogTail: c.LogTail()})
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
			policy.report(Crash{Name: name, Err: err, Restarts: restarts, After: wait})
		}
	}
}

func (p *Policy) report(c Crash) {
	if p.OnCrash != nil {
		p.OnCrash(c)
	}
}
