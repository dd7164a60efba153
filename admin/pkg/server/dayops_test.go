package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// seedNodePool creates a node pool of the seeded cluster in Cluster Service and its ARM
// resource document (Succeeded), as the frontend would.
func seedNodePool(t *testing.T, e *env, clusterID, clusterARM string) (csID, armID string) {
	t.Helper()
	ctx := context.Background()
	csID = strings.Repeat("0", 31) + "8"
	armID = clusterARM + "/nodePools/np1"
	_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{Id: csID, ClusterId: clusterID, ArmResourceId: armID,
		Spec: &csv1.NodePoolSpec{Replicas: 2, VersionId: "4.18.27", Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	props := `{"properties":{"version":{"id":"4.18.27","channelGroup":"stable"},"platform":{"vmSize":"Standard_D8s_v3"},"replicas":2,"autoRepair":false}}`
	b, _ := json.Marshal(armdoc.ResourceDocument{ResourceID: armID, InternalID: csID, ProvisioningState: armdoc.StateSucceeded, Properties: json.RawMessage(props)})
	lower := strings.ToLower(armID)
	if _, err := e.docs.Create(ctx, &docstore.Document{PartitionKey: testSub, ID: lower, Type: docstore.TypeResource, ResourceID: lower, Body: b}); err != nil {
		t.Fatal(err)
	}
	return csID, armID
}

// setARMState sets a resource document's provisioning state, as the backend does.
func setARMState(t *testing.T, e *env, armID string, st armdoc.ProvisioningState) {
	t.Helper()
	ctx := context.Background()
	doc, err := e.docs.Get(ctx, testSub, strings.ToLower(armID))
	if err != nil {
		t.Fatal(err)
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(doc.Body, &rd); err != nil {
		t.Fatal(err)
	}
	rd.ProvisioningState, rd.ActiveOperationID = st, ""
	doc.Body, _ = json.Marshal(rd)
	if _, err := e.docs.Replace(ctx, doc, doc.ETag); err != nil {
		t.Fatal(err)
	}
}

// armProperty reads a path of a resource document's properties, as the frontend renders them.
func armProperty(t *testing.T, e *env, armID, path string) any {
	t.Helper()
	doc, err := e.docs.Get(context.Background(), testSub, strings.ToLower(armID))
	if err != nil {
		t.Fatal(err)
	}
	var rd armdoc.ResourceDocument
	var props map[string]any
	if err := json.Unmarshal(doc.Body, &rd); err != nil || json.Unmarshal(rd.Properties, &props) != nil {
		t.Fatalf("decode %s: %v", armID, err)
	}
	var v any = props
	for _, k := range strings.Split(path, ".") {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func TestDayTwoChanges(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	clusterID, clusterARM, _ := seedCluster(t, e)
	poolID, poolARM := seedNodePool(t, e, clusterID, clusterARM)
	pools := e.pools
	scale := func(id string) string { return "/admin/v1/scale/" + strings.TrimPrefix(id, "/") }
	upgrade := func(id string) string { return "/admin/v1/upgrade/" + strings.TrimPrefix(id, "/") }
	cluster, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("drain_status_lists_the_cluster_and_its_active_operation", func(t *testing.T) {
		code, ae, body := e.call(t, "bob", "GET", "/admin/v1/shards/"+cluster.GetShard()+"/drain-status", "")
		if code != 200 {
			t.Fatalf("%d %+v", code, ae)
		}
		var ds adminapi.DrainStatus
		if err := json.Unmarshal(body, &ds); err != nil {
			t.Fatal(err)
		}
		if ds.Drained || len(ds.Clusters) != 1 || ds.Clusters[0].ID != clusterID || len(ds.Clusters[0].ActiveOperations) != 1 || ds.Clusters[0].ActiveOperations[0].ID != "op-mg1" {
			t.Fatalf("drain status %s", body)
		}
		other := "mgmt-1"
		if cluster.GetShard() == other {
			other = "mgmt-2"
		}
		code, _, body = e.call(t, "bob", "GET", "/admin/v1/shards/"+other+"/drain-status", "")
		if code != 200 || json.Unmarshal(body, &ds) != nil || !ds.Drained || len(ds.Clusters) != 0 {
			t.Fatalf("empty shard: %d %s", code, body)
		}
	})

	for _, tc := range []struct {
		name, identity, method, path, body string
		hdr                                []string
		want                               int
		code, target                       string
	}{
		{"no_certificate_is_401", "", "POST", scale(poolID), `{"replicas":3,"reason":"r"}`, nil, 401, adminapi.CodeUnauthenticated, ""},
		{"readonly_may_not_scale_403", "bob", "POST", scale(poolID), `{"replicas":3,"reason":"r"}`, nil, 403, adminapi.CodeForbidden, ""},
		{"readonly_may_not_upgrade_403", "bob", "POST", upgrade(clusterID), `{"version":"4.20.3","reason":"r"}`, nil, 403, adminapi.CodeForbidden, ""},
		{"unknown_node_pool_is_404_naming_it", "alice", "POST", scale("0000000000000000000000000000000v"), `{"replicas":3,"reason":"r"}`, nil, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
		{"unknown_arm_node_pool_is_404_naming_it", "alice", "POST", scale(clusterARM + "/nodePools/nope"), `{"replicas":3,"reason":"r"}`, nil, 404, adminapi.CodeNotFound, clusterARM[1:] + "/nodePools/nope"},
		{"unknown_upgrade_target_is_404_naming_it", "alice", "POST", upgrade("0000000000000000000000000000000v"), `{"version":"4.20.3","reason":"r"}`, nil, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
		{"scale_needs_a_reason", "alice", "POST", scale(poolID), `{"replicas":3}`, nil, 400, adminapi.CodeInvalidRequest, "reason"},
		{"replicas_and_autoscaling_together_is_400", "alice", "POST", scale(poolID), `{"replicas":3,"autoscaling":{"min":1,"max":2},"reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "replicas"},
		{"negative_replicas_refused_by_cluster_service", "alice", "POST", scale(poolID), `{"replicas":-1,"reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "replicas"},
		{"autoscaling_min_over_max_refused_by_cluster_service", "alice", "POST", scale(poolID), `{"autoscaling":{"min":5,"max":2},"reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "autoscaling.max"},
		{"unknown_body_field_is_400", "alice", "POST", scale(poolID), `{"replica":3,"reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "body"},
		{"upgrade_needs_a_version", "alice", "POST", upgrade(poolID), `{"reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "version"},
		{"node_pool_version_without_edge_is_400_on_version", "alice", "POST", upgrade(poolID), `{"version":"4.17.44","reason":"r"}`, nil, 400, adminapi.CodeInvalidRequest, "version"},
		{"bad_if_match_is_400", "alice", "POST", scale(poolID), `{"replicas":3,"reason":"r"}`, []string{"If-Match", "abc"}, 400, adminapi.CodeInvalidRequest, "If-Match"},
		{"stale_if_match_is_412_and_changes_nothing", "alice", "POST", scale(poolID), `{"replicas":3,"reason":"r"}`, []string{"If-Match", `"1"`}, 412, adminapi.CodeConflict, "If-Match"},
		{"cancel_of_a_node_pool_without_an_upgrade_is_409_naming_it", "alice", "POST", "/admin/v1/cancel-upgrade/" + poolID, `{"reason":"r"}`, nil, 409, adminapi.CodeNotCancelable, poolID},
		{"cancel_of_an_arm_node_pool_is_409_naming_it", "alice", "POST", "/admin/v1/cancel-upgrade" + poolARM, `{"reason":"r"}`, nil, 409, adminapi.CodeNotCancelable, poolARM[1:]},
		{"cancel_of_an_unknown_id_is_404_naming_it", "alice", "POST", "/admin/v1/cancel-upgrade/0000000000000000000000000000000v", `{"reason":"r"}`, nil, 404, adminapi.CodeNotFound, "0000000000000000000000000000000v"},
		{"cluster_upgrade_during_a_customer_operation_is_409", "alice", "POST", upgrade(clusterARM), `{"version":"4.20.3","reason":"r"}`, nil, 409, adminapi.CodeBusy, clusterARM[1:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, body := e.call(t, tc.identity, tc.method, tc.path, tc.body, tc.hdr...)
			if code != tc.want || ae.Code != tc.code || ae.Target != tc.target {
				t.Fatalf("%d %q target %q, want %d %q target %q: %s", code, ae.Code, ae.Target, tc.want, tc.code, tc.target, body)
			}
		})
	}
	if np, err := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID}); err != nil || np.GetSpec().GetReplicas() != 2 || np.GetSpec().GetVersionId() != "4.18.27" {
		t.Fatalf("refused calls changed the node pool: %v %v", np.GetSpec(), err)
	}

	t.Run("scale_by_arm_id_changes_cluster_service_and_the_arm_resource", func(t *testing.T) {
		np, _ := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
		code, ae, body := e.call(t, "alice", "POST", scale(poolARM), `{"replicas":5,"reason":"INC-9: more capacity"}`,
			"If-Match", revisionETag(np.GetSpecRevision()), adminapi.HeaderCorrelationID, "cid-scale")
		if code != 200 {
			t.Fatalf("%d %+v", code, ae)
		}
		var ch adminapi.Change
		if err := json.Unmarshal(body, &ch); err != nil || ch.Replicas != 5 || ch.ARMDocument != adminapi.ARMUpdated || ch.Revision <= np.GetRevision() {
			t.Fatalf("answer %s", body)
		}
		if got, _ := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID}); got.GetSpec().GetReplicas() != 5 {
			t.Fatalf("Cluster Service replicas %d", got.GetSpec().GetReplicas())
		}
		if got := armProperty(t, e, poolARM, "properties.replicas"); got != 5.0 {
			t.Fatalf("ARM properties.replicas = %v", got)
		}
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-scale"})
		if len(recs) != 2 || recs[0].Status != 200 || recs[0].Reason != "INC-9: more capacity" || recs[0].Person != "alice" || recs[0].Target != poolARM[1:] {
			t.Fatalf("audit %+v", recs)
		}
	})
	t.Run("if_match_holds_across_a_status_write_and_not_across_a_spec_change", func(t *testing.T) {
		read, err := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
		if err != nil {
			t.Fatal(err)
		}
		etag := revisionETag(read.GetSpecRevision())
		// Cluster Service's controller writes a status between the SRE's read and the change.
		st := proto.Clone(read.GetStatus()).(*csv1.NodePoolStatus)
		st.Message = "a status write between the read and the change"
		written, err := e.csdb.NodePools().UpdateStatus(ctx, poolID, read.GetRevision(), st)
		if err != nil || written.Revision <= read.GetRevision() {
			t.Fatalf("status write: %+v, %v; want a new revision", written, err)
		}
		code, ae, body := e.call(t, "alice", "POST", scale(poolID), `{"replicas":6,"reason":"r"}`, "If-Match", etag)
		var ch adminapi.Change
		if code != 200 || json.Unmarshal(body, &ch) != nil || ch.Replicas != 6 || ch.ETag == etag {
			t.Fatalf("after a status write: %d %+v %s; want 200 with replicas 6 and a new etag", code, ae, body)
		}
		// That change moved the spec: the etag read before it is stale now.
		code, ae, _ = e.call(t, "alice", "POST", scale(poolID), `{"replicas":7,"reason":"r"}`, "If-Match", etag)
		if code != 412 || ae.Target != "If-Match" {
			t.Fatalf("after a spec change: %d %+v; want 412 on If-Match", code, ae)
		}
		if got, _ := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID}); got.GetSpec().GetReplicas() != 6 {
			t.Fatalf("the refused change was applied: replicas %d", got.GetSpec().GetReplicas())
		}
	})
	t.Run("autoscaling_replaces_replicas_in_both", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "POST", scale(poolID), `{"autoscaling":{"min":1,"max":4},"reason":"r"}`)
		if code != 200 {
			t.Fatalf("%d %+v", code, ae)
		}
		got, _ := pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: poolID})
		if got.GetSpec().GetAutoscaling().GetMax() != 4 || got.GetSpec().GetReplicas() != 0 {
			t.Fatalf("Cluster Service spec %v", got.GetSpec())
		}
		if a := armProperty(t, e, poolARM, "properties.autoScaling.max"); a != 4.0 || armProperty(t, e, poolARM, "properties.replicas") != 0.0 {
			t.Fatalf("ARM autoScaling.max = %v", a)
		}
	})
	t.Run("node_pool_upgrade_along_an_edge", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "POST", upgrade(poolID), `{"version":"4.19.17","reason":"r"}`)
		if code != 200 {
			t.Fatalf("%d %+v", code, ae)
		}
		if got := armProperty(t, e, poolARM, "properties.version.id"); got != "4.19.17" {
			t.Fatalf("ARM version %v", got)
		}
	})

	setARMState(t, e, clusterARM, armdoc.StateSucceeded)
	for _, tc := range []struct {
		name, version string
		want          int
		code, target  string
	}{
		{"cluster_version_without_edge_is_400_on_version", "4.21.0", 400, adminapi.CodeInvalidRequest, "version"},
		{"cluster_downgrade_is_400_on_version", "4.18.27", 400, adminapi.CodeInvalidRequest, "version"},
		{"cluster_upgrade_along_an_edge", "4.20.3", 200, "", ""},
		{"the_same_upgrade_again_only_records_it", "4.20.3", 200, "", ""},
		{"another_upgrade_while_one_is_pending_is_409", "4.20", 409, adminapi.CodeBusy, clusterID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, body := e.call(t, "alice", "POST", upgrade(clusterID), `{"version":"`+tc.version+`","reason":"r"}`)
			if code != tc.want || ae.Code != tc.code || ae.Target != tc.target {
				t.Fatalf("%d %q target %q, want %d %q %q: %s", code, ae.Code, ae.Target, tc.want, tc.code, tc.target, body)
			}
			if code != 200 {
				return
			}
			var ch adminapi.Change
			if err := json.Unmarshal(body, &ch); err != nil || ch.Kind != adminapi.KindCluster || ch.Upgrade == nil || ch.Upgrade.ToVersion != "4.20.3" {
				t.Fatalf("answer %s", body)
			}
			if got := armProperty(t, e, clusterARM, "properties.version.id"); got != "4.20.3" {
				t.Fatalf("ARM version %v", got)
			}
		})
	}
	for _, tc := range []struct {
		name, identity, path, body string
		want                       int
		target, paused             string
	}{
		{"readonly_may_not_pause", "bob", "/admin/v1/pause/" + clusterID, `{"reason":"r"}`, 403, "", ""},
		{"pause_until_a_bad_time_is_400_on_until", "alice", "/admin/v1/pause/" + clusterID, `{"until":"tomorrow","reason":"r"}`, 400, "until", ""},
		{"resume_takes_no_until", "alice", "/admin/v1/resume/" + clusterID, `{"until":"2030-01-01T00:00:00Z","reason":"r"}`, 400, "until", ""},
		{"unknown_cluster_is_404", "alice", "/admin/v1/pause/0000000000000000000000000000000v", `{"reason":"r"}`, 404, "0000000000000000000000000000000v", ""},
		{"pause_until_resumed", "alice", "/admin/v1/pause/" + strings.TrimPrefix(clusterARM, "/"), `{"reason":"INC-3: stop the rollout"}`, 200, "", "true"},
		{"pause_until_a_time", "alice", "/admin/v1/pause/" + clusterID, `{"until":"2030-01-02T15:04:05Z","reason":"r"}`, 200, "", "2030-01-02T15:04:05Z"},
		{"resume", "alice", "/admin/v1/resume/" + clusterID, `{"reason":"INC-3 over"}`, 200, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, body := e.call(t, tc.identity, "POST", tc.path, tc.body)
			if code != tc.want || ae.Target != tc.target {
				t.Fatalf("%d target %q, want %d %q: %s", code, ae.Target, tc.want, tc.target, body)
			}
			if code != 200 {
				return
			}
			got, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID})
			if err != nil || got.GetSpec().GetPausedUntil() != tc.paused {
				t.Fatalf("Cluster Service paused_until %q, want %q (%v)", got.GetSpec().GetPausedUntil(), tc.paused, err)
			}
		})
	}
	t.Run("cluster_if_match_holds_across_a_status_write_and_not_across_a_spec_change", func(t *testing.T) {
		read, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: clusterID})
		if err != nil {
			t.Fatal(err)
		}
		etag := revisionETag(read.GetSpecRevision())
		st := proto.Clone(read.GetStatus()).(*csv1.ClusterStatus)
		st.Message = "a status write between the read and the change"
		if _, err := e.csdb.UpdateStatus(ctx, clusterID, read.GetRevision(), st); err != nil {
			t.Fatal(err)
		}
		code, ae, body := e.call(t, "alice", "POST", "/admin/v1/pause/"+clusterID, `{"reason":"r"}`, "If-Match", etag)
		if code != 200 {
			t.Fatalf("pause after a status write: %d %+v %s; want 200", code, ae, body)
		}
		code, ae, _ = e.call(t, "alice", "POST", "/admin/v1/resume/"+clusterID, `{"reason":"r"}`, "If-Match", etag)
		if code != 412 || ae.Target != "If-Match" {
			t.Fatalf("resume after the pause moved the spec: %d %+v; want 412 on If-Match", code, ae)
		}
		if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/resume/"+clusterID, `{"reason":"r"}`); code != 200 {
			t.Fatalf("unconditional resume: %d %+v", code, ae)
		}
	})
	t.Run("cancel_upgrade", func(t *testing.T) {
		if code, _, _ := e.call(t, "bob", "POST", "/admin/v1/cancel-upgrade/"+clusterID, `{"reason":"r"}`); code != 403 {
			t.Fatalf("reader cancel: %d", code)
		}
		if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/cancel-upgrade/"+clusterID, `{"reason":"r","version":"x"}`); code != 400 || ae.Target != "body" {
			t.Fatalf("unknown field: %d %+v", code, ae)
		}
		for i := range 2 { // the second finds it canceled and only aligns the ARM document
			code, ae, body := e.call(t, "alice", "POST", "/admin/v1/cancel-upgrade/"+clusterID, `{"reason":"CHG-12 postponed"}`)
			var ch adminapi.Change
			if code != 200 || json.Unmarshal(body, &ch) != nil || ch.Upgrade == nil || ch.Upgrade.State != "failed" || !strings.Contains(ch.Upgrade.Message, "canceled: CHG-12 postponed") {
				t.Fatalf("cancel %d: %d %+v %s", i, code, ae, body)
			}
			if got := armProperty(t, e, clusterARM, "properties.version.id"); got != "4.19.17" {
				t.Fatalf("ARM version after the cancel: %v", got)
			}
		}
	})
	t.Run("unknown_shard_drain_status_is_404_naming_it", func(t *testing.T) {
		code, ae, _ := e.call(t, "bob", "GET", "/admin/v1/shards/nope/drain-status", "")
		if code != 404 || ae.Target != "nope" {
			t.Fatalf("%d %+v", code, ae)
		}
	})
}
