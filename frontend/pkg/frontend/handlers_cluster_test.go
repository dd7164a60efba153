package frontend

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

var csIDRE = regexp.MustCompile(`^[0-9a-v]{32}$`)

func TestPutCluster(t *testing.T) {
	e := newEnv(t)

	t.Run("create_returns_201_accepted_with_async_header", func(t *testing.T) {
		path := clusterPath("RG-One", "Dev-1")
		resp := e.do("PUT", path, mustJSON(minimalBody()), map[string]string{
			"x-ms-arm-resource-system-data": `{"createdBy":"a@b.c","createdByType":"User","createdAt":"2025-01-02T03:04:05Z"}`,
			"Referer":                       "https://management.azure.com" + path + "?api-version=" + testVersion,
		})
		if resp.code != 201 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		body := resp.json(t)
		props := body["properties"].(map[string]any)
		if props["provisioningState"] != "Accepted" || body["id"] != path || body["name"] != "Dev-1" ||
			body["type"] != "Microsoft.RedHatOpenShift/hcpOpenShiftClusters" {
			t.Fatalf("body %s", resp.body)
		}
		if props["network"].(map[string]any)["podCidr"] != "10.128.0.0/14" {
			t.Fatalf("defaults not rendered: %v", props["network"])
		}
		if sd := body["systemData"].(map[string]any); sd["createdBy"] != "a@b.c" {
			t.Fatalf("systemData %v", sd)
		}
		async := resp.header.Get("Azure-AsyncOperation")
		if !strings.HasPrefix(async, "https://management.azure.com/subscriptions/"+testSub+"/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/") {
			t.Fatalf("Azure-AsyncOperation %q", async)
		}
		if resp.header.Get("ETag") == "" || resp.header.Get("Retry-After") != "2" {
			t.Fatalf("headers %v", resp.header)
		}
		// Stored: the resource and its operation, pointing at the Cluster Service ID that was
		// sent to Cluster Service with the correlation IDs.
		rd, _ := e.resource(path)
		opID := opIDFrom(t, async)
		op, opDoc := e.operation(opID)
		if rd == nil || op == nil {
			t.Fatalf("documents missing: resource %v operation %v", rd, op)
		}
		if rd.ProvisioningState != armdoc.StateAccepted || rd.ActiveOperationID != opID || rd.ResourceID != path || !csIDRE.MatchString(rd.InternalID) {
			t.Fatalf("resource document %+v", rd)
		}
		if op.Request != armdoc.OperationCreate || op.Status != armdoc.StateAccepted || op.InternalID != rd.InternalID ||
			op.ExternalID != path || op.CorrelationID != "corr-1" || opDoc.ExpiresAt.IsZero() {
			t.Fatalf("operation document %+v (expires %v)", op, opDoc.ExpiresAt)
		}
		creates, _, mds := e.cs.snapshot()
		last := creates[len(creates)-1].Cluster
		// The create's document holds Cluster Service's defaults (model.DefaultCluster) from its
		// first write, and the frontend sends what it stored.
		if last.Id != rd.InternalID || last.ArmResourceId != path || last.Spec.GetNetwork().GetHostPrefix() != 23 || last.Spec.GetChannelGroup() != "stable" ||
			last.Spec.Azure.SubnetId == "" || last.Spec.Azure.TenantId != "72f988bf-0000-0000-0000-000000000000" ||
			!strings.HasPrefix(last.Spec.Azure.ManagedResourceGroup, "aro-hcp-dev-1-") || last.Spec.VersionId != "4.19.7" {
			t.Fatalf("CreateCluster got %v", last)
		}
		md := mds[len(mds)-1]
		if got := md.Get("x-ms-correlation-request-id"); len(got) != 1 || got[0] != "corr-1" || len(md.Get("x-ms-request-id")) != 1 {
			t.Fatalf("metadata %v", md)
		}
	})

	t.Run("retry_of_pending_create_reuses_cluster_service_id", func(t *testing.T) {
		path := clusterPath("rg", "retry")
		first := e.put(path, minimalBody())
		second := e.put(path, minimalBody())
		if first.code != 201 || second.code != 201 {
			t.Fatalf("statuses %d %d: %s", first.code, second.code, second.body)
		}
		if first.header.Get("Azure-AsyncOperation") != second.header.Get("Azure-AsyncOperation") {
			t.Fatal("retry started a second operation")
		}
		creates, _, _ := e.cs.snapshot()
		var ids []string
		for _, c := range creates {
			if c.Cluster.ArmResourceId == path {
				ids = append(ids, c.Cluster.Id)
			}
		}
		if len(ids) != 2 || ids[0] != ids[1] {
			t.Fatalf("CreateCluster IDs for the resource: %v; want the same ID twice", ids)
		}
	})

	t.Run("write_during_active_operation_returns_409", func(t *testing.T) {
		path := clusterPath("rg", "busy")
		first := e.put(path, minimalBody())
		opID := opIDFrom(t, first.header.Get("Azure-AsyncOperation"))
		resp := e.put(path, set(minimalBody(), "tags", map[string]any{"a": "b"}))
		if resp.code != 409 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if code, _ := resp.armError(t); code != "Conflict" || !strings.Contains(string(resp.body), opID) {
			t.Fatalf("conflict does not name operation %s: %s", opID, resp.body)
		}
	})

	t.Run("if-none-match_star_on_existing_returns_412", func(t *testing.T) {
		path := clusterPath("rg", "inm")
		e.put(path, minimalBody())
		resp := e.do("PUT", path, mustJSON(minimalBody()), map[string]string{"If-None-Match": "*"})
		if resp.code != 412 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if code, _ := resp.armError(t); code != "PreconditionFailed" {
			t.Fatalf("code %s", code)
		}
	})

	t.Run("if-match_mismatch_returns_412", func(t *testing.T) {
		path := clusterPath("rg", "im")
		e.put(path, minimalBody())
		resp := e.do("PUT", path, mustJSON(minimalBody()), map[string]string{"If-Match": `"not-the-etag"`})
		if resp.code != 412 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
	})

	t.Run("if-match_on_missing_returns_412", func(t *testing.T) {
		resp := e.do("PUT", clusterPath("rg", "nothing"), mustJSON(minimalBody()), map[string]string{"If-Match": "*"})
		if resp.code != 412 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if rd, _ := e.resource(clusterPath("rg", "nothing")); rd != nil {
			t.Fatal("refused create stored a resource")
		}
	})

	t.Run("tags_update_after_create_returns_200_and_if-match_current_etag_succeeds", func(t *testing.T) {
		path := clusterPath("rg", "tagged")
		created := e.put(path, minimalBody())
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		get := e.do("GET", path, nil, nil)
		resp := e.do("PUT", path, mustJSON(set(minimalBody(), "tags", map[string]any{"team": "x"})), map[string]string{"If-Match": get.header.Get("ETag")})
		if resp.code != 200 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		body := resp.json(t)
		if body["tags"].(map[string]any)["team"] != "x" || body["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
			t.Fatalf("body %s", resp.body)
		}
		if rd, _ := e.resource(path); rd.Tags["team"] != "x" {
			t.Fatalf("stored tags %v", rd.Tags)
		}
		if resp.header.Get("ETag") == get.header.Get("ETag") {
			t.Fatal("ETag unchanged by a write")
		}
	})

	t.Run("changing_create_only_field_returns_400_with_target", func(t *testing.T) {
		path := clusterPath("rg", "immutable")
		created := e.put(path, minimalBody())
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		resp := e.put(path, set(minimalBody(), "properties.network.podCidr", "10.132.0.0/14"))
		if resp.code != 400 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if code, target := resp.armError(t); code != "PropertyChangeNotAllowed" || target != "properties.network.podCidr" {
			t.Fatalf("code %s target %s", code, target)
		}
	})

	t.Run("paths_are_case_insensitive_and_keep_first_casing", func(t *testing.T) {
		path := clusterPath("MixedRG", "CaseCluster")
		e.put(path, minimalBody())
		resp := e.do("GET", strings.ToUpper(path[:30])+strings.ToLower(path[30:]), nil, nil)
		if resp.code != 200 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if id := resp.json(t)["id"]; id != path {
			t.Fatalf("id %v, want the first spelling %s", id, path)
		}
	})

	t.Run("cluster_service_invalid_argument_returns_400_and_rolls_back", func(t *testing.T) {
		e.cs.setCreateErr(status.Error(codes.InvalidArgument, "version 4.1 is not supported"))
		defer e.cs.setCreateErr(nil)
		path := clusterPath("rg", "refused")
		resp := e.put(path, minimalBody())
		if resp.code != 400 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		if code, _ := resp.armError(t); code != "InvalidRequestContent" || !strings.Contains(string(resp.body), `"message":"version 4.1 is not supported"`) {
			t.Fatalf("body %s", resp.body)
		}
		if rd, _ := e.resource(path); rd != nil {
			t.Fatalf("refused create left a resource document: %+v", rd)
		}
		if got := e.do("GET", path, nil, nil); got.code != 404 {
			t.Fatalf("GET after refused create: %d", got.code)
		}
	})

	t.Run("cluster_service_without_capacity_returns_503_with_retry_after", func(t *testing.T) {
		e.cs.setCreateErr(status.Error(codes.ResourceExhausted, "no shard has capacity"))
		defer e.cs.setCreateErr(nil)
		resp := e.put(clusterPath("rg", "full"), minimalBody())
		if resp.code != 503 || resp.header.Get("Retry-After") != "60" {
			t.Fatalf("status %d Retry-After %q: %s", resp.code, resp.header.Get("Retry-After"), resp.body)
		}
		if rd, _ := e.resource(clusterPath("rg", "full")); rd != nil {
			t.Fatal("refused create left a resource document")
		}
	})

	t.Run("cluster_service_unavailable_keeps_documents_for_retry", func(t *testing.T) {
		e.cs.setCreateErr(status.Error(codes.Unavailable, "connection refused"))
		path := clusterPath("rg", "flaky")
		resp := e.put(path, minimalBody())
		e.cs.setCreateErr(nil)
		if resp.code != 503 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		rd, _ := e.resource(path)
		if rd == nil {
			t.Fatal("ambiguous failure dropped the pending documents")
		}
		retry := e.put(path, minimalBody())
		if retry.code != 201 {
			t.Fatalf("retry status %d: %s", retry.code, retry.body)
		}
		creates, _, _ := e.cs.snapshot()
		if last := creates[len(creates)-1].Cluster; last.Id != rd.InternalID {
			t.Fatalf("retry used cluster ID %s, want the stored %s", last.Id, rd.InternalID)
		}
	})
}

