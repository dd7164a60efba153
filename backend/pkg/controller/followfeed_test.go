package controller

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// failingFeed is a real document store whose change feed fails its first reads, as one does
// while PostgreSQL restarts.
type failingFeed struct {
	docstore.Store
	mu    sync.Mutex
	fails int
	calls int
}

func (f *failingFeed) Changes(ctx context.Context, checkpoint docstore.Checkpoint, limit int) (docstore.ChangePage, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls <= f.fails
	f.mu.Unlock()
	if fail {
		return docstore.ChangePage{}, errors.New("store restarting")
	}
	return f.Store.Changes(ctx, checkpoint, limit)
}

func TestFollowFeedRetriesAFailingStore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	docs, err := postgres.Open(ctx, pgservertest.NewDatabase(t, pgservertest.Start(t)), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(docs.Close)
	const part, opID = "00000000-0000-0000-0000-0000000000aa", "op-1"
	body, _ := json.Marshal(armdoc.OperationDocument{ID: opID, Request: armdoc.OperationCreate, Status: armdoc.StateAccepted, InternalID: "c1"})
	if _, err := docs.Create(ctx, &docstore.Document{PartitionKey: part, ID: opID, Type: docstore.TypeOperation, Body: body}); err != nil {
		t.Fatal(err)
	}
	feed := &failingFeed{Store: docs, fails: 2}
	c := New(feed, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, Config{})
	done := make(chan struct{})
	go func() { defer close(done); c.followFeed(ctx) }()

	// Two failed reads (about 1s, then 2s, of backoff), then the active operation is found and
	// queued.
	got := make(chan opKey, 1)
	go func() {
		if k, ok := c.queue.Get(); ok {
			got <- k
		}
	}()
	select {
	case k := <-got:
		if k != (opKey{part, opID}) {
			t.Fatalf("queued %+v, want the active operation", k)
		}
	case <-ctx.Done():
		t.Fatal("the active operation was never queued after the store recovered")
	}
	cancel()
	c.queue.ShutDown()
	<-done
	feed.mu.Lock()
	defer feed.mu.Unlock()
	if feed.calls < 3 {
		t.Fatalf("%d reads of the change feed, want the 2 failed ones and at least one more", feed.calls)
	}
}
