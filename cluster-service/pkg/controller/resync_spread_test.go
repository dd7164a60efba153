package controller

import (
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/reconcile"
)

func TestSpreadAdds(t *testing.T) {
	keys := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name   string
		spread time.Duration
		// early is an AddAfter made before the sweep (a requeue already pending).
		early string
		// readyNow is how many keys a worker can take at once; readyLater how many within
		// a few seconds (the rest wait longer than the test).
		readyNow, readyLater int
	}{
		{name: "at once", spread: 0, readyNow: 4, readyLater: 4},
		{name: "spread over an hour: only the first is ready", spread: time.Hour, readyNow: 1, readyLater: 1},
		{name: "spread over 2s: every key within it", spread: 2 * time.Second, readyNow: 1, readyLater: 4},
		{name: "a key's earlier requeue is kept", spread: time.Hour, early: "c", readyNow: 1, readyLater: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := reconcile.NewQueue[string](reconcile.Backoff{})
			defer q.ShutDown()
			if tc.early != "" {
				q.AddAfter(tc.early, 500*time.Millisecond)
			}
			spreadAdds(q, keys, tc.spread)
			if got := q.Len(); got != tc.readyNow {
				t.Fatalf("ready right after the sweep: %d, want %d", got, tc.readyNow)
			}
			deadline := time.Now().Add(5 * time.Second)
			for q.Len() < tc.readyLater && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if tc.readyLater < len(keys) {
				time.Sleep(200 * time.Millisecond) // nothing more may arrive
			}
			if got := q.Len(); got != tc.readyLater {
				t.Fatalf("ready later: %d, want %d", got, tc.readyLater)
			}
			// The sweep's order is kept: the first key is first.
			if k, ok := q.Get(); !ok || k != "a" {
				t.Fatalf("first key %q (ok %v), want a", k, ok)
			}
		})
	}
}
