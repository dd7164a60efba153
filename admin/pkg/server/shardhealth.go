package server

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/mgmtclusters"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// ManagementClusters reads the management clusters themselves (mgmtclusters.Reader).
type ManagementClusters interface {
	// Health probes a shard's kube-apiserver: mgmtclusters.Healthy, Unhealthy, Unreachable or
	// Unknown, and what was seen.
	Health(ctx context.Context, shard string) (status, message string)
	// ClusterObjects returns a hosted cluster's HostedCluster, NodePools and events on shard.
	ClusterObjects(ctx context.Context, shard, clusterID string) (mgmtclusters.Objects, error)
}

// probeShards fills in each shard's health, probing them at once so that one dead shard costs
// the list one probe timeout, not one per shard.
func (s *Server) probeShards(ctx context.Context, shards []adminapi.Shard) {
	var wg sync.WaitGroup
	for i := range shards {
		if s.cfg.ManagementClusters == nil {
			shards[i].Health, shards[i].HealthMessage = mgmtclusters.Unknown, "the admin API reads no management cluster (--management-kubeconfigs)"
			continue
		}
		wg.Add(1)
		go func(sh *adminapi.Shard) {
			defer wg.Done()
			sh.Health, sh.HealthMessage = s.cfg.ManagementClusters.Health(ctx, sh.Name)
		}(&shards[i])
	}
	wg.Wait()
}

// gatherManagementCluster adds management/{hostedclusters,nodepools,events}.json for cluster c,
// read from its shard's kube-apiserver, or says in the README why they are missing.
func (s *Server) gatherManagementCluster(ctx context.Context, g *gather, c *csv1.Cluster) {
	switch {
	case s.cfg.ManagementClusters == nil:
		g.unavailable("management/: the admin API reads no management cluster (--management-kubeconfigs); the conditions as last reported are in describe.json")
		return
	case c.GetShard() == "":
		g.unavailable("management/: the cluster is on no shard yet")
		return
	}
	objs, err := s.cfg.ManagementClusters.ClusterObjects(ctx, c.GetShard(), c.GetId())
	if err != nil {
		g.unavailable("management/: %v", err)
		return
	}
	g.json("management/hostedclusters.json", objs.HostedClusters)
	g.json("management/nodepools.json", objs.NodePools)
	g.json("management/events.json", objs.Events)
}

// knownShard refuses a shard filter that names no shard (400 naming it), so a typo is not a
// silent empty list; an empty name filters nothing.
func (s *Server) knownShard(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	resp, err := s.cfg.Shards.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		return upstream("list provision shards in Cluster Service", "shard", err)
	}
	var names []string
	for _, sh := range resp.GetShards() {
		if sh.GetName() == name {
			return nil
		}
		names = append(names, sh.GetName())
	}
	return badRequest("shard", "no shard %q; the shards are %s (hcpctl shard list)", name, strings.Join(names, ", "))
}

// shardLine is the describe view's last diagnosis line: the health of the management cluster
// the cluster is on, so an on-call engineer sees a dead shard next to a stuck cluster. Empty
// when the cluster is on no shard yet or the admin API reads no management cluster.
func (s *Server) shardLine(ctx context.Context, shard string) string {
	if shard == "" || s.cfg.ManagementClusters == nil {
		return ""
	}
	health, msg := s.cfg.ManagementClusters.Health(ctx, shard)
	return fmt.Sprintf("Management cluster %s: %s (%s)", shard, health, msg)
}
