package maintenance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// TestNodePoolCampaign: a campaign with target nodepools selects the node pools on fromVersion
// (ListNodePools), gives each its task <campaign>-<cluster>-<pool>, keeps waves by shard and
// counts its failure ratio over node pools; a pool whose control plane is behind fails (the node
// pool task never goes ahead of it).
func TestNodePoolCampaign(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	f := newFleet(t, pg)
	// mgmt-1 holds three clusters; the next ones can only go to mgmt-2.
	f.registerShard("mgmt-1", 3)
	a := f.createCluster("a", "4.19.17")
	b := f.createCluster("b", "4.19.17")
	behind := f.createCluster("behind", "4.19.16") // its control plane runs the pools' version
	f.registerShard("mgmt-2", 10)
	c := f.createCluster("c", "4.19.17")
	shardOf := func(id string) string {
		cl, err := f.cs.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
		if err != nil {
			t.Fatal(err)
		}
		return cl.GetShard()
	}
	if shardOf(a) != "mgmt-1" || shardOf(b) != "mgmt-1" || shardOf(behind) != "mgmt-1" || shardOf(c) != "mgmt-2" {
		t.Fatalf("placement: a %s, b %s, behind %s, c %s; want the first three on mgmt-1", shardOf(a), shardOf(b), shardOf(behind), shardOf(c))
	}
	a1, a2 := f.createNodePool(a, "a", "one", "4.19.16"), f.createNodePool(a, "a", "two", "4.19.16")
	b1 := f.createNodePool(b, "b", "one", "4.19.16")
	b2 := f.createNodePool(b, "b", "two", "4.19.17") // not selected: another version
	x1 := f.createNodePool(behind, "behind", "one", "4.19.16")
	c1, c2 := f.createNodePool(c, "c", "one", "4.19.16"), f.createNodePool(c, "c", "two", "4.19.16")
	f.runFakeNodePools(t, []string{a1, a2, b1, b2, x1, c1, c2})

	dsn := pgservertest.NewDatabase(t, pg)
	tasks := NewTasks(openStore(t, dsn))
	runActuator(t, dsn, TaskTypes(f.cs, ZStreamConfig{Poll: 50 * time.Millisecond}, RegionCertConfig{}), ActuatorConfig{Holder: "a", MaxInFlight: 4, LeaseDuration: 10 * time.Second})
	m := NewCampaigns(tasks, f.cs, nil)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); m.Run(runCtx, 30*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	// One failed pool of mgmt-1's four is 25%: under the threshold counted over pools, over
	// it (33%) were it counted over clusters.
	threshold := 0.3
	cp, err := m.Create(ctx, CampaignSpec{ID: "np1", Target: TargetNodePools, FromVersion: "4.19.16", ChannelGroup: "stable", CanaryShard: "mgmt-2",
		MaxInFlight: 2, Bake: time.Millisecond, FailureThreshold: &threshold, RequestedBy: "sre"})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("waves_by_shard_hold_the_node_pools_on_the_version_canary_first", func(t *testing.T) {
		want := []Wave{
			{Shard: "mgmt-2", NodePools: sortedPools(WaveNodePool{c, c1}, WaveNodePool{c, c2})},
			{Shard: "mgmt-1", NodePools: sortedPools(WaveNodePool{a, a1}, WaveNodePool{a, a2}, WaveNodePool{b, b1}, WaveNodePool{behind, x1})},
		}
		if len(cp.Waves) != 2 || cp.Clusters() != 6 {
			t.Fatalf("waves %+v; want 2 waves of 6 node pools", cp.Waves)
		}
		for i, w := range want {
			got := sortedPools(cp.Waves[i].NodePools...)
			if cp.Waves[i].Shard != w.Shard || strings.Join(poolIDs(got), " ") != strings.Join(poolIDs(w.NodePools), " ") {
				t.Fatalf("wave %d: %s %v; want %s %v", i, cp.Waves[i].Shard, poolIDs(got), w.Shard, poolIDs(w.NodePools))
			}
		}
	})

	end := waitCampaign(t, m, "np1", CampaignSucceeded, 5*time.Minute)
	t.Run("each_pool_has_its_task_and_the_failure_ratio_is_over_pools", func(t *testing.T) {
		if w := end.Waves[1]; w.Succeeded != 3 || w.Failed != 1 {
			t.Fatalf("wave mgmt-1: %d succeeded, %d failed; want 3 and 1", w.Succeeded, w.Failed)
		}
		for _, p := range []WaveNodePool{{c, c1}, {c, c2}, {a, a1}, {a, a2}, {b, b1}} {
			task, err := tasks.Get(ctx, "np1-"+p.Cluster+"-"+p.NodePool)
			if err != nil {
				t.Fatal(err)
			}
			if task.State != StateSucceeded || task.Type != TypeNodePoolZStreamUpgrade || task.Cluster != p.Cluster || task.Params[ParamNodePool] != p.NodePool {
				t.Fatalf("task of pool %s: %s %s %q", p.NodePool, task.Type, task.State, task.Message)
			}
			np, err := f.cs.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: p.NodePool})
			if err != nil || np.GetSpec().GetVersionId() != "4.19.17" {
				t.Fatalf("pool %s runs %s (%v); want 4.19.17", p.NodePool, np.GetSpec().GetVersionId(), err)
			}
		}
		task, err := tasks.Get(ctx, "np1-"+behind+"-"+x1)
		if err != nil || task.State != StateFailed || !strings.Contains(task.Message, "upgrade the cluster first") {
			t.Fatalf("task of the pool whose control plane is behind: %+v %v; want Failed", task, err)
		}
		if _, err := tasks.Get(ctx, "np1-"+b+"-"+b2); err == nil {
			t.Fatal("the pool on another version got a task")
		}
		all, err := tasks.List(ctx)
		if err != nil || len(all) != 6 {
			t.Fatalf("%d tasks (%v); want one per selected pool, 6", len(all), err)
		}
	})

	t.Run("a_node_pool_campaign_halts_when_its_pools_failed_share_exceeds_the_threshold", func(t *testing.T) {
		zero := 0.0
		// Only behind's pool x1 is still on 4.19.16 now.
		if _, err := m.Create(ctx, CampaignSpec{ID: "np2", Target: TargetNodePools, FromVersion: "4.19.16", ChannelGroup: "stable",
			MaxInFlight: 2, FailureThreshold: &zero, RequestedBy: "sre"}); err != nil {
			t.Fatal(err)
		}
		halted := waitCampaign(t, m, "np2", CampaignHalted, 3*time.Minute)
		if !strings.Contains(halted.Message, "1 failed of 1 node pools") {
			t.Fatalf("halted: %q", halted.Message)
		}
	})
}

