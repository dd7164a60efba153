package frontend

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// fakeVersions serves Cluster Service's Versions API from the catalogue Cluster Service ships
// (a fake of the service, with its real data).
type fakeVersions struct {
	csv1.UnimplementedVersionsServer
	cat *versions.Catalogue
}

func (f *fakeVersions) ListVersions(_ context.Context, req *csv1.ListVersionsRequest) (*csv1.ListVersionsResponse, error) {
	resp := &csv1.ListVersionsResponse{}
	for _, g := range f.cat.Groups() {
		if req.GetChannelGroup() != "" && g != req.GetChannelGroup() {
			continue
		}
		vs, _ := f.cat.Versions(g)
		for _, v := range vs {
			resp.Versions = append(resp.Versions, &csv1.Version{Id: v.ID, ChannelGroup: g, Enabled: v.Enabled,
				EndOfLife: timestamppb.New(v.EndOfLife), AvailableUpgrades: v.Upgrades})
		}
	}
	return resp, nil
}

// withVersions serves the fake Versions API to the frontend under test.
func withVersions(t testing.TB) (func(*Config), *versions.Catalogue) {
	t.Helper()
	cat, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterVersionsServer(gs, &fakeVersions{cat: cat}) })
	return func(c *Config) { c.Versions = csv1.NewVersionsClient(conn) }, cat
}

var updateMu sync.Mutex
var updateCalls []*csv1.UpdateClusterRequest

// UpdateCluster validates like Cluster Service with its real catalogue: the stored version is
// resolved as CreateCluster would have, the target along the upgrade edges, and an upgrade is
// recorded as a PENDING policy carrying the operation ID.
func (f *fakeClusterService) UpdateCluster(_ context.Context, req *csv1.UpdateClusterRequest) (*csv1.Cluster, error) {
	cat, _ := versions.Default()
	updateMu.Lock()
	updateCalls = append(updateCalls, req)
	updateMu.Unlock()
	f.mu.Lock()
	hook := f.beforeUpdateAnswer
	f.mu.Unlock()
	if hook != nil {
		hook(req)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[req.GetId()]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such cluster")
	}
	group := c.GetSpec().GetChannelGroup()
	if group == "" {
		group = "stable"
	}
	now := time.Now()
	if want := req.GetUpdate().GetVersionId(); want != "" {
		cur, err := cat.Resolve(group, c.GetSpec().GetVersionId(), now)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "stored version: %v", err)
		}
		to, err := cat.ResolveUpgrade(group, cur, want, now)
		if err != nil {
			st, _ := status.New(codes.InvalidArgument, "invalid request: update.version_id: "+err.Error()).WithDetails(&errdetails.BadRequest{
				FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "update.version_id", Description: err.Error()}}})
			return nil, st.Err()
		}
		if to != cur {
			c.Status.Upgrade = &csv1.UpgradePolicy{Id: "p-" + req.GetOperationId(), FromVersion: cur, ToVersion: to, OperationId: req.GetOperationId(),
				State: csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING}
		}
	}
	if g := req.GetUpdate().GetChannelGroup(); g != "" {
		c.Spec.ChannelGroup = g
	}
	if u := req.GetUpdate(); u.NodeDrainTimeoutMinutes != nil || u.GetAutoscaling() != nil || u.GetApiAuthorizedCidrs() != nil ||
		u.GetImageDigestMirrors() != nil || u.GetEtcdEncryptionKeyVersion() != "" || u.GetWorkloadIdentities() != nil {
		c.Revision++ // a configuration change is a new revision, as in Cluster Service
		c.SpecRevision = c.Revision
		// The configuration is held as Cluster Service holds it (csv1.ApplyClusterUpdate); the
		// version and channel group are handled above, the workload identities below.
		cfg := proto.Clone(u).(*csv1.ClusterUpdate)
		cfg.VersionId, cfg.ChannelGroup, cfg.WorkloadIdentities = "", "", nil
		c.Spec = csv1.ApplyClusterUpdate(c.Spec, cfg)
	}
	if wi := req.GetUpdate().GetWorkloadIdentities(); wi != nil && c.GetSpec().GetAzure() != nil {
		c.Spec.Azure.WorkloadIdentities = wi
	}
	return c, nil
}

