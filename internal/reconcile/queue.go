// Package reconcile is the reconcile toolkit of the backend and Cluster Service: a typed
// de-duplicating work queue with per-key backoff (Queue), the rule that settles a reconcile's
// result back onto it (Process), and the loop that follows a revisioned watch stream (Follow).
package reconcile

import (
	"slices"
	"sync"
	"time"

	"github.com/openhcp/openhcp/internal/backoff"
)

// Backoff is the per-key retry delay after failures: Base after the first, doubling with each
// further failure up to Max, jittered (internal/backoff: never under Base nor over Max).
type Backoff struct {
	Base time.Duration
	Max  time.Duration
}

// delay is the wait after a key has failed n times before (n = 0 on its first failure).
func (b Backoff) delay(n int) time.Duration {
	return backoff.Policy{Initial: b.Base, Max: b.Max}.After(n + 1)
}

// Queue is a de-duplicating work queue of keys: a key added several times before a worker
// takes it is reconciled once, and never by two workers at the same time (a key added while it
// is processed is queued again once its worker calls Done). Delayed adds of one key collapse to
// the earliest. The zero value is not usable; make one with NewQueue.
//
// Keys wait in one of two lanes, each first in, first out. AddUrgent puts a key in the urgent
// lane, which Get serves first; Add, AddAfter and AddRateLimited use the normal lane. So that
// a steady flow of urgent keys cannot starve the normal lane, Get takes a normal key after
// UrgentBurst urgent ones in a row whenever one is waiting.
type Queue[K comparable] struct {
	backoff Backoff

	mu     sync.Mutex
	cond   *sync.Cond
	items  []K // the normal lane
	urgent []K // the urgent lane
	// queued says which lane a waiting key is in.
	queued     map[K]lane
	processing map[K]bool
	// dirty: added while processing, queued again in that lane at Done.
	dirty    map[K]lane
	waiting  map[K]*waiter
	failures map[K]int
	// burst counts the urgent keys Get has handed out in a row while normal ones waited.
	burst  int
	closed bool
}

// lane is where a queued key waits.
type lane uint8

const (
	laneNormal lane = iota + 1
	laneUrgent
)

// UrgentBurst is how many urgent keys Get hands out in a row before it takes a waiting normal
// key.
const UrgentBurst = 8

// waiter is a pending AddAfter of one key.
type waiter struct {
	timer *time.Timer
	at    time.Time
}

// NewQueue returns an empty queue whose AddRateLimited waits as b says.
func NewQueue[K comparable](b Backoff) *Queue[K] {
	q := &Queue[K]{
		backoff:    b,
		queued:     map[K]lane{},
		processing: map[K]bool{},
		dirty:      map[K]lane{},
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
	q.addLocked(k, laneNormal)
}

// AddUrgent queues k in the urgent lane, which Get serves before the normal one: a key waiting
// in the normal lane moves there, and a key being processed is queued there again at Done.
// Adds after ShutDown are ignored.
func (q *Queue[K]) AddUrgent(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(k, laneUrgent)
}

// addLocked queues k in l, or moves it up to l if it waits in a lower lane.
func (q *Queue[K]) addLocked(k K, l lane) {
	if q.closed {
		return
	}
	if q.processing[k] {
		q.dirty[k] = max(q.dirty[k], l)
		return
	}
	switch q.queued[k] {
	case laneUrgent:
		return
	case laneNormal:
		if l == laneNormal {
			return
		}
		i := slices.Index(q.items, k)
		q.items = slices.Delete(q.items, i, i+1)
	}
	q.queued[k] = l
	if l == laneUrgent {
		q.urgent = append(q.urgent, k)
	} else {
		q.items = append(q.items, k)
	}
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
		q.addLocked(k, laneNormal)
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
	for len(q.items)+len(q.urgent) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return k, false
	}
	switch {
	case len(q.urgent) > 0 && len(q.items) == 0:
		q.burst = 0 // nothing normal waits
		k, q.urgent = pop(q.urgent)
	case len(q.urgent) > 0 && q.burst < UrgentBurst:
		q.burst++
		k, q.urgent = pop(q.urgent)
	default:
		q.burst = 0
		k, q.items = pop(q.items)
	}
	delete(q.queued, k)
	q.processing[k] = true
	return k, true
}

// pop takes the first key of a lane.
func pop[K comparable](lane []K) (K, []K) {
	k := lane[0]
	var zero K
	lane[0] = zero // let the backing array drop the key
	return k, lane[1:]
}

// Done ends the processing of k; if k was added meanwhile it is queued again now.
func (q *Queue[K]) Done(k K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, k)
	if l, ok := q.dirty[k]; ok {
		delete(q.dirty, k)
		q.addLocked(k, l)
	}
}

// Len is the number of keys ready for a worker (not those waiting or being processed).
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + len(q.urgent)
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
