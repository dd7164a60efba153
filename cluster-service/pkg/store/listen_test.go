package store

import (
	"context"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestListenerReconnectsAfterItsConnectionIsKilled: the cluster event listener's connection is
// terminated on the server, and the store LISTENs again on a new one (after its backoff).
func TestListenerReconnectsAfterItsConnectionIsKilled(t *testing.T) {
	dsn := newDSN(t)
	open(t, dsn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pgservertest.KillListener(ctx, t, dsn)
}
