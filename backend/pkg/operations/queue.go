package operations

import (
	"sync"
	"time"
)

// queue is a de-duplicating work queue: a key queued several times is reconciled once, and
// never by two workers at the same time (a key added while it is processed is queued again
// once that processing is done).
type queue struct {
	mu         sync.Mutex
	cond       *sync.Cond
	items      []opKey
	queued     map[opKey]bool
	processing map[opKey]bool
	dirty      map[opKey]bool
	failures   map[opKey]int
	closed     bool
}

func newQueue() *queue {
	q := &queue{queued: map[opKey]bool{}, processing: map[opKey]bool{}, dirty: map[opKey]bool{}, failures: map[opKey]int{}}
	q.cond = sync.NewCond(&q.mu)
	return q
}

func (q *queue) add(k opKey) {
	q.mu.Lock()
	defer q.mu.Unlock()
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

func (q *queue) addAfter(k opKey, d time.Duration) {
	time.AfterFunc(d, func() { q.add(k) })
}

// get blocks for the next key; ok is false once the queue is shut down.
func (q *queue) get() (opKey, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.closed {
		q.cond.Wait()
	}
	if q.closed {
		return opKey{}, false
	}
	k := q.items[0]
	q.items = q.items[1:]
	delete(q.queued, k)
	q.processing[k] = true
	return k, true
}

func (q *queue) done(k opKey) {
	q.mu.Lock()
	delete(q.processing, k)
	again := q.dirty[k]
	delete(q.dirty, k)
	q.mu.Unlock()
	if again {
		q.add(k)
	}
}

// backoff returns the next retry delay for k: 250ms doubling to 30s.
func (q *queue) backoff(k opKey) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.failures[k]
	q.failures[k] = n + 1
	d := 250 * time.Millisecond << min(n, 7)
	return min(d, 30*time.Second)
}

func (q *queue) forget(k opKey) {
	q.mu.Lock()
	delete(q.failures, k)
	q.mu.Unlock()
}

func (q *queue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items)
}

func (q *queue) shutdown() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}
