package localregion

import (
	"context"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/backoff"
)

// bouncerComponent is the name a crash of the region's PgBouncer is reported and counted under.
const bouncerComponent = "pgbouncer"

// restartable is a child the launcher did not start as a mgmtcluster.Process but restarts
// after a crash all the same: the region's PgBouncer (pgserver.Bouncer).
type restartable interface {
	// Done is closed when the current process has exited; Err says how.
	Done() <-chan struct{}
	Err() error
	// Stopped is closed once it was stopped on purpose (the region stops, or a test stopped
	// it): its exit is then no crash, and it stays down.
	Stopped() <-chan struct{}
	LogTail() string
	// Restart starts it again once it has exited, and waits until it is ready.
	Restart(ctx context.Context) error
}

// superviseRestartable restarts c whenever it exits without being stopped, as Process.Supervise
// restarts a mgmtcluster.Process: policy's backoff (reset once c has run policy.ResetAfter),
// and policy.OnCrash told of each crash, and of each failed attempt to start it again, before
// the wait.
func superviseRestartable(name string, c restartable, policy mgmtcluster.RestartPolicy) {
	go func() {
		var delays *backoff.Delays
		restarts := 0
		for {
			began := time.Now()
			select {
			case <-c.Stopped():
				return
			case <-c.Done():
			}
			select {
			case <-c.Stopped(): // Stop ended it: no crash
				return
			default:
			}
			if delays == nil || time.Since(began) >= policy.ResetAfter {
				delays = backoff.Policy{Initial: policy.Backoff, Max: policy.MaxBackoff}.Delays()
			}
			wait := delays.Next()
			restarts++
			policy.OnCrash(mgmtcluster.ProcessCrash{Name: name, Err: c.Err(), Restarts: restarts, After: wait, LogTail: c.LogTail()})
			for {
				select {
				case <-c.Stopped():
					return
				case <-time.After(wait):
				}
				err := c.Restart(context.Background())
				if err == nil {
					break
				}
				select {
				case <-c.Stopped():
					return
				default:
				}
				wait = delays.Next()
				policy.OnCrash(mgmtcluster.ProcessCrash{Name: name, Err: err, Restarts: restarts, After: wait})
			}
		}
	}()
}