func TestPutClusterBadInputNever5xx(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("a", 60)
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		header map[string]string
		status int
		code   string
		target string
	}{
		{"unknown_field_names_it", clusterPath("rg", "c"), mustJSON(set(minimalBody(), "properties.network.foo", 1)), nil, 400, "InvalidRequestContent", "properties.network.foo"},
		{"several_problems", clusterPath("rg", "c"), mustJSON(set(set(minimalBody(), "properties.api.visibility", "Hidden"), "properties.network.podCidr", "10.128.0.0/33")), nil, 400, "MultipleErrorsOccurred", ""},
		{"wrong_type", clusterPath("rg", "c"), mustJSON(set(minimalBody(), "tags", []int{1})), nil, 400, "InvalidRequestContent", "tags"},
		{"not_json", clusterPath("rg", "c"), []byte("{"), nil, 400, "InvalidRequestContent", ""},
		{"empty_body", clusterPath("rg", "c"), []byte{}, nil, 400, "InvalidRequestContent", ""},
		{"wrong_location", clusterPath("rg", "c"), mustJSON(set(minimalBody(), "location", "westeurope")), nil, 400, "InvalidRequestContent", "location"},
		{"bad_cluster_name", clusterPath("rg", "-bad"), mustJSON(minimalBody()), nil, 400, "InvalidResourceName", "name"},
		{"too_long_cluster_name", clusterPath("rg", long), mustJSON(minimalBody()), nil, 400, "InvalidResourceName", "name"},
		{"missing_api_version", clusterPath("rg", "c") + "?x=1", mustJSON(minimalBody()), nil, 400, "InvalidParameter", "api-version"},
		{"unknown_api_version", clusterPath("rg", "c") + "?api-version=2099-01-01", mustJSON(minimalBody()), nil, 400, "InvalidResourceType", "api-version"},
		{"text_content_type", clusterPath("rg", "c"), mustJSON(minimalBody()), map[string]string{"Content-Type": "text/plain"}, 415, "UnsupportedMediaType", ""},
		{"body_over_4MiB", clusterPath("rg", "c"), append(append([]byte(`{"location":"`), make([]byte, 4<<20)...), `"}`...), nil, 413, "RequestEntityTooLarge", ""},
		{"bad_system_data_is_ignored_not_fatal", clusterPath("rg", "sd"), mustJSON(minimalBody()), map[string]string{"x-ms-arm-resource-system-data": "{"}, 201, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("PUT", tc.path, tc.body, tc.header)
			if resp.code != tc.status {
				t.Fatalf("status %d, want %d: %.300s", resp.code, tc.status, resp.body)
			}
			if tc.code == "" {
				return
			}
			code, target := resp.armError(t)
			if code != tc.code || target != tc.target {
				t.Fatalf("code %s target %q, want %s %q: %s", code, target, tc.code, tc.target, resp.body)
			}
		})
	}
}

