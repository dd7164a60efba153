// Package reconcile is the reconcile toolkit of the backend and Cluster Service: a typed
// de-duplicating work queue with per-key backoff (Queue), the rule that settles a reconcile's
// result back onto it (Process), and the loop that follows a revisioned watch stream (Follow).
package reconcile

import (
	"sync"
	"time"
)

// Backoff is the per-key retry delay after failures: Base after the first, doubling with each
// further failure up to Max.
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// delay is the wait after a key has failed n times before (n = 0 on its first failure).
func (b Backoff) delay(n int) time.Duration {
	d := b.Base
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Queue is a de-duplicating work queue of keys: a key added several times before a worker
// takes it is reconciled once, and never by two workers at the same time (a key added while it
// is processed is queued again once its worker calls Done). Delayed adds of one key collapse to
// the earliest. The zero value is not usable; make one with NewQueue.
type Queue[K comparable] struct {
	backoff Backoff

	mu         sync.Mutex
	cond       *sync.Cond
	items      []K
	queued     map[K]bool
	processing map[K]bool
	dirty      map[K]bool
	waiting    map[K]*waiter
	failures   map[K]int
	closed     bool
}

// waiter is a pending AddAfter of one key.
type waiter struct {
	timer *time.Timer
	at    time.Time
}

// NewQueue returns an empty queue whose AddRateLimited waits as b says.
func NewQueue[K comparable](b Backoff) *Queue[K] {
	q := &Queue[K]{
		backoff:    b,
		queued:     map[K]bool{},
		processing: map[K]bool{},
		dirty:      map[K]bool{},
		waiting:    map[K]*waiter{},
		failures:   map[K]int{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues k unless it is queued already. A key being processed is queued again when its
// worker calls Done. Adds after ShutDown are ignored.
func (q *Queue[K]) Add(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(k)
}

func (q *Queue[K]) addLocked(k K) {
	if q.closed || q.queued[k] {
		return
	}
	if q.processing[k] {
		q.dirty[k] = true
		return
	}
	q.queued[k] = true
	q.items = append(q.items, k)
	q.cond.Signal()
}

// AddAfter adds k once d has passed. A key already waiting keeps the earlier of the two times,
// so repeated requeues of one key hold one timer, not one each.
func (q *Queue[K]) AddAfter(k K, d time.Duration) {
	if d <= 0 {
		q.Add(k)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	at := time.Now().Add(d)
	if w, ok := q.waiting[k]; ok {
		if !at.Before(w.at) {
			return
		}
		w.timer.Stop()
	}
	w := &waiter{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.waiting[k] != w {
			return // replaced by an earlier AddAfter, or shut down
		}
		delete(q.waiting, k)
		q.addLocked(k)
	})
	q.waiting[k] = w
}

// AddRateLimited adds k after its backoff delay and counts one more failure of k.
func (q *Queue[K]) AddRateLimited(k K) {
	q.mu.Lock()
	n := q.failures[k]
	q.failures[k] = n + 1
	q.mu.Unlock()
	q.AddAfter(k, q.backoff.delay(n))
}

// Forget clears k's failures, so its next AddRateLimited waits Backoff.Base again.
func (q *Queue[K]) Forget(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, k)
}

// NumRequeues is how many times k has failed since it was last forgotten.
func (q *Queue[K]) NumRequeues(k K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[k]
}

// Get blocks until a key is ready and marks it processing; the caller must call Done with it.
// ok is false once the queue is shut down, even if keys were still queued.
func (q *Queue[K]) Get() (k K, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return k, false
	}
	k = q.items[0]
	var zero K
	q.items[0] = zero // let the backing array drop the key
	q.items = q.items[1:]
	delete(q.queued, k)
	q.processing[k] = true
	return k, true
}

// Done ends the processing of k; if k was added meanwhile it is queued again now.
func (q *Queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, k)
	if q.dirty[k] {
		delete(q.dirty, k)
		q.addLocked(k)
	}
}

// Len is the number of keys ready for a worker (not those waiting or being processed).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

// ShutDown stops the queue: every Get returns ok=false, pending AddAfters are dropped and
// further adds are ignored.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for k, w := range q.waiting {
		w.timer.Stop()
		delete(q.waiting, k)
	}
	q.cond.Broadcast()
}
