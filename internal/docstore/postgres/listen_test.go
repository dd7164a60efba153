package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestListenerReconnectsAfterItsConnectionIsKilled: the listener's connection is terminated on
// the server; the store LISTENs again on a new connection (after its backoff), and a waiter
// sees the next write without the fallback poll (an hour here).
func TestListenerReconnectsAfterItsConnectionIsKilled(t *testing.T) {
	s, dsn := open(t, postgres.Options{PurgeInterval: -1, FallbackPoll: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pgservertest.KillListener(ctx, t, dsn)

	doc, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "before", Type: docstore.TypeResource, Body: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	woken := make(chan error, 1)
	go func() { woken <- s.WaitForChanges(ctx, postgres.Checkpoint(doc.Seq)) }()
	if _, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "after", Type: docstore.TypeResource, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woken:
		if err != nil {
			t.Fatalf("WaitForChanges: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the waiter did not see the write made after the listener reconnected")
	}
}