func TestGetCluster(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "getme")
	created := e.put(path, minimalBody())
	rd, _ := e.resource(path)
	e.cs.mu.Lock()
	e.cs.clusters[rd.InternalID].Status.ConsoleUrl = "https://console.example"
	e.cs.clusters[rd.InternalID].Status.ApiUrl = "https://api.example:6443"
	e.cs.mu.Unlock()

	t.Run("returns_resource_with_status_urls_and_etag", func(t *testing.T) {
		resp := e.do("GET", path, nil, nil)
		if resp.code != 200 || resp.header.Get("ETag") != created.header.Get("ETag") {
			t.Fatalf("status %d etag %q: %s", resp.code, resp.header.Get("ETag"), resp.body)
		}
		props := resp.json(t)["properties"].(map[string]any)
		if props["console"].(map[string]any)["url"] != "https://console.example" || props["api"].(map[string]any)["url"] != "https://api.example:6443" {
			t.Fatalf("read-only URLs missing: %s", resp.body)
		}
	})
	t.Run("if-none-match_current_returns_304", func(t *testing.T) {
		resp := e.do("GET", path, nil, map[string]string{"If-None-Match": created.header.Get("ETag")})
		if resp.code != 304 {
			t.Fatalf("status %d", resp.code)
		}
	})
	t.Run("missing_returns_404_arm_error", func(t *testing.T) {
		resp := e.do("GET", clusterPath("rg", "nope"), nil, nil)
		if resp.code != 404 {
			t.Fatalf("status %d", resp.code)
		}
		if code, _ := resp.armError(t); code != "ResourceNotFound" {
			t.Fatalf("code %s", code)
		}
	})
}

