package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestDatabaseDownIsUnavailable: while Cluster Service's PostgreSQL is down (killed, as in the
// chaos outage of a PostgreSQL restart), its calls answer Unavailable, which the frontend turns
// into 503 with a Retry-After, never Internal (a 500 to the ARM client).
func TestDatabaseDownIsUnavailable(t *testing.T) {
	pg := pgservertest.Start(t)
	e := startOn(t, pg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Calls with the database up hold pooled connections, which the kill then breaks.
	if _, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 10}); err != nil {
		t.Fatalf("list with the database up: %v", err)
	}
	pg.Kill()
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"create_cluster", func() error {
			_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: validCluster(2, "during")})
			return err
		}},
		{"get_cluster", func() error {
			_, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: id(1)})
			return err
		}},
	} {
		t.Run(tc.name+"_answers_unavailable", func(t *testing.T) {
			if got := status.Code(tc.call()); got != codes.Unavailable {
				t.Errorf("code = %s, want Unavailable", got)
			}
		})
	}
}
