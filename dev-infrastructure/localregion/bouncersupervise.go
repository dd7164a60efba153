package localregion

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/restart"
)

// BouncerComponent is the name of the region's PgBouncer (in front of PostgreSQL for the
// Maestro servers): a crash of it is reported and counted under it, and KillComponent takes it.
const BouncerComponent = "pgbouncer"

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

// superviseRestartable restarts c whenever it exits without being stopped, by the one restart
// loop every supervised child of the region has (restart.Keep).
func superviseRestartable(name string, c restartable, policy mgmtcluster.RestartPolicy) {
	go restart.Keep(name, &restartableRuns{c: c, policy: policy})
}

// restartableRuns is a restartable as restart.Keep sees it.
type restartableRuns struct {
	c        restartable
	policy   mgmtcluster.RestartPolicy
	restarts int // only restart.Keep's goroutine touches it
}

func (r *restartableRuns) WaitExit() (*mgmtcluster.RestartPolicy, error) {
	select {
	case <-r.c.Stopped():
		return nil, nil
	case <-r.c.Done():
	}
	select {
	case <-r.c.Stopped(): // Stop ended it: no crash
		return nil, nil
	default:
	}
	return &r.policy, r.c.Err()
}

func (r *restartableRuns) StartAgain() error        { return r.c.Restart(context.Background()) }
func (r *restartableRuns) Stopped() <-chan struct{} { return r.c.Stopped() }
func (r *restartableRuns) LogTail() string          { return r.c.LogTail() }
func (r *restartableRuns) CountRestart() int        { r.restarts++; return r.restarts }

// killBouncer crashes the bouncer as KillComponent crashes any child: SIGKILL to its process
// group, behind its supervisor's back.
func killBouncer(b *pgserver.Bouncer) (int, error) {
	select {
	case <-b.Stopped():
		return 0, fmt.Errorf("kill %s: it was stopped for good", BouncerComponent)
	default:
	}
	pid := b.PID()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return 0, fmt.Errorf("kill %s (pid %d): %w", BouncerComponent, pid, err)
	}
	return pid, nil
}

// recoverBouncer returns once the supervisor has started the bouncer killedPID was again and
// it accepts connections; ctx bounds the wait.
func recoverBouncer(ctx context.Context, b *pgserver.Bouncer, killedPID int) error {
	for {
		select {
		case <-b.Stopped():
			return fmt.Errorf("recover %s: it was stopped for good", BouncerComponent)
		default:
		}
		running := false
		select {
		case <-b.Done():
		default:
			running = true
		}
		if running && b.PID() != killedPID && b.Accepting() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("recover %s (killed pid %d): %w", BouncerComponent, killedPID, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