func TestDeleteCluster(t *testing.T) {
	e := newEnv(t)

	t.Run("missing_returns_204", func(t *testing.T) {
		if resp := e.do("DELETE", clusterPath("rg", "ghost"), nil, nil); resp.code != 204 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
	})

	t.Run("returns_202_with_location_and_async_operation", func(t *testing.T) {
		path := clusterPath("rg", "del")
		created := e.put(path, minimalBody())
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		resp := e.do("DELETE", path, nil, nil)
		if resp.code != 202 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		loc, async := resp.header.Get("Location"), resp.header.Get("Azure-AsyncOperation")
		if !strings.Contains(loc, "/hcpOperationResults/") || !strings.Contains(async, "/hcpOperationStatuses/") ||
			opIDFrom(t, loc) != opIDFrom(t, async) || resp.header.Get("Retry-After") != "2" {
			t.Fatalf("headers %v", resp.header)
		}
		rd, _ := e.resource(path)
		op, _ := e.operation(opIDFrom(t, async))
		if rd.ProvisioningState != armdoc.StateDeleting || rd.ActiveOperationID != op.ID || op.Request != armdoc.OperationDelete || op.InternalID != rd.InternalID || op.AfterCreate != nil {
			t.Fatalf("resource %+v operation %+v", rd, op)
		}
		_, deletes, _ := e.cs.snapshot()
		if deletes[len(deletes)-1] != rd.InternalID {
			t.Fatalf("DeleteCluster calls %v", deletes)
		}

		again := e.do("DELETE", path, nil, nil)
		if again.code != 202 || again.header.Get("Azure-AsyncOperation") != async {
			t.Fatalf("second delete %d %q, want 202 with the running operation", again.code, again.header.Get("Azure-AsyncOperation"))
		}
		put := e.put(path, minimalBody())
		if put.code != 409 {
			t.Fatalf("PUT during delete: %d", put.code)
		}
	})

	t.Run("delete_during_create_cancels_the_create", func(t *testing.T) {
		path := clusterPath("rg", "cancelme")
		created := e.put(path, minimalBody())
		createOp := opIDFrom(t, created.header.Get("Azure-AsyncOperation"))
		resp := e.do("DELETE", path, nil, nil)
		if resp.code != 202 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		op, _ := e.operation(createOp)
		if op.Status != armdoc.StateCanceled || op.Error == nil || op.Error.Code != "Canceled" || op.EndTime == nil {
			t.Fatalf("create operation after delete: %+v", op)
		}
		// The create's Cluster Service call may still land: the delete says since when, so
		// the backend does not take Cluster Service's NotFound for done too early.
		del, _ := e.operation(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")))
		if del.AfterCreate == nil || !del.AfterCreate.Equal(op.StartTime) {
			t.Fatalf("delete operation's afterCreate %v, want the canceled create's start %v", del.AfterCreate, op.StartTime)
		}
	})

	t.Run("cluster_service_refusal_returns_409_and_restores_the_resource", func(t *testing.T) {
		path := clusterPath("rg", "stuck")
		created := e.put(path, minimalBody())
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		e.cs.setDeleteErr(status.Error(codes.FailedPrecondition, "cluster is upgrading"))
		defer e.cs.setDeleteErr(nil)
		resp := e.do("DELETE", path, nil, nil)
		if resp.code != 409 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		rd, _ := e.resource(path)
		if rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
			t.Fatalf("resource not restored: %+v", rd)
		}
	})

	t.Run("if-match_mismatch_returns_412", func(t *testing.T) {
		path := clusterPath("rg", "guarded")
		e.put(path, minimalBody())
		if resp := e.do("DELETE", path, nil, map[string]string{"If-Match": `"x"`}); resp.code != 412 {
			t.Fatalf("status %d", resp.code)
		}
	})
}

