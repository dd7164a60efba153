package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestDatabaseDownIsErrUnavailable: while the database is down (its server killed), every call
// fails with an error that is docstore.ErrUnavailable, so the frontend can answer 503 with a
// Retry-After instead of a 500; once the server is back the same store serves again.
func TestDatabaseDownIsErrUnavailable(t *testing.T) {
	srv := pgservertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, pgservertest.NewDatabase(t, srv), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	doc := &docstore.Document{PartitionKey: "p", ID: "d1", Type: docstore.TypeResource, Body: []byte(`{}`)}
	if _, err := s.Create(ctx, doc); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	for name, call := range map[string]func() error{
		"get": func() error { _, err := s.Get(ctx, "p", "d1"); return err },
		"create": func() error {
			_, err := s.Create(ctx, &docstore.Document{PartitionKey: "p", ID: "d2", Type: docstore.TypeResource, Body: []byte(`{}`)})
			return err
		},
		"query": func() error { _, err := s.Query(ctx, docstore.Query{Partition: "p"}); return err },
	} {
		if err := call(); !errors.Is(err, docstore.ErrUnavailable) {
			t.Errorf("%s with the database down: %v, want docstore.ErrUnavailable", name, err)
		}
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "p", "d1"); err != nil {
		t.Fatalf("get once the database is back: %v", err)
	}
}
