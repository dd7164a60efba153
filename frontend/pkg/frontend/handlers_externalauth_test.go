package frontend

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

func eaPath(cluster, name string) string {
	return clusterPath("rg", cluster) + "/externalAuths/" + name
}

// minimalExternalAuthBody is the smallest valid external auth of every api-version.
func minimalExternalAuthBody() map[string]any {
	return map[string]any{"properties": map[string]any{
		"issuer": map[string]any{"url": "https://login.example.test/tenant/v2.0", "audiences": []any{"aud-1"}},
		"claim":  map[string]any{"mappings": map[string]any{"username": map[string]any{"claim": "email"}}},
	}}
}

// readyExternalAuth creates an external auth and finishes its create; it returns the CS ID.
func (e *env) readyExternalAuth(t *testing.T, cluster, name string, body map[string]any) string {
	t.Helper()
	resp := e.put(eaPath(cluster, name), body)
	if resp.code != 201 {
		t.Fatalf("PUT external auth: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(eaPath(cluster, name))
	return rd.InternalID
}

// deletingCluster starts the delete of a ready cluster (the operation stays in progress).
func (e *env) deletingCluster(t *testing.T, name string) {
	t.Helper()
	if resp := e.do("DELETE", clusterPath("rg", name), nil, nil); resp.code != 202 {
		t.Fatalf("DELETE cluster: %d %s", resp.code, resp.body)
	}
}

// errorTargets are the targets of an ARM error: the top one, or its details' for
// MultipleErrorsOccurred.
func errorTargets(t *testing.T, r response) (code string, targets []string) {
	t.Helper()
	code, target := r.armError(t)
	var b struct {
		Error armdoc.CloudErrorBody `json:"error"`
	}
	json.Unmarshal(r.body, &b)
	if target != "" {
		targets = append(targets, target)
	}
	for _, d := range b.Error.Details {
		targets = append(targets, d.Target)
	}
	sort.Strings(targets)
	return code, targets
}

type eaCase struct {
	name    string
	setup   func(t *testing.T, e *env, f *fakeExternalAuths)
	method  string
	path    string
	body    any // map or raw string; nil: no body
	header  map[string]string
	code    int
	errCode string
	target  string
	check   func(t *testing.T, e *env, f *fakeExternalAuths, r response)
}

func runEACases(t *testing.T, cases []eaCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, f := newExternalAuthEnv(t)
			if tc.setup != nil {
				tc.setup(t, e, f)
			}
			var b []byte
			switch v := tc.body.(type) {
			case string:
				b = []byte(v)
			case nil:
			default:
				b = mustJSON(v)
			}
			resp := e.do(tc.method, tc.path, b, tc.header)
			if resp.code != tc.code {
				t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, resp.code, tc.code, resp.body)
			}
			if tc.errCode != "" {
				code, targets := errorTargets(t, resp)
				if code != tc.errCode || strings.Join(targets, ",") != tc.target {
					t.Fatalf("error %s targets %v, want %s %q: %s", code, targets, tc.errCode, tc.target, resp.body)
				}
			}
			if tc.check != nil {
				tc.check(t, e, f, resp)
			}
		})
	}
}

func noCSWrites(t *testing.T, f *fakeExternalAuths, wantCreates int) {
	t.Helper()
	c, u, d := f.calls()
	if len(c) != wantCreates || len(u) != 0 || len(d) != 0 {
		t.Fatalf("Cluster Service calls: %d creates (want %d), %d updates, %d deletes", len(c), wantCreates, len(u), len(d))
	}
}

func limitErr() error {
	st, _ := status.New(codes.FailedPrecondition, "cluster x already has an external auth; a cluster has at most one").
		WithDetails(&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{Type: "EXTERNAL_AUTH_LIMIT", Subject: "clusters/x"}}})
	return st.Err()
}

