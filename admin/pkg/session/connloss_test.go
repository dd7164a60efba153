package session

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TestReadsAnswerAfterThePoolsConnectionsWereTerminated: the gateway reads a session on every
// request. After a PostgreSQL restart (here: every backend of the pool ended) the first read
// runs once more on a connection the pool checked, and no later read meets a dead one.
func TestReadsAnswerAfterThePoolsConnectionsWereTerminated(t *testing.T) {
	const pooled = 4
	reads := []struct {
		name string
		read func(ctx context.Context, s *Store) error
	}{
		{"credential", func(ctx context.Context, s *Store) error {
			_, cred, err := s.Credential(ctx, "s1")
			if err == nil && cred == nil {
				t.Fatal("credential of an active session is empty")
			}
			return err
		}},
		{"get", func(ctx context.Context, s *Store) error { _, err := s.Get(ctx, "s1"); return err }},
		{"states", func(ctx context.Context, s *Store) error { _, err := s.States(ctx, []string{"s1"}); return err }},
		{"count_active", func(ctx context.Context, s *Store) error { _, err := s.CountActive(ctx, time.Now()); return err }},
		{"list", func(ctx context.Context, s *Store) error { _, err := s.List(ctx, Filter{Now: time.Now()}); return err }},
	}
	for _, first := range reads {
		t.Run(first.name+"_first_then_every_read_succeeds", func(t *testing.T) {
			s, su := installed(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := s.Open(ctx, Session{ID: "s1", ClusterID: "c1", Person: "bob", Group: "sre-readonly", Access: AccessReadOnly,
				Reason: "r", TTLSeconds: 600, Expires: time.Now().Add(10 * time.Minute)}, []byte("kubeconfig")); err != nil {
				t.Fatal(err)
			}
			held := make([]*pgxpool.Conn, 0, pooled)
			for range pooled {
				c, err := s.pool.Acquire(ctx)
				if err != nil {
					t.Fatalf("acquire: %v", err)
				}
				held = append(held, c)
			}
			for _, c := range held {
				c.Release()
			}
			var ended int
			if err := su.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&ended); err != nil {
				t.Fatalf("terminate backends: %v", err)
			}
			if ended < pooled {
				t.Fatalf("terminated %d backends, want at least the %d pooled", ended, pooled)
			}
			if err := first.read(ctx, s); err != nil {
				t.Fatalf("%s, the first read after the connections died: %v", first.name, err)
			}
			for i := range pooled + 2 {
				for _, r := range reads {
					if err := r.read(ctx, s); err != nil {
						t.Fatalf("%s #%d after the loss was seen: %v", r.name, i, err)
					}
				}
			}
		})
	}
}
