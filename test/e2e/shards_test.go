package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"
)

func provisionShards(t *testing.T) csv1.ProvisionShardsClient {
	t.Helper()
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		t.Fatalf("dial cluster service: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return csv1.NewProvisionShardsClient(conn)
}

func listShards(t *testing.T, c csv1.ProvisionShardsClient) map[string]*csv1.ProvisionShard {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := c.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		t.Fatalf("list shards: %v", err)
	}
	out := map[string]*csv1.ProvisionShard{}
	for _, sh := range resp.GetShards() {
		out[sh.GetName()] = sh
	}
	return out
}

// shardMetric reads one per-shard sample from Cluster Service's /metrics (absent: -1).
func shardMetric(t *testing.T, name, shard string) float64 {
	t.Helper()
	resp, err := httpClient.Get(region.Info.ClusterService.MetricsURL)
	if err != nil {
		t.Fatalf("scrape cluster service metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, `shard="`+shard+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		return v
	}
	return -1
}

// TestShardMaintenanceAndCapacity puts the shard placement would choose into maintenance and
// sees a new cluster land on the other one; then fills every shard and sees the frontend answer
// 503 with Retry-After. The shards are restored afterwards so other tests are unaffected.
func TestShardMaintenanceAndCapacity(t *testing.T) {
	shards := provisionShards(t)
	before := listShards(t, shards)
	if len(before) < 2 {
		t.Fatalf("the region has %d shards; this test needs 2", len(before))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, sh := range before {
			if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
				Name: sh.GetName(), Status: sh.GetStatus(), MaxClusters: sh.GetMaxClusters(), Labels: sh.GetLabels()}}); err != nil {
				t.Errorf("restore shard %s: %v", sh.GetName(), err)
			}
		}
	})
	// The shard least-loaded placement would pick now: most free slots, then fewest clusters,
	// then the first name.
	var preferred, other *csv1.ProvisionShard
	for _, sh := range before {
		if sh.GetStatus() != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			continue
		}
		free := func(s *csv1.ProvisionShard) int32 { return s.GetMaxClusters() - s.GetClusterCount() }
		if preferred == nil || free(sh) > free(preferred) ||
			(free(sh) == free(preferred) && (sh.GetClusterCount() < preferred.GetClusterCount() ||
				(sh.GetClusterCount() == preferred.GetClusterCount() && sh.GetName() < preferred.GetName()))) {
			preferred = sh
		}
	}
	for _, sh := range before {
		if sh.GetStatus() == csv1.ShardStatus_SHARD_STATUS_ACTIVE && sh.GetName() != preferred.GetName() {
			other = sh
		}
	}
	if preferred == nil || other == nil {
		t.Fatalf("need two active shards: %v", before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	sub, rg := uuid.NewString(), "rg-shards"
	registerSubscription(t, sub)

	t.Run("a_shard_in_maintenance_takes_no_new_clusters", func(t *testing.T) {
		if _, err := shards.SetShardStatus(ctx, &csv1.SetShardStatusRequest{Name: preferred.GetName(), Status: csv1.ShardStatus_SHARD_STATUS_MAINTENANCE}); err != nil {
			t.Fatal(err)
		}
		if left := shardMetric(t, "cluster_service_shard_capacity_left", preferred.GetName()); left != 0 {
			t.Errorf("capacity left of %s in maintenance = %v, want 0", preferred.GetName(), left)
		}
		placedBefore := shardMetric(t, "cluster_service_clusters_placed_total", other.GetName())

		path := clusterPath(sub, rg, "elsewhere")
		put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
		if put.Status != http.StatusCreated {
			t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
		}
		// Back to active right away: placement happened inside the create, and never moves.
		if _, err := shards.SetShardStatus(ctx, &csv1.SetShardStatusRequest{Name: preferred.GetName(), Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE}); err != nil {
			t.Fatal(err)
		}
		if final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("create operation ended %v: %v", final["status"], final["error"])
		}
		cs := csClusters(t, path)
		if len(cs) != 1 || cs[0].GetShard() != other.GetName() {
			t.Fatalf("cluster placed on %v, want %s (the other shard)", cs, other.GetName())
		}
		if n := len(hostedClusters(t, managementCluster(t, other.GetName()), cs[0].GetId())); n != 1 {
			t.Errorf("%d HostedClusters on %s, want 1", n, other.GetName())
		}
		if n := len(hostedClusters(t, managementCluster(t, preferred.GetName()), cs[0].GetId())); n != 0 {
			t.Errorf("%d HostedClusters on the shard in maintenance", n)
		}
		if placed := shardMetric(t, "cluster_service_clusters_placed_total", other.GetName()); placed != max(placedBefore, 0)+1 {
			t.Errorf("cluster_service_clusters_placed_total{shard=%q} = %v, want %v", other.GetName(), placed, max(placedBefore, 0)+1)
		}
		after := listShards(t, shards)[other.GetName()]
		if left := shardMetric(t, "cluster_service_shard_capacity_left", other.GetName()); left != float64(after.GetMaxClusters()-after.GetClusterCount()) {
			t.Errorf("capacity left of %s = %v, want %d", other.GetName(), left, after.GetMaxClusters()-after.GetClusterCount())
		}
		t.Cleanup(func() {
			del := arm(t, http.MethodDelete, path, nil)
			if del.Status != http.StatusAccepted {
				t.Errorf("DELETE cluster: got %d: %s", del.Status, del.Raw)
				return
			}
			if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
				t.Errorf("delete operation ended %v: %v", final["status"], final["error"])
			}
		})
	})

	t.Run("full_shards_make_the_frontend_answer_503_with_retry_after", func(t *testing.T) {
		// No free slot anywhere: each shard's capacity is what it holds now less the clusters
		// still uninstalling there (from earlier tests), so a deletion finishing during the test
		// cannot open a slot either.
		resp, err := clusterService(t).ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		uninstalling := map[string]int32{}
		for _, c := range resp.GetClusters() {
			if c.GetStatus().GetState() == csv1.ClusterState_CLUSTER_STATE_UNINSTALLING {
				uninstalling[c.GetShard()]++
			}
		}
		for _, sh := range listShards(t, shards) {
			capacity := max(sh.GetClusterCount()-uninstalling[sh.GetName()], 0)
			if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
				Name: sh.GetName(), MaxClusters: capacity, Labels: sh.GetLabels()}}); err != nil {
				t.Fatal(err)
			}
			if left := shardMetric(t, "cluster_service_shard_capacity_left", sh.GetName()); left > 0 {
				t.Errorf("capacity left of full shard %s = %v", sh.GetName(), left)
			}
		}
		path := clusterPath(sub, rg, "nowhere")
		put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
		if put.Status != http.StatusServiceUnavailable {
			t.Fatalf("PUT cluster with every shard full: got %d, want 503: %s", put.Status, put.Raw)
		}
		if ra, err := strconv.Atoi(put.Header.Get("Retry-After")); err != nil || ra <= 0 {
			t.Errorf("Retry-After = %q, want a positive number of seconds", put.Header.Get("Retry-After"))
		}
		if e, _ := put.Body["error"].(map[string]any); e == nil || e["code"] == "" || !strings.Contains(fmt.Sprint(e["message"]), "capacity") {
			t.Errorf("503 body = %s", put.Raw)
		}
		if n := len(csClusters(t, path)); n != 0 {
			t.Errorf("cluster service holds %d clusters for the refused create", n)
		}
		if r := arm(t, http.MethodGet, path, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET of the refused cluster: got %d, want 404: %s", r.Status, r.Raw)
		}
	})
}