func TestPutExternalAuth(t *testing.T) {
	changed := minimalExternalAuthBody()
	set(changed, "properties.issuer.audiences", []any{"aud-1", "aud-2"})
	runEACases(t, []eaCase{
		{
			name:   "create_201_accepted_with_async_operation",
			setup:  func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1") },
			method: "PUT", path: eaPath("c1", "auth1"), body: minimalExternalAuthBody(), code: http.StatusCreated,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				async := r.header.Get("Azure-AsyncOperation")
				if async == "" || r.header.Get("Location") != "" || r.header.Get("Retry-After") == "" {
					t.Fatalf("headers %v", r.header)
				}
				got := r.json(t)
				props := got["properties"].(map[string]any)
				if props["provisioningState"] != "Accepted" || got["id"] != eaPath("c1", "auth1") ||
					props["claim"].(map[string]any)["mappings"].(map[string]any)["username"].(map[string]any)["prefixPolicy"] != "None" {
					t.Fatalf("body %s", r.body)
				}
				op, _ := e.operation(opIDFrom(t, async))
				rd, _ := e.resource(eaPath("c1", "auth1"))
				if op == nil || op.Request != armdoc.OperationCreate || rd == nil || rd.ActiveOperationID != op.ID || rd.ProvisioningState != armdoc.StateAccepted {
					t.Fatalf("stored operation %+v resource %+v", op, rd)
				}
				c, _, _ := f.calls()
				if len(c) != 1 || c[0].GetExternalAuth().GetId() != rd.InternalID || c[0].GetExternalAuth().GetSpec().GetClaimMappings().GetUsername().GetPrefixPolicy() != "None" {
					t.Fatalf("CreateExternalAuth %v", c)
				}
			},
		},
		{
			name:   "no_cluster_404_parent_not_found",
			method: "PUT", path: eaPath("missing", "auth1"), body: minimalExternalAuthBody(),
			code: http.StatusNotFound, errCode: "ParentResourceNotFound",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				noCSWrites(t, f, 0)
				if rd, _ := e.resource(eaPath("missing", "auth1")); rd != nil {
					t.Fatal("a resource was stored")
				}
			},
		},
		{
			name:   "cluster_deleting_409",
			setup:  func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1"); e.deletingCluster(t, "c1") },
			method: "PUT", path: eaPath("c1", "auth1"), body: minimalExternalAuthBody(),
			code: http.StatusConflict, errCode: "Conflict",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				noCSWrites(t, f, 0)
				if rd, _ := e.resource(eaPath("c1", "auth1")); rd != nil {
					t.Fatal("a resource was stored")
				}
			},
		},
		{
			// The fake refuses a second external auth in a cluster exactly as Cluster Service
			// does (FailedPrecondition, EXTERNAL_AUTH_LIMIT): 409, and the new one's documents
			// are rolled back.
			name: "second_in_cluster_409_limit",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
			},
			method: "PUT", path: eaPath("c1", "auth2"), body: minimalExternalAuthBody(),
			code: http.StatusConflict, errCode: "Conflict",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				if !strings.Contains(string(r.body), "at most one") {
					t.Fatalf("message does not say why: %s", r.body)
				}
				if g := e.do("GET", eaPath("c1", "auth2"), nil, nil); g.code != 404 {
					t.Fatalf("GET of the refused one: %d %s", g.code, g.body)
				}
				if g := e.do("GET", eaPath("c1", "auth1"), nil, nil); g.code != 200 {
					t.Fatalf("GET of the first one: %d %s", g.code, g.body)
				}
			},
		},
		{
			name: "cs_limit_error_409_rolled_back",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				f.setErrs(limitErr(), nil, nil)
			},
			method: "PUT", path: eaPath("c1", "auth1"), body: minimalExternalAuthBody(),
			code: http.StatusConflict, errCode: "Conflict",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				if rd, _ := e.resource(eaPath("c1", "auth1")); rd != nil {
					t.Fatalf("the refused create left %+v", rd)
				}
			},
		},
		{
			name: "if_match_mismatch_412",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
			},
			method: "PUT", path: eaPath("c1", "auth1"), body: changed, header: map[string]string{"If-Match": `"not-the-etag"`},
			code: http.StatusPreconditionFailed, errCode: "PreconditionFailed", target: "If-Match",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 1) },
		},
		{
			name:   "if_match_on_missing_412",
			setup:  func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1") },
			method: "PUT", path: eaPath("c1", "auth1"), body: minimalExternalAuthBody(), header: map[string]string{"If-Match": "*"},
			code: http.StatusPreconditionFailed, errCode: "PreconditionFailed", target: "If-Match",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 0) },
		},
		{
			name: "if_match_current_etag_replaces_200_updating",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
			},
			method: "PUT", path: eaPath("c1", "auth1"), body: changed, code: http.StatusOK,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				if r.json(t)["properties"].(map[string]any)["provisioningState"] != "Updating" || r.header.Get("Azure-AsyncOperation") == "" {
					t.Fatalf("replace: %v %s", r.header, r.body)
				}
				_, u, _ := f.calls()
				// A PUT replaces every part (a full update), without a revision read from
				// Cluster Service.
				up := u[0].GetUpdate()
				if len(u) != 1 || strings.Join(up.GetIssuer().GetAudiences(), ",") != "aud-1,aud-2" || up.GetClients() == nil || up.GetClaimMappings() == nil ||
					up.GetValidationRules() == nil || u[0].GetRevision() != 0 {
					t.Fatalf("UpdateExternalAuth %v", u)
				}
				// Another write while the update runs: 409.
				if again := e.put(eaPath("c1", "auth1"), minimalExternalAuthBody()); again.code != http.StatusConflict {
					t.Fatalf("PUT during the update: %d %s", again.code, again.body)
				}
			},
		},
		{
			name: "retried_create_201_same_operation",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				if r := e.put(eaPath("c1", "auth1"), minimalExternalAuthBody()); r.code != 201 {
					t.Fatalf("first PUT %d %s", r.code, r.body)
				}
			},
			method: "PUT", path: eaPath("c1", "auth1"), body: minimalExternalAuthBody(), code: http.StatusCreated,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				rd, _ := e.resource(eaPath("c1", "auth1"))
				if opIDFrom(t, r.header.Get("Azure-AsyncOperation")) != rd.ActiveOperationID {
					t.Fatalf("retry answered another operation than %s", rd.ActiveOperationID)
				}
				c, _, _ := f.calls()
				if len(c) != 2 || c[1].GetExternalAuth().GetId() != rd.InternalID {
					t.Fatalf("the retry did not drive the same ID: %v", c)
				}
			},
		},
		{
			name: "different_body_during_create_409",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				e.put(eaPath("c1", "auth1"), minimalExternalAuthBody())
			},
			method: "PUT", path: eaPath("c1", "auth1"), body: changed, code: http.StatusConflict, errCode: "Conflict",
		},
		{
			name:   "bad_name_400",
			setup:  func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1") },
			method: "PUT", path: eaPath("c1", "this-name-is-far-too-long"), body: minimalExternalAuthBody(),
			code: http.StatusBadRequest, errCode: "InvalidResourceName", target: "name",
		},
	})
}

