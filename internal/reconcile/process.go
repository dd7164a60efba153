package reconcile

import (
	"context"
	"time"
)

// Outcome is what became of one reconcile, as the reconcile metrics label it.
type Outcome string

const (
	// OutcomeOK: the reconcile is done; the key waits for its next event or resync.
	OutcomeOK Outcome = "ok"
	// OutcomeRequeue: the reconcile asked to look at the key again after a delay.
	OutcomeRequeue Outcome = "requeue"
	// OutcomeError: the reconcile failed; the key is retried after its backoff.
	OutcomeError Outcome = "error"
)

// Func reconciles one key. It returns when to look at the key again even without an event
// (0: only on the next event or resync), or an error to retry with backoff.
type Func[K comparable] func(ctx context.Context, key K) (time.Duration, error)

// Result is what Process reports of one reconcile.
type Result[K comparable] struct {
	Key     K
	Outcome Outcome
	// Err is the reconcile's error. It is set with OutcomeError, and may be set with the other
	// outcomes when ctx had ended: a stopping worker's failure is not retried.
	Err error
	// Retries is how many times Key had failed before, without a success in between.
	Retries int
	// Took is how long the reconcile ran.
	Took time.Duration
}

// Process takes the next key from q, reconciles it and settles the result on q:
//   - an error is retried after the key's backoff (AddRateLimited), unless ctx has ended: the
//     worker is stopping, and the next start reconciles everything anyway;
//   - a requested delay adds the key again after it, and forgets the key's failures;
//   - otherwise the key's failures are forgotten and it waits for its next event.
//
// report, if not nil, is told the result. Process returns false, without reconciling
// anything, once q is shut down.
func Process[K comparable](ctx context.Context, q *Queue[K], reconcile Func[K], report func(Result[K])) bool {
	key, ok := q.Get()
	if !ok {
		return false
	}
	start := time.Now()
	after, err := reconcile(ctx, key)
	r := Result[K]{Key: key, Err: err, Retries: q.NumRequeues(key), Took: time.Since(start)}
	switch {
	case err != nil && ctx.Err() == nil:
		r.Outcome = OutcomeError
		q.AddRateLimited(key)
	case after > 0:
		r.Outcome = OutcomeRequeue
		q.Forget(key)
		q.AddAfter(key, after)
	default:
		r.Outcome = OutcomeOK
		q.Forget(key)
	}
	q.Done(key)
	if report != nil {
		report(r)
	}
	return true
}
