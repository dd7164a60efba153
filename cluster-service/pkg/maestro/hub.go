package maestro

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"
)

// hub fans one consumer's work events out to every Watch caller.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

func newHub() *hub { return &hub{subs: map[*subscriber]struct{}{}} }

func (h *hub) subscribe() *subscriber {
	s := &subscriber{pending: map[string]WorkEvent{}, known: map[string]bool{}, signal: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s
}

func (h *hub) unsubscribe(s *subscriber) {
	h.mu.Lock()
	delete(h.subs, s)
	h.mu.Unlock()
}

// publish never blocks: each subscriber queues the event.
func (h *hub) publish(t watch.EventType, w *workv1.ManifestWork) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.offer(t, w)
	}
}

// subscriber is one Watch caller's queue. It holds at most one pending event per work, the
// latest, in the order the works first became pending; memory is bounded by the number of works.
type subscriber struct {
	mu      sync.Mutex
	pending map[string]WorkEvent
	order   []string
	// known is the set of works the reader has been told exist (or will be, by a pending
	// event), which decides between Added and Modified.
	known  map[string]bool
	signal chan struct{}
}

func (s *subscriber) offer(t watch.EventType, w *workv1.ManifestWork) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enqueue(t, w)
}

// offerInitial queues a work from the initial list unless a live event about it came first,
// which is at least as new.
func (s *subscriber) offerInitial(w *workv1.ManifestWork) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[w.Name] {
		return
	}
	if _, ok := s.pending[w.Name]; ok {
		return
	}
	s.enqueue(watch.Added, w)
}

func (s *subscriber) enqueue(t watch.EventType, w *workv1.ManifestWork) {
	name := w.Name
	switch t {
	case watch.Deleted:
		delete(s.known, name)
	default:
		if s.known[name] {
			t = watch.Modified
		} else {
			t = watch.Added
			s.known[name] = true
		}
	}
	if prev, ok := s.pending[name]; ok {
		// The reader has not seen prev yet: it still needs to learn the work was added.
		if prev.Type == watch.Added && t == watch.Modified {
			t = watch.Added
		}
	} else {
		s.order = append(s.order, name)
	}
	s.pending[name] = WorkEvent{Type: t, Work: w}
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// next blocks until an event is pending or either context ends.
func (s *subscriber) next(ctx, clientCtx context.Context) (WorkEvent, bool) {
	for {
		s.mu.Lock()
		if len(s.order) > 0 {
			name := s.order[0]
			s.order = s.order[1:]
			ev := s.pending[name]
			delete(s.pending, name)
			s.mu.Unlock()
			return ev, true
		}
		s.mu.Unlock()
		select {
		case <-s.signal:
		case <-ctx.Done():
			return WorkEvent{}, false
		case <-clientCtx.Done():
			return WorkEvent{}, false
		}
	}
}
