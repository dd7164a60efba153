// Package backoff owns the region's one retry delay: exponential, capped and jittered, built on
// apimachinery's wait.Backoff, and the two loops that wait it out: Retry (a bounded number of
// tries) and Reconnect (a session kept up until its context ends).
package backoff

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Jitter spreads every delay over [d, d·(1+Jitter)], so that clients that failed together (a
// restarted Maestro or PostgreSQL drops all of them at once) do not come back together.
const Jitter = 0.5

// Policy is an exponential backoff: Initial after the first failure, doubling after each
// further one up to Max. Jitter only lengthens a delay, and never past Max: Initial is the
// shortest wait and Max the longest, as they were before jitter was added.
type Policy struct {
	Initial time.Duration
	Max     time.Duration
}

// backoff is p as a wait.Backoff. Its cap leaves room for the jitter under Max.
func (p Policy) backoff() wait.Backoff {
	return wait.Backoff{
		Duration: p.Initial,
		Factor:   2,
		Jitter:   Jitter,
		Steps:    math.MaxInt32,
		Cap:      time.Duration(float64(p.Max) / (1 + Jitter)),
	}
}

// Delays is the sequence of waits of a Policy. The zero value is not usable; make one with
// Policy.Delays. It is not safe for concurrent use.
type Delays struct {
	p Policy
	b wait.Backoff
}

// Delays starts p's sequence of waits.
func (p Policy) Delays() *Delays { return &Delays{p: p, b: p.backoff()} }

// Next is the wait after one more failure.
func (d *Delays) Next() time.Duration { return min(d.b.Step(), d.p.Max) }

// Reset starts the sequence over: the next wait is about Initial again.
func (d *Delays) Reset() { d.b = d.p.backoff() }

// After is the wait after the n-th failure in a row (n ≥ 1), for a caller that keeps the count
// rather than a Delays (a work queue's per-key failures, a count kept in a document).
func (p Policy) After(n int) time.Duration {
	b := p.backoff()
	b.Jitter = 0
	for i := 1; i < n && b.Steps > 0; i++ {
		b.Step()
	}
	return min(wait.Jitter(b.Duration, Jitter), p.Max)
}

// Nominal is the wait after the n-th failure in a row (n ≥ 1) without jitter: Initial doubled
// n-1 times, never over Max. For a rule whose waits must be the same wherever it is evaluated
// (a decision a test or another replica must be able to predict).
func (p Policy) Nominal(n int) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	return min(d, p.Max)
}

// Retry calls f until it returns nil, returns an error that retriable refuses, or has been
// called tries times, waiting p's delays in between; it returns f's last error. When ctx ends
// during a wait, the error wraps ctx.Err() and names f's last error. (Not
// wait.ExponentialBackoffWithContext: a wait.Backoff that reaches its Cap drops its Steps to 0,
// which ends that loop after fewer tries than asked.)
func Retry(ctx context.Context, p Policy, tries int, retriable func(error) bool, f func(ctx context.Context) error) error {
	delays := p.Delays()
	for try := 1; ; try++ {
		err := f(ctx)
		if err == nil || try >= tries || !retriable(err) {
			return err
		}
		if !Sleep(ctx, delays.Next()) {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
	}
}

// Reconnect runs session again and again until ctx ends: a watch, a LISTEN, anything that holds
// a connection until it breaks. After each session it calls onRetry (when not nil) with the
// session's error and the wait, and waits. A session that reports progress (it connected, or
// received something) starts the delays over from Initial.
func Reconnect(ctx context.Context, p Policy, session func(ctx context.Context) (progressed bool, err error), onRetry func(err error, wait time.Duration)) {
	delays := p.Delays()
	for ctx.Err() == nil {
		progressed, err := session(ctx)
		if ctx.Err() != nil {
			return
		}
		if progressed {
			delays.Reset()
		}
		d := delays.Next()
		if onRetry != nil {
			onRetry(err, d)
		}
		if !Sleep(ctx, d) {
			return
		}
	}
}

// Sleep waits d, or less if ctx ends first; it reports whether the wait was full.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
