package frontend

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// fakeNodePools is a test double of Cluster Service's NodePools service (named as a fake: the
// real one needs Cluster Service's database and controller). It keeps pools by ID, is
// idempotent on the ARM resource ID, makes updates conditional on the revision when one is given
// as the real service does, merges a partial update with the real csv1.ApplyNodePoolUpdate, and
// fails calls on demand.
type fakeNodePools struct {
	csv1.UnimplementedNodePoolsServer
	mu        sync.Mutex
	pools     map[string]*csv1.NodePool
	rev       int64
	creates   []*csv1.CreateNodePoolRequest
	updates   []*csv1.UpdateNodePoolRequest
	deletes   []string
	createErr error
	// clusters, when set, is the fake Clusters service whose specs the defaults read.
	clusters *fakeClusterService
}

func (f *fakeNodePools) CreateNodePool(ctx context.Context, req *csv1.CreateNodePoolRequest) (*csv1.NodePool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates = append(f.creates, req)
	if f.createErr != nil {
		return nil, f.createErr
	}
	for _, p := range f.pools {
		if strings.EqualFold(p.ArmResourceId, req.GetNodePool().GetArmResourceId()) {
			return p, nil
		}
	}
	f.rev++
	p := proto.Clone(req.GetNodePool()).(*csv1.NodePool)
	// Cluster Service's own defaults (its model package), from the cluster the fake Clusters
	// service holds.
	cl := &csv1.ClusterSpec{ChannelGroup: model.DefaultChannelGroup}
	if f.clusters != nil {
		f.clusters.mu.Lock()
		if c, ok := f.clusters.clusters[req.GetNodePool().GetClusterId()]; ok {
			cl = c.GetSpec()
		}
		f.clusters.mu.Unlock()
	}
	p.Spec = model.DefaultNodePool(p.GetSpec(), model.Cluster{Spec: cl}, nil)
	p.Revision, p.SpecRevision, p.Status = f.rev, f.rev, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_PENDING}
	f.pools[p.Id] = p
	return p, nil
}

func (f *fakeNodePools) GetNodePool(ctx context.Context, req *csv1.GetNodePoolRequest) (*csv1.NodePool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pools[req.GetId()]; ok {
		return proto.Clone(p).(*csv1.NodePool), nil
	}
	return nil, status.Error(codes.NotFound, "no such node pool")
}

func (f *fakeNodePools) UpdateNodePool(ctx context.Context, req *csv1.UpdateNodePoolRequest) (*csv1.NodePool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = append(f.updates, req)
	p, ok := f.pools[req.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such node pool")
	}
	if req.GetRevision() != 0 && req.GetRevision() != p.Revision {
		return nil, status.Error(codes.Aborted, "stale revision")
	}
	// The real merge (csv1.ApplyNodePoolUpdate), as Cluster Service applies it.
	spec := csv1.ApplyNodePoolUpdate(p.Spec, req.GetUpdate())
	if as := spec.GetAutoscaling(); as != nil && as.GetMin() < 1 {
		st, _ := status.New(codes.InvalidArgument, "invalid request").WithDetails(&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{
			{Field: "update.autoscaling.min", Description: "must be between 1 and 500, not 0"},
		}})
		return nil, st.Err()
	}
	if !proto.Equal(p.Spec, spec) {
		f.rev++
		p.Spec, p.Revision, p.SpecRevision = spec, f.rev, f.rev
	}
	return proto.Clone(p).(*csv1.NodePool), nil
}

func (f *fakeNodePools) DeleteNodePool(ctx context.Context, req *csv1.DeleteNodePoolRequest) (*csv1.NodePool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes = append(f.deletes, req.GetId())
	p, ok := f.pools[req.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such node pool")
	}
	f.rev++
	p.Revision, p.Status.State = f.rev, csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING
	return p, nil
}

func (f *fakeNodePools) pool(id string) *csv1.NodePool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.pools[id]; ok {
		return proto.Clone(p).(*csv1.NodePool)
	}
	return nil
}