func sortedPools(ps ...WaveNodePool) []WaveNodePool {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(x, y WaveNodePool) int {
		return strings.Compare(x.Cluster+"/"+x.NodePool, y.Cluster+"/"+y.NodePool)
	})
	return out
}

func poolIDs(ps []WaveNodePool) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.NodePool)
	}
	return s
}

// twoGroupCatalogue is the default stable group beside a fast one that also leads 4.19.16 to
// 4.19.17, so a campaign in either group has a z-stream to go to.
const twoGroupCatalogue = `{"channelGroups": {
  "stable": {"versions": [
    {"id": "4.19.16", "enabled": true, "endOfLife": "2027-12-17T00:00:00Z", "upgrades": ["4.19.17"]},
    {"id": "4.19.17", "enabled": true, "endOfLife": "2027-12-17T00:00:00Z"}]},
  "fast": {"versions": [
    {"id": "4.19.16", "enabled": true, "endOfLife": "2027-12-17T00:00:00Z", "upgrades": ["4.19.17"]},
    {"id": "4.19.17", "enabled": true, "endOfLife": "2027-12-17T00:00:00Z"}]}}}`

// TestNodePoolCampaignSelectsByThePoolsChannelGroup: a node pool upgrades along its own channel
// group (its cluster's when it names none), so a campaign over node pools selects a pool by the
// pool's group and version, not by its cluster's group.
func TestNodePoolCampaignSelectsByThePoolsChannelGroup(t *testing.T) {
	pg := pgservertest.Start(t)
	ctx := context.Background()
	cat, err := versions.Parse([]byte(twoGroupCatalogue))
	if err != nil {
		t.Fatal(err)
	}
	f := newFleetWith(t, pg, cat)
	f.registerShard("mgmt-1", 10)
	stable := f.createClusterIn("s", "stable", "4.19.17")
	fast := f.createClusterIn("f", "fast", "4.19.17")
	stablePoolOfStable := f.createNodePoolIn(stable, "s", "inherits", "", "4.19.16")
	fastPoolOfStable := f.createNodePoolIn(stable, "s", "fast", "fast", "4.19.16")
	fastPoolOfFast := f.createNodePoolIn(fast, "f", "inherits", "", "4.19.16")
	stablePoolOfFast := f.createNodePoolIn(fast, "f", "stable", "stable", "4.19.16")
	m := NewCampaigns(NewTasks(openStore(t, pgservertest.NewDatabase(t, pg))), f.cs, nil)

	for _, c := range []struct {
		name, group string
		want        []string
	}{
		{"a_stable_campaign_takes_the_stable_pools_of_both_clusters_and_leaves_the_fast_pool_of_the_stable_cluster", "stable",
			[]string{stablePoolOfStable, stablePoolOfFast}},
		{"a_fast_campaign_takes_the_fast_pools_of_both_clusters_and_leaves_the_stable_pool_of_the_fast_cluster", "fast",
			[]string{fastPoolOfStable, fastPoolOfFast}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cp, err := m.Create(ctx, CampaignSpec{ID: "np-" + c.group, Target: TargetNodePools, FromVersion: "4.19.16", ChannelGroup: c.group, RequestedBy: "sre"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range cp.Waves {
				got = append(got, poolIDs(w.NodePools)...)
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(c.want))
			if !slices.Equal(got, want) {
				t.Fatalf("selected pools %v; want %v", got, want)
			}
		})
	}
}
