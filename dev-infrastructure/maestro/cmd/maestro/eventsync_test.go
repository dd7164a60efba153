package main

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/openshift-online/maestro/pkg/api"
	"github.com/openshift-online/maestro/pkg/controllers"
	maestroerrors "github.com/openshift-online/maestro/pkg/errors"
	"github.com/openshift-online/maestro/pkg/services"
)

// eventStore is a named fake of the Maestro server's event table (services.EventService): the
// spec event controller reads and marks events through it. Only the calls the controller makes
// are implemented.
type eventStore struct {
	services.EventService
	mu     sync.Mutex
	events map[string]*api.Event
}

func (s *eventStore) Get(_ context.Context, id string) (*api.Event, *maestroerrors.ServiceError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.events[id]
	if !ok {
		return nil, maestroerrors.NotFound("event %s", id)
	}
	c := *e
	return &c, nil
}

func (s *eventStore) Replace(_ context.Context, e *api.Event) (*api.Event, *maestroerrors.ServiceError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *e
	s.events[e.ID] = &c
	return e, nil
}

func (s *eventStore) FindAllUnreconciledEvents(context.Context) (api.EventList, *maestroerrors.ServiceError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var l api.EventList
	for _, e := range s.events {
		if e.ReconciledDate == nil {
			c := *e
			l = append(l, &c)
		}
	}
	return l, nil
}

func (s *eventStore) DeleteAllReconciledEvents(context.Context) *maestroerrors.ServiceError {
	return nil
}

func (s *eventStore) FindAgeOfOldestUnreconciledEvent(context.Context) (*float64, *maestroerrors.ServiceError) {
	return nil, nil
}

// TestSpecEventFailedThroughABrokerOutageIsPublishedSoonAfter: the server's spec event
// controller retries a failed publish with a per-event backoff that doubles from 5 ms up to
// 1000 s, so an event that failed through a broker outage waited about as long again as it
// had failed before its next try (up to 41 s after a one-minute outage). With the command's
// events sync, every unreconciled event is queued again every few seconds, so an event whose
// backoff has grown to the cap is still published within seconds of the broker's return.
func TestSpecEventFailedThroughABrokerOutageIsPublishedSoonAfter(t *testing.T) {
	installEventsSync()
	store := &eventStore{events: map[string]*api.Event{
		"e1": {Meta: api.Meta{ID: "e1"}, Source: "Resources", SourceID: "r1", EventType: api.CreateEventType},
	}}
	km := controllers.NewKindControllerManager(
		controllers.NewPredicatedEventFilter(func(context.Context, string) (bool, error) { return true, nil }), store)

	var mu sync.Mutex
	var firstTry, published time.Time
	km.Add(&controllers.ControllerConfig{Source: "Resources", Handlers: map[api.EventType][]controllers.ControllerHandlerFunc{
		// The broker is away for the first second after the first try: every try then fails,
		// as sdk-go's publish does while its client reconnects.
		api.CreateEventType: {func(context.Context, string) error {
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if firstTry.IsZero() {
				firstTry = now
			}
			if now.Sub(firstTry) < time.Second {
				return errors.New("the cloudevents client is not ready")
			}
			published = now
			return nil
		}},
	}})
	// The event has already failed through a long outage: its backoff is at the cap.
	for range 20 {
		km.Queue().AddRateLimited("e1")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go km.Run(ctx)

	deadline := time.Now().Add(2 * time.Minute) // upstream's next try: 1000 s
	for {
		mu.Lock()
		p, f := published, firstTry
		mu.Unlock()
		if !p.IsZero() {
			t.Logf("published %s after its first try", p.Sub(f).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the event was not published within 2m of the broker's return (first try %v)", f)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
