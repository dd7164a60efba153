package controller

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1 "open-cluster-management.io/api/work/v1"

	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// scriptedWatches is a WorkClient whose Watch plays a script: a refused watch, a watch that
// reports one work and ends, then a watch that stays open until its context ends. Only Watch
// is called here.
type scriptedWatches struct {
	WorkClient
	mu    sync.Mutex
	calls int
	open  chan struct{} // closed when the third watch is open
}

func (s *scriptedWatches) Watch(ctx context.Context, consumer string) (<-chan maestro.WorkEvent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	switch s.calls {
	case 1:
		return nil, errors.New("maestro is down")
	case 2:
		ch := make(chan maestro.WorkEvent, 1)
		ch <- maestro.WorkEvent{Type: watch.Modified, Work: &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: manifests.WorkName("c1")}}}
		close(ch)
		return ch, nil
	}
	ch := make(chan maestro.WorkEvent)
	if s.calls == 3 {
		close(s.open)
	}
	go func() { <-ctx.Done(); close(ch) }()
	return ch, nil
}

func TestWatchShardReconnectsAfterARefusedAndAnEndedWatch(t *testing.T) {
	works := &scriptedWatches{open: make(chan struct{})}
	c := New(nil, works, Config{}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.watchShard(ctx, "shard-1") }()

	select {
	case <-works.open:
	case <-time.After(time.Minute):
		t.Fatal("no third watch within a minute after a refused and an ended one")
	}
	if k, ok := c.queue.Get(); !ok || k != "c1" {
		t.Fatalf("queued %q (%v), want the cluster whose work the second watch reported", k, ok)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("watchShard did not return after its context ended")
	}
	works.mu.Lock()
	defer works.mu.Unlock()
	if works.calls != 3 {
		t.Fatalf("%d watches, want 3 (none after the context ended)", works.calls)
	}
}