func TestPatchExternalAuth(t *testing.T) {
	ready := func(t *testing.T, e *env, f *fakeExternalAuths) {
		e.readyCluster(t, "c1")
		e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
	}
	patch := map[string]any{"properties": map[string]any{"claim": map[string]any{"mappings": map[string]any{"groups": map[string]any{"claim": "groups"}}}}}
	runEACases(t, []eaCase{
		{
			name: "202_with_location", setup: ready,
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, code: http.StatusAccepted,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				loc, async := r.header.Get("Location"), r.header.Get("Azure-AsyncOperation")
				if loc == "" || async == "" || opIDFrom(t, loc) != opIDFrom(t, async) || len(r.body) != 0 {
					t.Fatalf("headers %v body %s", r.header, r.body)
				}
				_, u, _ := f.calls()
				// The PATCH sends only the part it changed (the claim mappings, whole); Cluster
				// Service merges it into the spec it holds.
				up := u[0].GetUpdate()
				if len(u) != 1 || up.GetClaimMappings().GetGroups().GetClaim() != "groups" || up.GetClaimMappings().GetUsername().GetClaim() != "email" ||
					up.GetIssuer() != nil || up.GetClients() != nil || up.GetValidationRules() != nil {
					t.Fatalf("UpdateExternalAuth did not get only the changed part: %v", u)
				}
				f.mu.Lock()
				merged := proto.Clone(f.auths[u[0].GetId()]).(*csv1.ExternalAuth)
				f.mu.Unlock()
				if merged.GetSpec().GetClaimMappings().GetGroups().GetClaim() != "groups" || merged.GetSpec().GetIssuer().GetUrl() == "" {
					t.Fatalf("Cluster Service holds %v, want the merged spec", merged.GetSpec())
				}
				rd, _ := e.resource(eaPath("c1", "auth1"))
				op, _ := e.operation(opIDFrom(t, async))
				if rd.ProvisioningState != armdoc.StateUpdating || op == nil || op.Request != armdoc.OperationUpdate || op.InternalRevision != merged.GetRevision() {
					t.Fatalf("stored %+v operation %+v", rd, op)
				}
				e.finish(op.ID, armdoc.StateSucceeded, nil)
				g := e.do("GET", eaPath("c1", "auth1"), nil, nil).json(t)
				if claim := g["properties"].(map[string]any)["claim"].(map[string]any)["mappings"].(map[string]any)["groups"]; claim == nil {
					t.Fatalf("GET after PATCH: %v", g)
				}
			},
		},
		{
			// Nothing for Cluster Service to do: answered as a node pool's is, with an operation
			// that has already Succeeded, and no UpdateExternalAuth call for the backend to follow.
			name: "unchanged_202_operation_already_succeeded_no_cs_call", setup: ready,
			method: "PATCH", path: eaPath("c1", "auth1"),
			body: map[string]any{"properties": map[string]any{"claim": map[string]any{"mappings": map[string]any{"username": map[string]any{"claim": "email"}}}}},
			code: http.StatusAccepted,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				noCSWrites(t, f, 1)
				op, _ := e.operation(opIDFrom(t, r.header.Get("Azure-AsyncOperation")))
				rd, _ := e.resource(eaPath("c1", "auth1"))
				if op == nil || op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
					t.Fatalf("operation %+v resource %+v; want a Succeeded operation and the resource unchanged", op, rd)
				}
			},
		},
		{
			name: "missing_404", setup: func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1") },
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, code: http.StatusNotFound, errCode: "ResourceNotFound",
		},
		{
			name:   "no_cluster_404_parent_not_found",
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, code: http.StatusNotFound, errCode: "ParentResourceNotFound",
		},
		{
			name: "if_match_mismatch_412", setup: ready,
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, header: map[string]string{"If-Match": `"stale"`},
			code: http.StatusPreconditionFailed, errCode: "PreconditionFailed", target: "If-Match",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 1) },
		},
		{
			name: "cluster_deleting_409",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				ready(t, e, f)
				e.deletingCluster(t, "c1")
			},
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, code: http.StatusConflict, errCode: "Conflict",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 1) },
		},
		{
			name: "not_in_update_schema_400", setup: ready,
			method: "PATCH", path: eaPath("c1", "auth1"), body: map[string]any{"location": "eastus"},
			code: http.StatusBadRequest, errCode: "InvalidRequestContent", target: "location",
		},
		{
			name: "invalid_result_400", setup: ready,
			method: "PATCH", path: eaPath("c1", "auth1"),
			// A value the specification refuses; a rule beyond it (a client ID no audience) is
			// Cluster Service's, which the fake does not play (TestExternalAuthRulesAgree).
			body: map[string]any{"properties": map[string]any{"clients": []any{map[string]any{
				"component": map[string]any{"name": "console", "authClientNamespace": "openshift-console"}, "clientId": "aud-1", "type": "Secret"}}}},
			code: http.StatusBadRequest, errCode: "InvalidRequestContent", target: "properties.clients[0].type",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 1) },
		},
		{
			name: "cs_aborted_409", setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				ready(t, e, f)
				f.setErrs(nil, status.Error(codes.Aborted, "stale revision"), nil)
			},
			method: "PATCH", path: eaPath("c1", "auth1"), body: patch, code: http.StatusConflict, errCode: "Conflict",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				if rd, _ := e.resource(eaPath("c1", "auth1")); rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
					t.Fatalf("a refused update changed the resource: %+v", rd)
				}
			},
		},
	})
}

