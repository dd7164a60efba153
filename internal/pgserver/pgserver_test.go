package pgserver_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

func TestStartServesQueriesAndDatabasesAreSeparate(t *testing.T) {
	s := pgservertest.Start(t)
	ctx := context.Background()
	a := pgservertest.NewDatabase(t, s)
	b := pgservertest.NewDatabase(t, s)
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatalf("connect %s: %v", a, err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE only_in_a (x int)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatalf("connect %s: %v", b, err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_name = 'only_in_a'").Scan(&n); err != nil {
		t.Fatalf("query: %v", err)
	}
	if n != 0 {
		t.Fatalf("table from database a is visible in database b")
	}
}