// TestSpecExamplesVersions drives the HcpOpenShiftVersions_List and _Get examples of every
// api-version through the handlers and validates the answers against the spec's schemas. The
// examples' location and version name are changed to what this region serves (the example's
// 4.18.1 is not in the catalogue); everything else comes from the catalogue.
func TestSpecExamplesVersions(t *testing.T) {
	mutate, cat := withVersions(t)
	e := newEnv(t, mutate)
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			so := loadSpecOperations(t, ver)
			xs := loadExamples(t, ver, "HcpOpenShiftVersions_")
			if len(xs) != 2 {
				t.Fatalf("%d examples; want List and Get", len(xs))
			}
			for _, x := range xs {
				base := "/subscriptions/" + x.param(t, "subscriptionId") + "/providers/Microsoft.RedHatOpenShift/locations/" + testLocation + "/hcpOpenShiftVersions"
				q := "?api-version=" + x.param(t, "api-version")
				switch x.OperationID {
				case "HcpOpenShiftVersions_List":
					e.registerSubscription(x.param(t, "subscriptionId"), armdoc.SubscriptionRegistered)
					resp := e.do("GET", base+q, nil, nil)
					if resp.code != 200 {
						t.Fatalf("%s: %d %s", x.file, resp.code, resp.body)
					}
					so.checkResponse(t, x.OperationID, resp)
					value := resp.json(t)["value"].([]any)
					if len(value) != 7 { // stable's six and candidate's 4.21.0; 4.20.3 once, under stable
						t.Fatalf("%d versions: %s", len(value), resp.body)
					}
					first := value[0].(map[string]any)
					if first["name"] != "4.17.44" || first["id"] != base+"/4.17.44" { // the ID keeps the path's spelling
						t.Fatalf("first version %v; want 4.17.44 (numeric order)", first)
					}
				case "HcpOpenShiftVersions_Get":
					e.registerSubscription(x.param(t, "subscriptionId"), armdoc.SubscriptionRegistered)
					for _, tc := range []struct{ name, group string }{{"4.19.17", "stable"}, {"4.20.3", "stable"}, {"4.21.0", "candidate"}} {
						resp := e.do("GET", base+"/"+tc.name+q, nil, nil)
						if resp.code != 200 {
							t.Fatalf("%s %s: %d %s", x.file, tc.name, resp.code, resp.body)
						}
						so.checkResponse(t, x.OperationID, resp)
						want, _ := cat.Get(tc.group, tc.name)
						props := resp.json(t)["properties"].(map[string]any)
						if props["channelGroup"] != tc.group || props["enabled"] != want.Enabled || props["endOfLifeTimestamp"] != want.EndOfLife.UTC().Format(time.RFC3339) {
							t.Fatalf("%s: properties %v; want %s %+v", tc.name, props, tc.group, want)
						}
					}
					resp := e.do("GET", base+"/"+x.param(t, "hcpOpenShiftVersionName")+q, nil, nil)
					if code, _ := resp.armError(t); resp.code != 404 || code != "ResourceNotFound" {
						t.Fatalf("unknown version %s: %d %s", x.param(t, "hcpOpenShiftVersionName"), resp.code, resp.body)
					}
				default:
					t.Fatalf("example %s of unexpected operation %s", x.file, x.OperationID)
				}
			}
		})
	}
	t.Run("other_location_is_404", func(t *testing.T) {
		resp := e.do("GET", "/subscriptions/"+testSub+"/providers/Microsoft.RedHatOpenShift/locations/westus/hcpOpenShiftVersions", nil, nil)
		if resp.code != 404 {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
	})
}