func TestDeleteExternalAuth(t *testing.T) {
	var csID string
	ready := func(t *testing.T, e *env, f *fakeExternalAuths) {
		e.readyCluster(t, "c1")
		csID = e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
	}
	runEACases(t, []eaCase{
		{
			name: "202_with_location", setup: ready,
			method: "DELETE", path: eaPath("c1", "auth1"), code: http.StatusAccepted,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				if r.header.Get("Location") == "" || r.header.Get("Azure-AsyncOperation") == "" {
					t.Fatalf("headers %v", r.header)
				}
				if _, _, d := f.calls(); len(d) != 1 || d[0] != csID {
					t.Fatalf("DeleteExternalAuth %v, want %s", d, csID)
				}
				rd, _ := e.resource(eaPath("c1", "auth1"))
				op, _ := e.operation(opIDFrom(t, r.header.Get("Location")))
				if rd.ProvisioningState != armdoc.StateDeleting || op.Request != armdoc.OperationDelete || rd.ActiveOperationID != op.ID {
					t.Fatalf("stored %+v operation %+v", rd, op)
				}
				// A second DELETE while it runs answers the same operation.
				again := e.do("DELETE", eaPath("c1", "auth1"), nil, nil)
				if again.code != 202 || opIDFrom(t, again.header.Get("Location")) != op.ID {
					t.Fatalf("second DELETE: %d %v", again.code, again.header)
				}
			},
		},
		{
			name: "missing_204", setup: func(t *testing.T, e *env, f *fakeExternalAuths) { e.readyCluster(t, "c1") },
			method: "DELETE", path: eaPath("c1", "auth1"), code: http.StatusNoContent,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 0) },
		},
		{
			name:   "missing_cluster_204",
			method: "DELETE", path: eaPath("gone", "auth1"), code: http.StatusNoContent,
		},
		{
			name: "if_match_mismatch_412", setup: ready,
			method: "DELETE", path: eaPath("c1", "auth1"), header: map[string]string{"If-Match": `"stale"`},
			code: http.StatusPreconditionFailed, errCode: "PreconditionFailed", target: "If-Match",
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) { noCSWrites(t, f, 1) },
		},
		{
			name: "during_create_cancels_it",
			setup: func(t *testing.T, e *env, f *fakeExternalAuths) {
				e.readyCluster(t, "c1")
				e.put(eaPath("c1", "auth1"), minimalExternalAuthBody())
			},
			method: "DELETE", path: eaPath("c1", "auth1"), code: http.StatusAccepted,
			check: func(t *testing.T, e *env, f *fakeExternalAuths, r response) {
				ops, err := e.store.Query(t.Context(), docstore.Query{Partition: partitionKey(testSub), Type: docstore.TypeOperation})
				if err != nil {
					t.Fatal(err)
				}
				var states []string
				for _, d := range ops.Documents {
					var op armdoc.OperationDocument
					json.Unmarshal(d.Body, &op)
					if !strings.Contains(strings.ToLower(op.ExternalID), "/externalauths/") {
						continue // the cluster's own create
					}
					states = append(states, fmt.Sprintf("%s:%s", op.Request, op.Status))
				}
				sort.Strings(states)
				if strings.Join(states, " ") != "Create:Canceled Delete:Accepted" {
					t.Fatalf("operations %v", states)
				}
			},
		},
	})
}

