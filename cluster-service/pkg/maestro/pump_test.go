package maestro

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	workv1client "open-cluster-management.io/api/client/work/clientset/versioned/typed/work/v1"
)

// closingWorks is a work client whose every watch ends at once: its result channel is closed,
// as a grpcsource watcher's is when its stream ends.
type closingWorks struct {
	workv1client.ManifestWorkInterface
	watches atomic.Int32
}

func (w *closingWorks) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	w.watches.Add(1)
	fw := watch.NewFake()
	fw.Stop()
	return fw, nil
}

// A watch whose result channel closes is a lost watch: the pump opens a new one instead of
// reading the closed channel forever.
func TestPumpReopensAWatchWhoseChannelClosed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{ctx: ctx, cancel: cancel, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	works := &closingWorks{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.pump(&consumerClient{name: "c1", works: works, hub: newHub()})
	}()
	deadline := time.Now().Add(60 * time.Second)
	for works.watches.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if n := works.watches.Load(); n < 2 {
		t.Fatalf("the pump opened %d watch(es) in 60 s after the first one closed; want it to open another", n)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the pump did not return after its client was closed")
	}
}

// drain returns once a stopped watcher's channel is closed, instead of spinning on it.
func TestDrainReturnsOnAClosedChannel(t *testing.T) {
	ch := make(chan watch.Event)
	close(ch)
	done := make(chan struct{})
	go func() { drain(ch); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("drain did not return on a closed channel")
	}
}