// newNodePoolEnv is newEnv with a fake NodePools service wired in.
func newNodePoolEnv(t testing.TB, mutate ...func(*Config)) (*env, *fakeNodePools) {
	t.Helper()
	fake := &fakeNodePools{pools: map[string]*csv1.NodePool{}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterNodePoolsServer(gs, fake) })
	e := newEnv(t, append([]func(*Config){func(c *Config) { c.NodePools = csv1.NewNodePoolsClient(conn) }}, mutate...)...)
	fake.clusters = e.cs
	return e, fake
}

func poolPath(cluster, name string) string { return clusterPath("rg", cluster) + "/nodePools/" + name }

func minimalPoolBody() map[string]any {
	return map[string]any{
		"location":   testLocation,
		"properties": map[string]any{"replicas": 2, "platform": map[string]any{"vmSize": "Standard_D8s_v3"}},
	}
}

// readyCluster creates a cluster and finishes its create.
func (e *env) readyCluster(t *testing.T, name string) {
	t.Helper()
	resp := e.put(clusterPath("rg", name), minimalBody())
	if resp.code != 201 {
		t.Fatalf("PUT cluster: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
}

// readyPool creates a node pool and finishes its create; it returns the pool's CS ID.
func (e *env) readyPool(t *testing.T, cluster, name string, body map[string]any) string {
	t.Helper()
	resp := e.put(poolPath(cluster, name), body)
	if resp.code != 201 {
		t.Fatalf("PUT node pool: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(poolPath(cluster, name))
	return rd.InternalID
}

func TestPutNodePool(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, e *env)
		path       string
		body       map[string]any
		header     map[string]string
		wantCode   int
		wantError  string
		wantTarget string
	}{
		{name: "create_returns_201_accepted_with_async_header", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "np1"), body: minimalPoolBody(), wantCode: 201},
		{name: "missing_parent_cluster_returns_404", path: poolPath("nope", "np1"), body: minimalPoolBody(), wantCode: 404, wantError: "ParentResourceNotFound"},
		{name: "invalid_name_returns_400", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "this-name-is-too-long"), body: minimalPoolBody(), wantCode: 400, wantError: "InvalidResourceName", wantTarget: "name"},
		{name: "missing_vm_size_names_the_field", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "np1"), body: set(minimalPoolBody(), "properties.platform.vmSize", nil), wantCode: 400, wantError: "InvalidRequestContent", wantTarget: "properties.platform.vmSize"},
		{name: "several_problems_are_multiple_errors", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "np1"), body: set(set(minimalPoolBody(), "properties.replicas", -1), "properties.platform.osDisk.sizeGiB", 32),
			wantCode: 400, wantError: "MultipleErrorsOccurred"},
		{name: "unknown_field_names_its_path", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "np1"), body: set(minimalPoolBody(), "properties.platform.osDisk.diskType", "Managed"),
			wantCode: 400, wantError: "InvalidRequestContent", wantTarget: "properties.platform.osDisk.diskType"},
		{name: "wrong_location_returns_400", setup: func(t *testing.T, e *env) { e.readyCluster(t, "c1") },
			path: poolPath("c1", "np1"), body: set(minimalPoolBody(), "location", "westeurope"), wantCode: 400, wantError: "InvalidRequestContent", wantTarget: "location"},
		{name: "parent_cluster_being_created_returns_409", setup: func(t *testing.T, e *env) {
			if resp := e.put(clusterPath("rg", "c1"), minimalBody()); resp.code != 201 {
				t.Fatalf("PUT cluster: %d", resp.code)
			}
		}, path: poolPath("c1", "np1"), body: minimalPoolBody(), wantCode: 409, wantError: "Conflict"},
		{name: "parent_cluster_being_deleted_returns_409", setup: func(t *testing.T, e *env) {
			e.readyCluster(t, "c1")
			if resp := e.do("DELETE", clusterPath("rg", "c1"), nil, nil); resp.code != 202 {
				t.Fatalf("DELETE cluster: %d", resp.code)
			}
		}, path: poolPath("c1", "np1"), body: minimalPoolBody(), wantCode: 409, wantError: "Conflict"},
		{name: "if_none_match_star_on_existing_returns_412", setup: func(t *testing.T, e *env) {
			e.readyCluster(t, "c1")
			e.readyPool(t, "c1", "np1", minimalPoolBody())
		}, path: poolPath("c1", "np1"), body: minimalPoolBody(), header: map[string]string{"If-None-Match": "*"}, wantCode: 412, wantError: "PreconditionFailed"},
		{name: "if_match_mismatch_returns_412", setup: func(t *testing.T, e *env) {
			e.readyCluster(t, "c1")
			e.readyPool(t, "c1", "np1", minimalPoolBody())
		}, path: poolPath("c1", "np1"), body: minimalPoolBody(), header: map[string]string{"If-Match": `"nope"`}, wantCode: 412, wantError: "PreconditionFailed"},
		{name: "changing_vm_size_is_not_allowed", setup: func(t *testing.T, e *env) {
			e.readyCluster(t, "c1")
			e.readyPool(t, "c1", "np1", minimalPoolBody())
		}, path: poolPath("c1", "np1"), body: set(minimalPoolBody(), "properties.platform.vmSize", "Standard_D4s_v3"),
			wantCode: 400, wantError: "PropertyChangeNotAllowed", wantTarget: "properties.platform.vmSize"},
		{name: "write_during_create_returns_409_naming_it", setup: func(t *testing.T, e *env) {
			e.readyCluster(t, "c1")
			if resp := e.put(poolPath("c1", "np1"), minimalPoolBody()); resp.code != 201 {
				t.Fatalf("PUT pool: %d", resp.code)
			}
		}, path: poolPath("c1", "np1"), body: set(minimalPoolBody(), "properties.replicas", 5), wantCode: 409, wantError: "Conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake := newNodePoolEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			resp := e.do("PUT", tc.path, mustJSON(tc.body), tc.header)
			if resp.code != tc.wantCode {
				t.Fatalf("status %d, want %d: %s", resp.code, tc.wantCode, resp.body)
			}
			if tc.wantError != "" {
				code, target := resp.armError(t)
				if code != tc.wantError || (tc.wantTarget != "" && target != tc.wantTarget) {
					t.Fatalf("error %s target %q, want %s %q: %s", code, target, tc.wantError, tc.wantTarget, resp.body)
				}
				if tc.wantCode == 409 && !strings.Contains(string(resp.body), "operation") && !strings.Contains(string(resp.body), "deleted") {
					t.Fatalf("409 does not name the operation: %s", resp.body)
				}
				return
			}
			if resp.header.Get("Azure-AsyncOperation") == "" {
				t.Fatalf("no Azure-AsyncOperation header")
			}
			got := resp.json(t)
			props := got["properties"].(map[string]any)
			if props["provisioningState"] != "Accepted" || props["autoRepair"] != true ||
				props["platform"].(map[string]any)["osDisk"].(map[string]any)["diskStorageAccountType"] != "Premium_LRS" ||
				props["platform"].(map[string]any)["subnetId"] == nil || props["version"].(map[string]any)["channelGroup"] != "stable" {
				t.Fatalf("defaults not applied: %s", resp.body)
			}
			rd, _ := e.resource(tc.path)
			p := fake.pool(rd.InternalID)
			if p == nil || p.ClusterId == "" || p.Spec.GetReplicas() != 2 || p.Spec.GetPlatform().GetVmSize() != "Standard_D8s_v3" ||
				p.Spec.GetPlatform().GetSubnetId() == "" || !strings.EqualFold(p.ArmResourceId, tc.path) {
				t.Fatalf("Cluster Service got %+v", p)
			}
		})
	}
}