// TestExternalAuthValidationTargets sends invalid bodies in every api-version: 400 with the
// targets of that version's body (the version's own unknown read-only field included), and
// nothing sent to Cluster Service.
func TestExternalAuthValidationTargets(t *testing.T) {
	type bad struct {
		name    string
		mutate  func(m map[string]any)
		targets string
	}
	// The frontend's own refusals: the specification's. The rules it cannot state are Cluster
	// Service's alone (TestExternalAuthRulesAgree, with a real one).
	common := []bad{
		{"two_errors", func(m map[string]any) {
			set(m, "properties.issuer.audiences", []any{})
			set(m, "properties.claim.mappings.username.prefixPolicy", "Sometimes")
		}, "properties.claim.mappings.username.prefixPolicy,properties.issuer.audiences"},
		{"no_username", func(m map[string]any) { set(m, "properties.claim.mappings.username", nil) }, "properties.claim.mappings.username"},
		{"wrong_type", func(m map[string]any) { set(m, "properties.issuer.audiences", "aud-1") }, "properties.issuer.audiences"},
	}
	for _, ver := range specVersions {
		t.Run(ver, func(t *testing.T) {
			e, f := newExternalAuthEnv(t)
			e.readyCluster(t, "c1")
			cases := append([]bad(nil), common...)
			// The read-only observation of the other generation of versions is unknown here.
			if ver < "2026-06-30-preview" {
				cases = append(cases, bad{"status_of_newer_versions", func(m map[string]any) {
					set(m, "properties.status", map[string]any{"conditions": []any{}})
				}, "properties.status"})
			} else {
				cases = append(cases, bad{"condition_of_older_versions", func(m map[string]any) {
					set(m, "properties.condition", map[string]any{"type": "Available"})
				}, "properties.condition"})
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					body := minimalExternalAuthBody()
					tc.mutate(body)
					resp := e.do("PUT", withVersion(eaPath("c1", "auth1"), ver), mustJSON(body), nil)
					if resp.code != 400 {
						t.Fatalf("%d %s", resp.code, resp.body)
					}
					if _, targets := errorTargets(t, resp); strings.Join(targets, ",") != tc.targets {
						t.Fatalf("targets %v, want %s: %s", targets, tc.targets, resp.body)
					}
				})
			}
			noCSWrites(t, f, 0)
			// The same through PATCH of an existing one: the merged result is validated, with
			// the body's targets.
			r := e.do("PUT", withVersion(eaPath("c1", "auth1"), ver), mustJSON(minimalExternalAuthBody()), nil)
			if r.code != 201 {
				t.Fatalf("PUT: %d %s", r.code, r.body)
			}
			e.finish(opIDFrom(t, r.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			for _, tc := range cases {
				if tc.name == "no_username" {
					continue // a merge patch cannot remove a required object: null deletes, then the PUT rule applies
				}
				t.Run("patch_"+tc.name, func(t *testing.T) {
					body := map[string]any{}
					tc.mutate(body)
					resp := e.do("PATCH", withVersion(eaPath("c1", "auth1"), ver), mustJSON(body), nil)
					if resp.code != 400 {
						t.Fatalf("%d %s", resp.code, resp.body)
					}
					if _, targets := errorTargets(t, resp); strings.Join(targets, ",") != tc.targets {
						t.Fatalf("targets %v, want %s: %s", targets, tc.targets, resp.body)
					}
				})
			}
			noCSWrites(t, f, 1)
		})
	}
}