func TestListClusters(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PageSize = 2 })
	want := map[string]bool{}
	for _, p := range []string{clusterPath("rg1", "a"), clusterPath("rg1", "b"), clusterPath("rg1", "c"), clusterPath("RG2", "d"), clusterPath("rg1x", "e")} {
		if resp := e.put(p, minimalBody()); resp.code != 201 {
			t.Fatalf("create %s: %d", p, resp.code)
		}
		want[p] = true
	}
	collect := func(t *testing.T, path string) []string {
		var ids []string
		next := e.http.URL + path + "?api-version=" + testVersion
		for pages := 0; next != ""; pages++ {
			if pages > 10 {
				t.Fatal("nextLink does not end")
			}
			resp := e.do("GET", strings.TrimPrefix(next, e.http.URL), nil, nil)
			if resp.code != 200 {
				t.Fatalf("status %d: %s", resp.code, resp.body)
			}
			var page struct {
				Value []struct {
					ID string `json:"id"`
				} `json:"value"`
				NextLink string `json:"nextLink"`
			}
			json.Unmarshal(resp.body, &page)
			if len(page.Value) > 2 {
				t.Fatalf("page of %d, size 2", len(page.Value))
			}
			for _, v := range page.Value {
				ids = append(ids, v.ID)
			}
			next = page.NextLink
		}
		return ids
	}
	t.Run("by_resource_group_pages_with_nextLink", func(t *testing.T) {
		ids := collect(t, "/subscriptions/"+testSub+"/resourceGroups/rg1/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
		if strings.Join(ids, ",") != strings.Join([]string{clusterPath("rg1", "a"), clusterPath("rg1", "b"), clusterPath("rg1", "c")}, ",") {
			t.Fatalf("listed %v", ids)
		}
	})
	t.Run("by_subscription_lists_every_group", func(t *testing.T) {
		ids := collect(t, "/subscriptions/"+testSub+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters")
		if len(ids) != len(want) {
			t.Fatalf("listed %v", ids)
		}
		for _, id := range ids {
			if !want[id] {
				t.Fatalf("unexpected %s", id)
			}
		}
	})
	t.Run("bad_skiptoken_returns_400", func(t *testing.T) {
		resp := e.do("GET", "/subscriptions/"+testSub+"/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version="+testVersion+"&$skipToken=garbage", nil, nil)
		if resp.code != 400 {
			t.Fatalf("status %d", resp.code)
		}
	})
}

// setStatus plays Cluster Service having provisioned one cluster, with URLs of its own so a
// test can tell whether each item got its own cluster's status.
func (f *fakeClusterService) setStatus(csID, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[csID]
	c.Status.ConsoleUrl = "https://console." + name + ".test"
	c.Status.ApiUrl = "https://api." + name + ".test:443"
	c.Status.Conditions = []*csv1.Condition{{Type: "Available", Status: "True", Reason: "AsExpected",
		LastTransitionTime: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}
}

func TestListClustersStatusFromOneClusterServiceCallPerPage(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.PageSize = 3 })
	names := []string{"a", "b", "c", "d"} // two pages: a, b, c and d
	byCSID := map[string]string{}
	for _, n := range names {
		p := clusterPath("lst", n)
		created := e.put(p, minimalBody())
		if created.code != 201 {
			t.Fatalf("create %s: %d %s", n, created.code, created.body)
		}
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
		rd, _ := e.resource(p)
		byCSID[rd.InternalID] = n
		e.cs.setStatus(rd.InternalID, n)
	}
	for _, tc := range []struct {
		name       string
		csDown     error
		wantStatus bool
	}{
		{name: "each_item_carries_its_urls_and_conditions", wantStatus: true},
		{name: "cluster_service_down_answers_from_the_store", csDown: status.Error(codes.Unavailable, "down")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.cs.setStatusErr(tc.csDown)
			defer e.cs.setStatusErr(nil)
			e.cs.statusCalls()
			next := "/subscriptions/" + testSub + "/resourceGroups/lst/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters?api-version=2026-06-30-preview"
			var listed []string
			for pages := 0; next != ""; pages++ {
				if pages > 3 {
					t.Fatal("nextLink does not end")
				}
				resp := e.do("GET", next, nil, nil)
				if resp.code != 200 {
					t.Fatalf("status %d: %s", resp.code, resp.body)
				}
				var page struct {
					Value    []map[string]any `json:"value"`
					NextLink string           `json:"nextLink"`
				}
				json.Unmarshal(resp.body, &page)
				gets, lists := e.cs.statusCalls()
				if gets != 0 || len(lists) != 1 {
					t.Fatalf("page %d: %d GetCluster and %d ListClusters calls; want one ListClusters", pages, gets, len(lists))
				}
				var askedFor []string
				for _, id := range lists[0].GetIds() {
					askedFor = append(askedFor, byCSID[id])
				}
				var onPage []string
				for _, it := range page.Value {
					n := it["name"].(string)
					onPage = append(onPage, n)
					props := it["properties"].(map[string]any)
					console, _ := props["console"].(map[string]any)
					api, _ := props["api"].(map[string]any)
					st, _ := props["status"].(map[string]any)
					if tc.wantStatus {
						if console["url"] != "https://console."+n+".test" || api["url"] != "https://api."+n+".test:443" {
							t.Fatalf("%s: console %v api %v", n, console, api["url"])
						}
						if conds, _ := st["conditions"].([]any); len(conds) != 1 {
							t.Fatalf("%s: conditions %v", n, props["status"])
						}
					} else if console != nil || api["url"] != "" || st != nil { // the required api.url is "" until known
						t.Fatalf("%s: status without Cluster Service: %v", n, props)
					}
				}
				sort.Strings(askedFor)
				if strings.Join(askedFor, ",") != strings.Join(onPage, ",") {
					t.Fatalf("ListClusters asked for %v, the page has %v", askedFor, onPage)
				}
				listed = append(listed, onPage...)
				next = ""
				if page.NextLink != "" {
					next = strings.TrimPrefix(page.NextLink, e.http.URL)
				}
			}
			if strings.Join(listed, ",") != strings.Join(names, ",") {
				t.Fatalf("listed %v", listed)
			}
		})
	}
}