func TestNodePoolLifecycle(t *testing.T) {
	e, fake := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	csID := e.readyPool(t, "c1", "np1", minimalPoolBody())
	path := poolPath("c1", "np1")

	t.Run("get_returns_the_pool_with_etag", func(t *testing.T) {
		resp := e.do("GET", path, nil, nil)
		if resp.code != 200 || resp.header.Get("ETag") == "" {
			t.Fatalf("GET: %d %s", resp.code, resp.body)
		}
		got := resp.json(t)
		if got["type"] != "Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nodePools" || got["name"] != "np1" ||
			got["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
			t.Fatalf("GET body: %s", resp.body)
		}
		if again := e.do("GET", path, nil, map[string]string{"If-None-Match": resp.header.Get("ETag")}); again.code != 304 {
			t.Fatalf("If-None-Match: %d", again.code)
		}
	})
	t.Run("put_scale_calls_update_with_revision_and_records_it", func(t *testing.T) {
		before := fake.pool(csID).GetRevision()
		resp := e.put(path, set(minimalPoolBody(), "properties.replicas", 4))
		if resp.code != 200 || resp.json(t)["properties"].(map[string]any)["provisioningState"] != "Updating" {
			t.Fatalf("PUT scale: %d %s", resp.code, resp.body)
		}
		fake.mu.Lock()
		last := fake.updates[len(fake.updates)-1]
		fake.mu.Unlock()
		// A PUT is a full update (every updatable field), sent without a revision read from
		// Cluster Service; the platform is not part of an update and stays as created.
		if last.GetRevision() != 0 || last.GetUpdate().GetReplicas() != 4 || last.GetUpdate().GetLabels() == nil || last.GetUpdate().AutoRepair == nil {
			t.Fatalf("UpdateNodePool got %+v, want a full update with replicas 4", last)
		}
		if p := fake.pool(csID); p.GetRevision() <= before || p.GetSpec().GetReplicas() != 4 || p.GetSpec().GetPlatform().GetVmSize() != "Standard_D8s_v3" {
			t.Fatalf("Cluster Service has %+v, want replicas 4 with the platform kept", p)
		}
		op, _ := e.operation(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")))
		if op.Request != armdoc.OperationUpdate || op.InternalRevision != fake.pool(csID).GetRevision() || op.InternalID != csID {
			t.Fatalf("operation %+v, want an update at revision %d", op, fake.pool(csID).GetRevision())
		}
		if again := e.put(path, set(minimalPoolBody(), "properties.replicas", 5)); again.code != 409 {
			t.Fatalf("PUT during update: %d %s", again.code, again.body)
		}
		e.finish(op.ID, armdoc.StateSucceeded, nil)
	})
	t.Run("patch_enables_autoscaling_and_drops_replicas", func(t *testing.T) {
		resp := e.do("PATCH", path, mustJSON(map[string]any{"properties": map[string]any{"autoScaling": map[string]any{"min": 2, "max": 6}}}), nil)
		if resp.code != 202 || resp.header.Get("Location") == "" {
			t.Fatalf("PATCH: %d %s", resp.code, resp.body)
		}
		p := fake.pool(csID)
		if p.Spec.GetAutoscaling().GetMax() != 6 || p.Spec.GetReplicas() != 0 {
			t.Fatalf("Cluster Service spec %+v", p.Spec)
		}
		opID := opIDFrom(t, resp.header.Get("Azure-AsyncOperation"))
		e.finish(opID, armdoc.StateSucceeded, nil)
		result := e.do("GET", "/subscriptions/"+testSub+"/providers/Microsoft.RedHatOpenShift/locations/"+testLocation+"/hcpOperationResults/"+opID, nil, nil)
		props := result.json(t)["properties"].(map[string]any)
		if result.code != 200 || props["autoScaling"].(map[string]any)["max"] != float64(6) || props["replicas"] != nil {
			t.Fatalf("operation result: %d %s", result.code, result.body)
		}
	})
	t.Run("patch_cluster_service_refusal_names_the_field", func(t *testing.T) {
		resp := e.do("PATCH", path, mustJSON(map[string]any{"properties": map[string]any{"autoScaling": map[string]any{"min": 0, "max": 6}}}), nil)
		if code, target := resp.armError(t); resp.code != 400 || target != "properties.autoScaling.min" {
			t.Fatalf("PATCH min 0: %d %s %s", resp.code, code, resp.body)
		}
	})
	t.Run("patch_outside_update_schema_names_the_field", func(t *testing.T) {
		resp := e.do("PATCH", path, mustJSON(map[string]any{"properties": map[string]any{"platform": map[string]any{"vmSize": "x"}}}), nil)
		if _, target := resp.armError(t); resp.code != 400 || target != "properties.platform" {
			t.Fatalf("PATCH platform: %d %s", resp.code, resp.body)
		}
	})
	t.Run("patch_tags_only_needs_no_cluster_service_call", func(t *testing.T) {
		fake.mu.Lock()
		n := len(fake.updates)
		fake.mu.Unlock()
		resp := e.do("PATCH", path, mustJSON(map[string]any{"tags": map[string]any{"team": "a"}}), nil)
		if resp.code != 202 {
			t.Fatalf("PATCH tags: %d %s", resp.code, resp.body)
		}
		op, _ := e.operation(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")))
		fake.mu.Lock()
		m := len(fake.updates)
		fake.mu.Unlock()
		if op.Status != armdoc.StateSucceeded || m != n {
			t.Fatalf("tag PATCH: operation %s, %d Cluster Service updates", op.Status, m-n)
		}
	})
	t.Run("list_by_cluster", func(t *testing.T) {
		e.readyPool(t, "c1", "np2", minimalPoolBody())
		resp := e.do("GET", clusterPath("rg", "c1")+"/nodePools", nil, nil)
		if resp.code != 200 || len(resp.json(t)["value"].([]any)) != 2 {
			t.Fatalf("list: %d %s", resp.code, resp.body)
		}
		clusters := e.do("GET", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters", nil, nil)
		if n := len(clusters.json(t)["value"].([]any)); n != 1 {
			t.Fatalf("cluster list shows %d items, want the cluster only: %s", n, clusters.body)
		}
		if missing := e.do("GET", clusterPath("rg", "nope")+"/nodePools", nil, nil); missing.code != 404 {
			t.Fatalf("list under a missing cluster: %d", missing.code)
		}
	})
	t.Run("delete_returns_202_then_204", func(t *testing.T) {
		resp := e.do("DELETE", path, nil, nil)
		if resp.code != 202 || resp.header.Get("Location") == "" {
			t.Fatalf("DELETE: %d %s", resp.code, resp.body)
		}
		if p := fake.pool(csID); p.Status.State != csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING {
			t.Fatalf("Cluster Service pool %s", p.Status.State)
		}
		again := e.do("DELETE", path, nil, nil)
		if again.code != 202 || opIDFrom(t, again.header.Get("Azure-AsyncOperation")) != opIDFrom(t, resp.header.Get("Azure-AsyncOperation")) {
			t.Fatalf("DELETE during delete should return the running operation: %d", again.code)
		}
		e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		if gone := e.do("GET", path, nil, nil); gone.code != 404 {
			t.Fatalf("GET after delete: %d", gone.code)
		}
		if gone := e.do("DELETE", path, nil, nil); gone.code != 204 {
			t.Fatalf("DELETE after delete: %d", gone.code)
		}
	})
}

// TestNodePoolOlderVersionKeepsNewerFields: a PUT through 2024-06-10-preview, which has no
// osDisk.diskType, keeps the one 2025-12-23-preview set.
func TestNodePoolOlderVersionKeepsNewerFields(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	body := set(set(minimalPoolBody(), "properties.platform.osDisk.diskType", "Ephemeral"), "properties.version.id", "4.19")
	resp := e.do("PUT", poolPath("c1", "np1")+"?api-version=2025-12-23-preview", mustJSON(body), nil)
	if resp.code != 201 {
		t.Fatalf("PUT 2025-12-23: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	old := e.do("PUT", poolPath("c1", "np1")+"?api-version=2024-06-10-preview", mustJSON(set(minimalPoolBody(), "tags", map[string]any{"a": "b"})), nil)
	if old.code != 200 {
		t.Fatalf("PUT 2024-06-10: %d %s", old.code, old.body)
	}
	got := e.do("GET", poolPath("c1", "np1")+"?api-version=2026-09-01-preview", nil, nil)
	osDisk := got.json(t)["properties"].(map[string]any)["platform"].(map[string]any)["osDisk"].(map[string]any)
	if got.code != 200 || osDisk["diskType"] != "Ephemeral" {
		t.Fatalf("diskType after a 2024-06-10 PUT: %s", got.body)
	}
	if resp := e.do("PUT", poolPath("c1", "np2")+"?api-version=2025-12-23-preview", mustJSON(set(minimalPoolBody(), "properties.version", map[string]any{"channelGroup": "stable"})), nil); resp.code != 400 {
		t.Fatalf("2025-12-23 without version.id: %d %s", resp.code, resp.body)
	} else if _, target := resp.armError(t); target != "properties.version.id" {
		t.Fatalf("target %q", target)
	}

}

// TestNodePoolWithoutVersionIDThroughNewerVersions: NodePoolVersionProfile.id is required from
// 2025-12-23-preview on. A pool created through 2024-06-10-preview with a channel group and no
// id shows the version Cluster Service gave it (its cluster's) there (e.do validates every
// answer against the schema), and a PUT of that body or a PATCH through the newer version keeps
// working.
func TestNodePoolWithoutVersionIDThroughNewerVersions(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	path := poolPath("c1", "np1")
	e.readyPool(t, "c1", "np1", set(minimalPoolBody(), "properties.version", map[string]any{"channelGroup": "candidate"}))
	for _, v := range []string{"2025-12-23-preview", "2026-06-30-preview", "2026-09-01-preview"} {
		got := e.do("GET", withVersion(path, v), nil, nil)
		ver, _ := got.json(t)["properties"].(map[string]any)["version"].(map[string]any)
		if got.code != 200 || ver["id"] != "4.19.7" || ver["channelGroup"] != "candidate" {
			t.Fatalf("GET through %s: %d version %v; want Cluster Service's id (the cluster's) and the channel group", v, got.code, ver)
		}
		r := e.do("PUT", withVersion(path, v), got.body, nil)
		if r.code != 200 {
			t.Fatalf("PUT of the GET body through %s: %d %s", v, r.code, r.body)
		}
		if h := r.header.Get("Azure-AsyncOperation"); h != "" {
			e.finish(opIDFrom(t, h), armdoc.StateSucceeded, nil)
		}
		p := e.do("PATCH", withVersion(path, v), []byte(`{"properties":{"replicas":3}}`), nil)
		if p.code != 202 {
			t.Fatalf("PATCH through %s: %d %s", v, p.code, p.body)
		}
		e.finish(opIDFrom(t, p.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	}
}

// TestNodePoolCreateStoresDefaultsWithItsFirstWrite: a node pool's create writes Cluster
// Service's defaults (model.DefaultNodePool, from the cluster Cluster Service holds) with its
// first write and sends them to Cluster Service, so a create whose answer is lost (Cluster
// Service unreachable: the documents stay for the retry) leaves a document that holds them,
// the retry and the GET show them, and a PUT of what the GET showed is no change.
func TestNodePoolCreateStoresDefaultsWithItsFirstWrite(t *testing.T) {
	e, fake := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	crd, _ := e.resource(clusterPath("rg", "c1"))
	cl, err := e.cs.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: crd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
	want := model.DefaultNodePool(&csv1.NodePoolSpec{}, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil)
	wantProps := map[string]any{
		"version.id": want.GetVersionId(), "version.channelGroup": want.GetChannelGroup(),
		"platform.subnetId":                      want.GetPlatform().GetSubnetId(),
		"platform.osDisk.sizeGiB":                float64(want.GetPlatform().GetOsDiskSizeGib()),
		"platform.osDisk.diskStorageAccountType": want.GetPlatform().GetOsDiskStorageAccountType(),
	}
	check := func(what string, props map[string]any) {
		t.Helper()
		for path, v := range wantProps {
			var at any = props
			for _, k := range strings.Split(path, ".") {
				m, _ := at.(map[string]any)
				at = m[k]
			}
			if at != v {
				t.Errorf("%s: properties.%s = %v, want Cluster Service's default %v", what, path, at, v)
			}
		}
	}

	path := poolPath("c1", "np1")
	fake.mu.Lock()
	fake.createErr = status.Error(codes.Unavailable, "connection refused")
	fake.mu.Unlock()
	if resp := e.put(path, minimalPoolBody()); resp.code != 503 {
		t.Fatalf("PUT while Cluster Service is unreachable = %d %s, want 503", resp.code, resp.body)
	}
	fake.mu.Lock()
	fake.createErr = nil
	sent := proto.Clone(fake.creates[0].GetNodePool().GetSpec()).(*csv1.NodePoolSpec)
	fake.mu.Unlock()
	rd, _ := e.resource(path)
	var stored map[string]any
	if err := json.Unmarshal(rd.Properties, &stored); err != nil {
		t.Fatal(err)
	}
	check("the create's first write", stored["properties"].(map[string]any))
	if d := model.DefaultNodePool(sent, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil); !proto.Equal(d, sent) {
		t.Errorf("Cluster Service was sent %v, which lacks defaults it would fill: %v", sent, d)
	}

	retry := e.put(path, minimalPoolBody())
	if retry.code != 201 {
		t.Fatalf("retry = %d %s, want 201", retry.code, retry.body)
	}
	check("the retry's answer", retry.json(t)["properties"].(map[string]any))
	e.finish(opIDFrom(t, retry.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	got := e.do("GET", path, nil, nil)
	shown := got.json(t)["properties"].(map[string]any)
	check("GET", shown)
	body := minimalPoolBody()
	body["properties"] = shown
	if resp := e.put(path, body); resp.code != 200 {
		t.Fatalf("PUT of what the GET showed = %d %s, want 200", resp.code, resp.body)
	}
}

// TestNodePoolLargerOSDiskThanALaterVersionAllows: a pool created through an api-version without
// an OS disk maximum (2025-12-23-preview) with a disk larger than a later version's maximum
// (4095 GiB from 2026-06-30-preview on) is not refused a later version's writes that keep its
// disk; a create through that version is held to the maximum. (Such a pool cannot be rendered
// within the later version's response schema, which bounds the size too, so only writes are
// tried here; Cluster Service has refused such a disk on create since it took the
// specification's bounds, and Azure offers no OS disk that large.)
func TestNodePoolLargerOSDiskThanALaterVersionAllows(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	e.readyCluster(t, "c1")
	body := minimalPoolBody()
	set(body, "properties.version", map[string]any{"id": "4.19.7"})
	set(body, "properties.platform.osDisk", map[string]any{"sizeGiB": 5000})
	path := poolPath("c1", "big")
	resp := e.do("PUT", withVersion(path, "2025-12-23-preview"), mustJSON(body), nil)
	if resp.code != 201 {
		t.Fatalf("PUT through 2025-12-23-preview = %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	for _, v := range []string{"2026-06-30-preview", "2026-09-01-preview"} {
		patch := mustJSON(map[string]any{"properties": map[string]any{"labels": []any{map[string]any{"key": "team", "value": v[:4]}}}})
		resp := e.do("PATCH", withVersion(path, v), patch, nil)
		if resp.code != 200 && resp.code != 202 {
			t.Fatalf("PATCH of labels through %s = %d %s, want it accepted", v, resp.code, resp.body)
		}
		if op := resp.header.Get("Azure-AsyncOperation"); op != "" {
			e.finish(opIDFrom(t, op), armdoc.StateSucceeded, nil)
		}
	}
	resp = e.do("PUT", withVersion(poolPath("c1", "big2"), "2026-09-01-preview"), mustJSON(body), nil)
	if resp.code != 400 || !strings.Contains(string(resp.body), "properties.platform.osDisk.sizeGiB") {
		t.Fatalf("create with a 5000 GiB disk through 2026-09-01-preview = %d %s, want 400 naming the size", resp.code, resp.body)
	}
}