func TestListExternalAuths(t *testing.T) {
	e, _ := newExternalAuthEnv(t, func(c *Config) { c.PageSize = 1 })
	list := func(cluster, ver string) (int, []string, []byte) {
		t.Helper()
		r := e.do("GET", withVersion(clusterPath("rg", cluster)+"/externalAuths", ver), nil, nil)
		var page struct {
			Value []struct {
				ID string `json:"id"`
			} `json:"value"`
			NextLink string `json:"nextLink"`
		}
		json.Unmarshal(r.body, &page)
		var ids []string
		for _, v := range page.Value {
			ids = append(ids, v.ID)
		}
		if page.Value == nil && r.code == 200 {
			t.Fatalf("value is not a list: %s", r.body)
		}
		return r.code, ids, r.body
	}
	if code, _, body := list("missing", testVersion); code != 404 || !strings.Contains(string(body), "ParentResourceNotFound") {
		t.Fatalf("list without the cluster: %d %s", code, body)
	}
	e.readyCluster(t, "c1")
	e.readyCluster(t, "c2")
	e.readyCluster(t, "c1-other") // a name with c1 as prefix: its auth is not c1's
	if code, ids, body := list("c1", testVersion); code != 200 || len(ids) != 0 {
		t.Fatalf("empty list: %d %s", code, body)
	}
	e.readyExternalAuth(t, "c1", "auth1", minimalExternalAuthBody())
	e.readyExternalAuth(t, "c2", "auth2", minimalExternalAuthBody())
	e.readyExternalAuth(t, "c1-other", "auth3", minimalExternalAuthBody())
	for _, ver := range specVersions {
		for cluster, want := range map[string]string{"c1": eaPath("c1", "auth1"), "c2": eaPath("c2", "auth2"), "c1-other": eaPath("c1-other", "auth3")} {
			if code, ids, body := list(cluster, ver); code != 200 || len(ids) != 1 || ids[0] != want {
				t.Fatalf("%s list of %s: %d %v, want [%s]: %s", ver, cluster, code, ids, want, body)
			}
		}
	}
}
