package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestMaintenanceCampaignUpgradesTheFleet runs a z-stream campaign on the running region: four
// clusters created through ARM on 4.19.16 are upgraded to 4.19.17 by the region's maintenance
// service, through real Cluster Service, Maestro and hypershift-sim, one wave per shard with
// the canary shard first, and the campaign ends Succeeded. An SRE (alice, sre-admin) asks for
// the campaign with hcpctl through the admin API; the test reads it as the maintenance service's
// own database login.
func TestMaintenanceCampaignUpgradesTheFleet(t *testing.T) {
	needsOwnRegion(t, "its campaign upgrades every cluster and node pool of the region on 4.19.16, not only the test's own")
	const from, to = "4.19.16", "4.19.17"
	sub, rg := uuid.NewString(), "rg-maintenance"
	registerSubscription(t, sub)

	type created struct {
		id, path, shard string
	}
	// Every PUT first, then every wait: the four installs run side by side.
	var clusters []created
	var asyncs []string
	for i := range 4 {
		path := clusterPath(sub, rg, fmt.Sprintf("mimo-%d", i))
		body := clusterBody(sub, rg)
		body["properties"].(map[string]any)["version"] = map[string]any{"id": from, "channelGroup": "stable"}
		put := arm(t, http.MethodPut, path, body)
		if put.Status != http.StatusCreated {
			t.Fatalf("PUT cluster %s: got %d, want 201: %s", path, put.Status, put.Raw)
		}
		t.Cleanup(func() {
			del := arm(t, http.MethodDelete, path, nil)
			if del.Status != http.StatusAccepted {
				t.Errorf("DELETE cluster %s: got %d: %s", path, del.Status, del.Raw)
				return
			}
			if final := waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute); final["status"] != "Succeeded" {
				t.Errorf("delete of %s ended %v: %v", path, final["status"], final["error"])
			}
		})
		clusters = append(clusters, created{path: path})
		asyncs = append(asyncs, put.Header.Get("Azure-AsyncOperation"))
	}
	for i, u := range asyncs {
		if final := waitOperation(t, u, 8*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("create of %s ended %v: %v", clusters[i].path, final["status"], final["error"])
		}
		cs := csClusters(t, clusters[i].path)
		if len(cs) != 1 {
			t.Fatalf("cluster service holds %d clusters for %s", len(cs), clusters[i].path)
		}
		clusters[i].id, clusters[i].shard = cs[0].GetId(), cs[0].GetShard()
	}
	shards := map[string]int{}
	for _, c := range clusters {
		if got := csClusters(t, c.path)[0].GetStatus().GetCurrentVersion(); got != from {
			t.Fatalf("cluster %s runs %q after create, want %s", c.id, got, from)
		}
		shards[c.shard]++
	}
	t.Logf("clusters per shard: %v", shards)
	canary := "mgmt-2"

	db, err := region.Info.Postgres.Role("maintenance")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGPASSFILE", db.PassFile)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	st, err := postgres.Open(ctx, db.DSN, postgres.Options{})
	if err != nil {
		t.Fatalf("open the document store as the maintenance login: %v", err)
	}
	defer st.Close()
	conn, err := region.DialClusterServiceAs(pki.SRE)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	campaigns := maintenance.NewCampaigns(maintenance.NewTasks(st), maintenance.NewClusterService(conn), nil)
	id := "e2e-" + sub[:8]
	// An SRE asks for the campaign through hcpctl; the admin API stores the request, the
	// maintenance service carries it out, and --wait follows it to Done.
	out, stderr, code := hcpctl(t, hcpctlBinary(t), "--as", "sre-admin", "maintenance", "campaign", "create", id,
		"--from-version", from, "--channel-group", "stable", "--canary-shard", canary, "--max-in-flight", "2", "--bake", "1s",
		"--failure-threshold", "0", "--reason", "e2e: z-stream campaign", "--wait", "-o", "json", "--timeout", "2m")
	var req maintenance.Request
	if code != 0 || json.Unmarshal([]byte(out), &req) != nil || req.State != maintenance.RequestDone || req.RequestedBy != "alice" {
		t.Fatalf("hcpctl maintenance campaign create: exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	c, err := campaigns.Get(ctx, id)
	if err != nil {
		t.Fatalf("the campaign the request created: %v", err)
	}
	if c.Request != req.ID || c.RequestedBy != "alice (request "+req.ID+")" {
		t.Fatalf("campaign %s: request %q, requested by %q; want request %s by alice", id, c.Request, c.RequestedBy, req.ID)
	}
	if c.Clusters() != 4 {
		t.Fatalf("campaign covers %d clusters, want the 4 on %s: %+v", c.Clusters(), from, c.Waves)
	}
	if shards[canary] > 0 && c.Waves[0].Shard != canary {
		t.Fatalf("first wave is shard %s, want the canary %s", c.Waves[0].Shard, canary)
	}

	eventually(t, 12*time.Minute, "campaign "+id+" Succeeded", func() error {
		got, err := campaigns.Get(ctx, id)
		if err != nil {
			return err
		}
		switch got.State {
		case maintenance.CampaignSucceeded:
			c = got
			return nil
		case maintenance.CampaignRunning:
			return fmt.Errorf("campaign %s at wave %d: %s", got.State, got.Current, got.Message)
		}
		t.Fatalf("campaign ended %s: %s", got.State, got.Message)
		return nil
	})
	for i := 1; i < len(c.Waves); i++ {
		if c.Waves[i].Started.Before(c.Waves[i-1].Finished) {
			t.Errorf("wave %d (%s) started %s, before wave %d (%s) finished %s", i, c.Waves[i].Shard, c.Waves[i].Started, i-1, c.Waves[i-1].Shard, c.Waves[i-1].Finished)
		}
	}
	for _, w := range c.Waves {
		if w.Failed != 0 || w.Succeeded != len(w.Clusters) {
			t.Errorf("wave %s: %d succeeded, %d failed of %d", w.Shard, w.Succeeded, w.Failed, len(w.Clusters))
		}
	}
	for _, cl := range clusters {
		got := csClusters(t, cl.path)[0]
		if got.GetStatus().GetCurrentVersion() != to || got.GetStatus().GetUpgrade().GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED {
			t.Errorf("cluster %s on %s: current %s, upgrade %v", cl.id, cl.shard, got.GetStatus().GetCurrentVersion(), got.GetStatus().GetUpgrade())
		}
		if r := arm(t, http.MethodGet, cl.path, nil); r.Body["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
			t.Errorf("ARM shows %s after the upgrade: %s", cl.path, r.Raw)
		}
	}

	// SREs' other requests, through hcpctl, the admin API and the running maintenance service
	// (its identity as Cluster Service authorizes it).
	request := func(t *testing.T, args ...string) maintenance.Request {
		t.Helper()
		out, stderr, code := hcpctl(t, hcpctlBinary(t), append([]string{"--as", "sre-admin", "maintenance"}, append(args, "--wait", "-o", "json", "--timeout", "2m")...)...)
		var r maintenance.Request
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.State != maintenance.RequestDone {
			t.Fatalf("hcpctl maintenance %v: exit %d\nstdout: %s\nstderr: %s", args, code, out, stderr)
		}
		return r
	}
	target := clusters[0].id
	t.Run("a_window_is_set_and_cleared_by_request", func(t *testing.T) {
		request(t, "window", "set", target, "--days", "Sat,Sun", "--start", "02:00", "--length", "4h", "--reason", "e2e: window")
		win, err := maintenance.NewWindows(st, nil).Get(ctx, target)
		if err != nil || win == nil || win.Start != 2*time.Hour || win.Length != 4*time.Hour || len(win.Days) != 2 {
			t.Fatalf("window after set: %+v %v", win, err)
		}
		request(t, "window", "clear", target, "--reason", "e2e: window")
		if win, err := maintenance.NewWindows(st, nil).Get(ctx, target); err != nil || win != nil {
			t.Fatalf("window after clear: %+v %v", win, err)
		}
	})
	t.Run("a_single_task_is_created_by_request_and_runs", func(t *testing.T) {
		// The cluster is on 4.19.17 now: a z-stream upgrade from 4.19.16 has nothing to do.
		r := request(t, "task", "create", target, "--type", maintenance.TypeZStreamUpgrade, "--param", maintenance.ParamFromVersion+"="+from, "--reason", "e2e: task")
		tasks := maintenance.NewTasks(st)
		eventually(t, 2*time.Minute, "task "+r.TaskID+" Succeeded", func() error {
			task, err := tasks.Get(ctx, r.TaskID)
			if err != nil {
				return err
			}
			if task.State != maintenance.StateSucceeded {
				return fmt.Errorf("task %s: %s", task.State, task.Message)
			}
			if task.Data[maintenance.DataOutcome] != "nothing-to-do" || task.Cluster != target {
				t.Fatalf("task %+v; want nothing-to-do on %s", task, target)
			}
			return nil
		})
	})
	t.Run("a_node_pool_campaign_lists_the_node_pools_as_the_maintenance_identity", func(t *testing.T) {
		// The clusters have no node pool on 4.19.16: the campaign selects none and ends at once,
		// after listing every cluster's node pools (ListNodePools, as the maintenance workload).
		np := "e2e-np-" + sub[:8]
		r := request(t, "campaign", "create", np, "--target", "nodepools", "--from-version", from, "--channel-group", "stable", "--reason", "e2e: node pools")
		if r.CampaignState != maintenance.CampaignSucceeded {
			t.Fatalf("node pool campaign: %+v", r)
		}
		got, err := campaigns.Get(ctx, np)
		if err != nil || got.Target != maintenance.TargetNodePools || len(got.Waves) != 0 {
			t.Fatalf("node pool campaign: %+v %v", got, err)
		}
	})
}