func TestClusterVersionUpdate(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "upgraded")
	created := e.put(path, set(minimalBody(), "properties.version.id", "4.19"))
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	const newer = "?api-version=2026-09-01-preview"

	for _, tc := range []struct {
		name, method, path, body string
		code                     int
		errCode, target, msg     string
	}{
		{"downgrade_by_patch_is_400_on_the_version", "PATCH", path + newer, `{"properties":{"version":{"id":"4.18"}}}`,
			400, "InvalidRequestContent", "properties.version.id", "Cannot downgrade from 4.19.17 to 4.18"},
		{"skipping_a_minor_is_400", "PATCH", path + newer, `{"properties":{"version":{"id":"4.21"}}}`,
			400, "InvalidRequestContent", "properties.version.id", "not available in channel group stable"},
		{"version_change_through_2024_is_not_allowed", "PATCH", path + "?api-version=2024-06-10-preview", `{"properties":{"version":{"id":"4.20"}}}`,
			400, "PropertyChangeNotAllowed", "properties.version.id", "cannot be changed after the cluster is created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, tc.path, []byte(tc.body), nil)
			code, target := resp.armError(t)
			if resp.code != tc.code || code != tc.errCode || target != tc.target || !strings.Contains(string(resp.body), tc.msg) {
				t.Fatalf("%d %s; want %d %s on %s saying %q", resp.code, resp.body, tc.code, tc.errCode, tc.target, tc.msg)
			}
			rd, _ := e.resource(path)
			if rd.ActiveOperationID != "" || rd.ProvisioningState != armdoc.StateSucceeded {
				t.Fatalf("a refused update left operation %q, state %s", rd.ActiveOperationID, rd.ProvisioningState)
			}
		})
	}

	// The backend reacts to a new operation at once (it records it as Updating), so by the time
	// Cluster Service refuses, the documents the frontend wrote may have new ETags: the refused
	// update must still be undone (TestUpgradeThroughARM caught a cluster left Updating).
	t.Run("refused_update_is_undone_after_the_backend_touched_its_operation", func(t *testing.T) {
		e.cs.mu.Lock()
		e.cs.beforeUpdateAnswer = func(req *csv1.UpdateClusterRequest) {
			op, opDoc := e.operation(req.GetOperationId())
			rd, resDoc := e.resource(path)
			op.Status, op.LastTransitionTime = armdoc.StateUpdating, time.Now().UTC()
			rd.ProvisioningState = armdoc.StateUpdating
			if _, err := e.store.Transact(context.Background(), opDoc.PartitionKey, []docstore.TxOp{
				{Kind: docstore.TxReplace, Doc: mustWithBody(opDoc, op), IfMatch: opDoc.ETag},
				{Kind: docstore.TxReplace, Doc: mustWithBody(resDoc, rd), IfMatch: resDoc.ETag},
			}); err != nil {
				t.Errorf("play the backend: %v", err)
			}
		}
		e.cs.mu.Unlock()
		defer func() { e.cs.mu.Lock(); e.cs.beforeUpdateAnswer = nil; e.cs.mu.Unlock() }()
		resp := e.do("PATCH", path+newer, []byte(`{"properties":{"version":{"id":"4.18"}}}`), nil)
		if code, target := resp.armError(t); resp.code != 400 || code != "InvalidRequestContent" || target != "properties.version.id" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		rd, _ := e.resource(path)
		if rd.ActiveOperationID != "" || rd.ProvisioningState != armdoc.StateSucceeded {
			t.Fatalf("the refused update left operation %q, state %s", rd.ActiveOperationID, rd.ProvisioningState)
		}
		updateMu.Lock()
		opID := updateCalls[len(updateCalls)-1].GetOperationId()
		updateMu.Unlock()
		if op, _ := e.operation(opID); op != nil {
			t.Fatalf("the refused update's operation is still there: %+v", op)
		}
	})

	t.Run("upgrade_by_patch_is_202_and_an_updating_operation", func(t *testing.T) {
		resp := e.do("PATCH", path+newer, []byte(`{"properties":{"version":{"id":"4.20"}}}`), nil)
		if resp.code != 202 || resp.header.Get("Location") == "" || resp.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("%d %v %s", resp.code, resp.header, resp.body)
		}
		opID := opIDFrom(t, resp.header.Get("Azure-AsyncOperation"))
		op, _ := e.operation(opID)
		rd, _ := e.resource(path)
		if op.Request != armdoc.OperationUpdate || op.Status.Terminal() || rd.ActiveOperationID != opID || rd.ProvisioningState != armdoc.StateUpdating {
			t.Fatalf("operation %+v, resource %s/%s", op, rd.ActiveOperationID, rd.ProvisioningState)
		}
		updateMu.Lock()
		last := updateCalls[len(updateCalls)-1]
		updateMu.Unlock()
		if last.GetId() != rd.InternalID || last.GetUpdate().GetVersionId() != "4.20" || last.GetOperationId() != opID {
			t.Fatalf("UpdateCluster %v; want version 4.20 for operation %s", last, opID)
		}
		got := e.do("GET", path+newer, nil, nil)
		if v := got.json(t)["properties"].(map[string]any)["version"].(map[string]any)["id"]; v != "4.20" {
			t.Fatalf("GET shows version %v", v)
		}
		// The same PATCH again is its retry (joinClusterUpdate): it joins the upgrade, which
		// Cluster Service follows by the operation ID; another write is a 409.
		again := e.do("PATCH", path+newer, []byte(`{"properties":{"version":{"id":"4.20"}}}`), nil)
		if again.code != 202 || opIDFrom(t, again.header.Get("Azure-AsyncOperation")) != opID {
			t.Fatalf("the same PATCH during the upgrade: %d %s, want 202 pointing at %s", again.code, again.body, opID)
		}
		other := e.do("PATCH", path+newer, []byte(`{"tags":{"a":"b"}}`), nil)
		if code, _ := other.armError(t); other.code != 409 || code != "Conflict" {
			t.Fatalf("a second write during the upgrade: %d %s", other.code, other.body)
		}
		e.finish(opID, armdoc.StateSucceeded, nil)
	})

	t.Run("channel_group_only_put_finishes_at_once", func(t *testing.T) {
		body := e.do("GET", path+newer, nil, nil).json(t)
		body["properties"].(map[string]any)["version"].(map[string]any)["channelGroup"] = "candidate"
		delete(body, "systemData")
		resp := e.do("PUT", path+newer, mustJSON(body), nil)
		if resp.code != 200 || resp.header.Get("Azure-AsyncOperation") == "" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		op, _ := e.operation(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")))
		rd, _ := e.resource(path)
		if op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
			t.Fatalf("operation %s, resource %s (%q); want both Succeeded", op.Status, rd.ProvisioningState, rd.ActiveOperationID)
		}
	})
}