func TestPutClusterResponseStatus(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "putstatus")
	created := e.put(path, minimalBody())
	if created.code != 201 {
		t.Fatalf("create: %d %s", created.code, created.body)
	}
	// The required api.url is there, empty: Cluster Service knows it once the control plane is up.
	if props := created.json(t)["properties"].(map[string]any); props["console"] != nil || props["api"].(map[string]any)["url"] != "" {
		t.Fatalf("a 201 has no URLs to show yet (api.url \"\"): %s", created.body)
	}
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(path)
	e.cs.setStatus(rd.InternalID, "putstatus")

	for _, tc := range []struct {
		name     string
		body     map[string]any
		csDown   bool
		wantURLs bool
	}{
		{name: "replace_of_tags_shows_the_urls", body: set(minimalBody(), "tags", map[string]any{"a": "1"}), wantURLs: true},
		{name: "replace_through_update_cluster_shows_the_urls", body: set(minimalBody(), "properties.autoscaling.maxNodesTotal", 7), wantURLs: true},
		{name: "replace_without_cluster_service_status_answers_from_the_store", csDown: true,
			body: set(set(minimalBody(), "properties.autoscaling.maxNodesTotal", 7), "tags", map[string]any{"b": "2"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.csDown {
				e.cs.setStatusErr(status.Error(codes.Unavailable, "down"))
				defer e.cs.setStatusErr(nil)
			}
			resp := e.put(path, tc.body)
			if resp.code != 200 {
				t.Fatalf("PUT: %d %s", resp.code, resp.body)
			}
			props := resp.json(t)["properties"].(map[string]any)
			console, _ := props["console"].(map[string]any)
			gotURLs := console["url"] == "https://console.putstatus.test" && props["api"].(map[string]any)["url"] == "https://api.putstatus.test:443"
			if gotURLs != tc.wantURLs {
				t.Fatalf("URLs shown %v, want %v: %s", gotURLs, tc.wantURLs, resp.body)
			}
			if op := resp.header.Get("Azure-AsyncOperation"); op != "" {
				e.finish(opIDFrom(t, op), armdoc.StateSucceeded, nil)
			}
		})
	}
}

