package postgres

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConnLoss is the rule for a pool whose PostgreSQL went away and came back. A restart leaves
// every connection the pool held dead, and the pool learns it only when it next sends a
// statement on one, which then fails although the database is up again. ConnLoss remembers when
// a connection was last lost: the pool pings each connection that has been idle since before
// that moment before handing it out (Guard), and a statement that met a dead connection may run
// once more (Retry). Cluster Service's store uses it too, so the rule has one owner. The zero
// value is ready to use.
type ConnLoss struct {
	at atomic.Pointer[time.Time] // when a lost connection was last seen
}

// Guard makes cfg's pool ping, before handing it out, a connection idle since before the last
// loss Seen, besides one idle for over a second (pgxpool's own rule, kept). A connection made or
// used since the loss is not pinged, so a healthy pool pays nothing.
func (l *ConnLoss) Guard(cfg *pgxpool.Config) {
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		if p.IdleDuration > time.Second {
			return true
		}
		lost := l.at.Load()
		return lost != nil && time.Since(*lost) <= p.IdleDuration
	}
}

// Seen records the loss of a connection if err says PostgreSQL could not be reached
// (Unreachable), and reports whether it did.
func (l *ConnLoss) Seen(err error) bool {
	if err == nil || !Unreachable(err) {
		return false
	}
	now := time.Now()
	l.at.Store(&now)
	return true
}

// Retry runs fn, which executes statements on the pool, and if it failed because a connection
// was lost, runs it once more, on a connection Guard has checked. A read always may; a write
// only where pgx says nothing was sent (pgconn.SafeToRetry), since a write whose connection died
// after sending may have committed. A timeout or a cancelled ctx is not retried.
func (l *ConnLoss) Retry(ctx context.Context, read bool, fn func() error) error {
	err := fn()
	if !l.Seen(err) || ctx.Err() != nil || pgconn.Timeout(err) || (!read && !pgconn.SafeToRetry(err)) {
		return err
	}
	return fn()
}
