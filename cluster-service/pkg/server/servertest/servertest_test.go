package servertest

import (
	"context"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestStartServesTheAPIOverItsStore: a shard registered through the API is listed by it and is in
// the store underneath.
func TestStartServesTheAPIOverItsStore(t *testing.T) {
	ctx := context.Background()
	cs := Start(t, pgservertest.Start(t))
	shards := csv1.NewProvisionShardsClient(cs.Conn)
	if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
		Name: "mgmt-1", Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 3}}); err != nil {
		t.Fatalf("RegisterShard: %v", err)
	}
	list, err := shards.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		t.Fatalf("ListShards: %v", err)
	}
	if len(list.GetShards()) != 1 || list.GetShards()[0].GetName() != "mgmt-1" || list.GetShards()[0].GetMaxClusters() != 3 {
		t.Fatalf("ListShards = %v, want the registered mgmt-1", list.GetShards())
	}
	if _, err := cs.Store.GetShard(ctx, "mgmt-1"); err != nil {
		t.Fatalf("the store has no mgmt-1: %v", err)
	}
}
