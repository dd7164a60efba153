package frontend

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// racingStore is the frontend's store with another writer's write slipped in just before a
// Transact: what the backend does when it records a running create's progress between the
// frontend's read of a resource and its conditional write.
type racingStore struct {
	docstore.Store
	mu sync.Mutex
	// race runs before the next Transact (every Transact while always is set).
	race   func(ctx context.Context)
	always bool
	// transacts counts the Transacts since arm, raced those another write came before.
	transacts, raced int
}

func (s *racingStore) arm(race func(ctx context.Context), always bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.race, s.always, s.transacts, s.raced = race, always, 0, 0
}

func (s *racingStore) Transact(ctx context.Context, partition string, ops []docstore.TxOp) ([]*docstore.Document, error) {
	s.mu.Lock()
	race := s.race
	if !s.always {
		s.race = nil
	}
	s.transacts++
	if race != nil {
		s.raced++
	}
	s.mu.Unlock()
	if race != nil {
		race(ctx)
	}
	return s.Store.Transact(ctx, partition, ops)
}

func (s *racingStore) counts() (transacts, raced int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.transacts, s.raced
}

// TestDeleteRacingAnotherWriter: a DELETE whose conditional write loses to another writer
// (the backend moving the create along) is recorded on a fresh read instead of answering 409,
// still honours the client's If-Match, and gives up with 409 after deleteAttempts.
func TestDeleteRacingAnotherWriter(t *testing.T) {
	var rs *racingStore
	e := newEnv(t, func(c *Config) { rs = &racingStore{Store: c.Store}; c.Store = rs })
	// bump rewrites the resource document unchanged, which gives it a new ETag.
	bump := func(path string) func(ctx context.Context) {
		return func(ctx context.Context) {
			_, d := e.resource(path)
			if _, err := e.store.Replace(ctx, d, d.ETag); err != nil {
				t.Errorf("the other writer's write: %v", err)
			}
		}
	}
	n := 0
	for _, tc := range []struct {
		name     string
		always   bool
		ifMatch  bool // send the ETag read before the race
		want     int
		wantDocs armdoc.ProvisioningState
	}{
		{name: "one race: recorded on the second attempt", want: 202, wantDocs: armdoc.StateDeleting},
		{name: "one race with If-Match: the client's ETag is stale now", ifMatch: true, want: 412, wantDocs: armdoc.StateAccepted},
		{name: "a race every time: 409 after the last attempt", always: true, want: 409, wantDocs: armdoc.StateAccepted},
	} {
		n++
		t.Run(tc.name, func(t *testing.T) {
			path := clusterPath("rg-race", fmt.Sprintf("race%d", n))
			if resp := e.put(path, minimalBody()); resp.code != 201 {
				t.Fatalf("create: %d %s", resp.code, resp.body)
			}
			_, before := e.resource(path)
			header := map[string]string{}
			if tc.ifMatch {
				header["If-Match"] = quoteETag(before.ETag)
			}
			rs.arm(bump(path), tc.always)
			defer rs.arm(nil, false)
			resp := e.do("DELETE", path, nil, header)
			if resp.code != tc.want {
				t.Fatalf("DELETE: %d %s, want %d", resp.code, resp.body, tc.want)
			}
			transacts, raced := rs.counts()
			wantRaced := 1
			if tc.always {
				wantRaced = deleteAttempts
			}
			if raced != wantRaced {
				t.Fatalf("the other writer wrote before %d of the DELETE's %d writes, want %d", raced, transacts, wantRaced)
			}
			if tc.always && transacts != deleteAttempts {
				t.Errorf("%d delete writes, want %d", transacts, deleteAttempts)
			}
			rd, _ := e.resource(path)
			if rd.ProvisioningState != tc.wantDocs {
				t.Errorf("resource %s after the DELETE, want %s", rd.ProvisioningState, tc.wantDocs)
			}
		})
	}
}