// TestClusterAutoscalingZeroReachesClusterService: an explicit 0 is sent to Cluster Service as
// a value (podPriorityThreshold 0 is not HyperShift's -10), an absent value stays unset, and a
// PATCH with null takes a value back to unset.
func TestClusterAutoscalingZeroReachesClusterService(t *testing.T) {
	e := newEnv(t)
	show := func(a *csv1.ClusterAutoscaling) string {
		if a == nil {
			return "nil"
		}
		f := func(p *int32) string {
			if p == nil {
				return "unset"
			}
			return fmt.Sprint(*p)
		}
		return fmt.Sprintf("total=%s grace=%s provision=%s priority=%s", f(a.MaxNodesTotal), f(a.MaxPodGracePeriodSeconds), f(a.MaxNodeProvisionTimeSeconds), f(a.PodPriorityThreshold))
	}
	for _, tc := range []struct {
		name        string
		autoscaling any // nil: left out of the body
		want        string
	}{
		{name: "absent_is_not_sent", want: "nil"},
		{name: "explicit_zero_priority_threshold_is_sent_as_zero", autoscaling: map[string]any{"podPriorityThreshold": 0},
			want: "total=unset grace=unset provision=unset priority=0"},
		{name: "zeros_and_values_as_given", autoscaling: map[string]any{"maxNodesTotal": 0, "maxPodGracePeriodSeconds": 30, "podPriorityThreshold": -5},
			want: "total=0 grace=30 provision=unset priority=-5"},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			body := minimalBody()
			if tc.autoscaling != nil {
				set(body, "properties.autoscaling", tc.autoscaling)
			}
			if resp := e.put(clusterPath("as", strings.ReplaceAll(tc.name, "_", "-")), body); resp.code != 201 {
				t.Fatalf("create: %d %s", resp.code, resp.body)
			}
			creates, _, _ := e.cs.snapshot()
			if got := show(creates[len(creates)-1].GetCluster().GetSpec().GetAutoscaling()); got != tc.want {
				t.Fatalf("CreateCluster autoscaling %s, want %s", got, tc.want)
			}
		})
	}

	path := clusterPath("as", "patched")
	created := e.put(path, set(minimalBody(), "properties.autoscaling", map[string]any{"podPriorityThreshold": -5, "maxNodesTotal": 9}))
	e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	for _, tc := range []struct {
		name, patch, want, rendered string
	}{
		{name: "zero_replaces_a_value", patch: `{"properties":{"autoscaling":{"podPriorityThreshold":0}}}`,
			want: "total=9 grace=unset provision=unset priority=0", rendered: `{"maxNodesTotal":9,"podPriorityThreshold":0}`},
		{name: "null_takes_it_back_to_unset", patch: `{"properties":{"autoscaling":{"podPriorityThreshold":null}}}`,
			want: "total=9 grace=unset provision=unset priority=unset", rendered: `{"maxNodesTotal":9}`},
	} {
		t.Run("patch/"+tc.name, func(t *testing.T) {
			resp := e.do("PATCH", path, []byte(tc.patch), nil)
			if resp.code != 202 {
				t.Fatalf("PATCH: %d %s", resp.code, resp.body)
			}
			updateMu.Lock()
			last := updateCalls[len(updateCalls)-1]
			updateMu.Unlock()
			if got := show(last.GetUpdate().GetAutoscaling()); got != tc.want {
				t.Fatalf("UpdateCluster autoscaling %s, want %s", got, tc.want)
			}
			e.finish(last.GetOperationId(), armdoc.StateSucceeded, nil)
			var got struct {
				Properties struct {
					Autoscaling json.RawMessage `json:"autoscaling"`
				} `json:"properties"`
			}
			json.Unmarshal(e.do("GET", path, nil, nil).body, &got)
			if string(got.Properties.Autoscaling) != tc.rendered {
				t.Fatalf("GET shows autoscaling %s, want %s", got.Properties.Autoscaling, tc.rendered)
			}
		})
	}
}
