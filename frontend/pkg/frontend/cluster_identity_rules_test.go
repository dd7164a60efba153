//go:build !fuzzlean

// Left out of the fuzzing build, as rules_agreement_test.go: it links Cluster Service's server.

package frontend

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// identityMI is the resource ID prefix of the user-assigned identities of the identity rule tests.
const identityMI = "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"

const operatorIdentities = "properties.platform.operatorsAuthentication.userAssignedIdentities"

// assignedEntry is the value ARM gives an assigned identity when it forwards a request: its
// client and principal IDs (n varies them).
func assignedEntry(n int) map[string]any {
	return map[string]any{"clientId": fmt.Sprintf("00000000-0000-4000-8000-%012d", n), "principalId": fmt.Sprintf("10000000-0000-4000-8000-%012d", n)}
}

// identityRulesBody is a valid cluster for api-version ver whose identities agree: each of the
// seven control plane operators and the service managed identity has its own assigned identity,
// and the data plane operator's identity is not assigned.
func identityRulesBody(ver string) map[string]any {
	b := set(minimalBody(), "properties.version.id", "4.19.17") // in Cluster Service's catalogue
	if ver != "2024-06-10-preview" {                            // required since 2025-12-23-preview
		set(b, "properties.platform.vnetIntegrationSubnetId", "/subscriptions/"+testSub+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration")
	}
	assigned := map[string]any{identityMI + "smi": assignedEntry(100)}
	cp := map[string]any{}
	for i, op := range controlPlaneOperators {
		assigned[identityMI+op] = assignedEntry(i)
		cp[op] = identityMI + op
	}
	set(b, "identity.userAssignedIdentities", assigned)
	set(b, operatorIdentities+".controlPlaneOperators", cp)
	set(b, operatorIdentities+".dataPlaneOperators", map[string]any{"disk-csi-driver": identityMI + "dp-disk-csi-driver"})
	set(b, operatorIdentities+".serviceManagedIdentity", identityMI+"smi")
	return b
}

// armProblem is one problem of an ARM error body.
type armProblem struct{ target, message string }

// armProblems are the problems of a 400's ARM error body: its details, or the error itself.
func armProblems(t *testing.T, r response) []armProblem {
	t.Helper()
	var b struct {
		Error struct {
			Code, Target, Message string
			Details               []struct{ Code, Target, Message string }
		}
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("not an ARM error body: %v\n%s", err, r.body)
	}
	if len(b.Error.Details) == 0 {
		if b.Error.Code != "InvalidRequestContent" {
			t.Fatalf("code %q, want InvalidRequestContent: %s", b.Error.Code, r.body)
		}
		return []armProblem{{b.Error.Target, b.Error.Message}}
	}
	var out []armProblem
	for _, d := range b.Error.Details {
		if d.Code != "InvalidRequestContent" {
			t.Fatalf("detail code %q, want InvalidRequestContent: %s", d.Code, r.body)
		}
		out = append(out, armProblem{d.Target, d.Message})
	}
	return out
}

// wantProblems checks that r is a 400 naming exactly want's targets, each with a message that
// holds want's text for it.
// wantCreate PUTs body as a create of path in api-version ver: 201 when want is nil, else a 400
// naming want, with nothing stored.
func (e *env) wantCreate(t *testing.T, path, ver string, body map[string]any, want []armProblem) {
	t.Helper()
	resp := e.do("PUT", withVersion(path, ver), mustJSON(body), nil)
	if want == nil {
		if resp.code != 201 {
			t.Fatalf("%d %s; want 201", resp.code, resp.body)
		}
		return
	}
	wantProblems(t, resp, want)
	if rd, _ := e.resource(path); rd != nil {
		t.Fatalf("a refused create stored the cluster: %s", rd.Properties)
	}
}

func wantProblems(t *testing.T, r response, want []armProblem) {
	t.Helper()
	if r.code != 400 {
		t.Fatalf("%d %.300s; want 400 naming %v", r.code, r.body, want)
	}
	got := armProblems(t, r)
	if len(got) != len(want) {
		t.Fatalf("problems %v; want %v", got, want)
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(g armProblem) bool { return g.target == w.target })
		if i < 0 || !strings.Contains(got[i].message, w.message) {
			t.Fatalf("problems %v; want one at %s saying %q", got, w.target, w.message)
		}
	}
}

const (
	msgNotAssigned = "is not assigned to this resource"
	msgNotUsed     = "is assigned to this resource but not used"
	msgUsedTwice   = "is used multiple times"
	msgDataPlane   = "must not be assigned to this resource"
	// Of two keys naming one identity, the second in order is refused ("…/INGRESS" sorts first).
	msgAssignedTwice = "is assigned to this resource more than once"
)

// TestClusterIdentitiesMustBeAssigned: in every api-version, a cluster's assigned identities
// (identity.userAssignedIdentities) are exactly its control plane operators' identities and its
// service managed identity, each used once, and none of its data plane operators' identities,
// resource IDs compared case-insensitively; a PUT or a PATCH that breaks this is a 400 naming
// each offending entry, and stores nothing.
func TestClusterIdentitiesMustBeAssigned(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	assignedAt := func(rid string) string { return "identity.userAssignedIdentities[" + rid + "]" }
	assigned := func(b map[string]any) map[string]any {
		return b["identity"].(map[string]any)["userAssignedIdentities"].(map[string]any)
	}
	ua := func(b map[string]any) map[string]any {
		return b["properties"].(map[string]any)["platform"].(map[string]any)["operatorsAuthentication"].(map[string]any)["userAssignedIdentities"].(map[string]any)
	}
	cp := func(b map[string]any) map[string]any { return ua(b)["controlPlaneOperators"].(map[string]any) }

	creates := []struct {
		name string
		edit func(b map[string]any)
		want []armProblem // nil: accepted
	}{
		{"consistent_is_accepted", func(map[string]any) {}, nil},
		{"resource_ids_differing_only_in_case_match", func(b map[string]any) {
			cp(b)["ingress"] = strings.ToUpper(identityMI + "ingress")
			ua(b)["serviceManagedIdentity"] = strings.ToLower(identityMI + "SMI")
			delete(assigned(b), identityMI+"cloud-controller-manager")
			assigned(b)[strings.ToUpper(identityMI+"cloud-controller-manager")] = assignedEntry(5)
		}, nil},
		{"control_plane_identity_not_assigned", func(b map[string]any) {
			delete(assigned(b), identityMI+"ingress")
		}, []armProblem{{operatorIdentities + ".controlPlaneOperators[ingress]", msgNotAssigned}}},
		{"service_managed_identity_not_assigned", func(b map[string]any) {
			delete(assigned(b), identityMI+"smi")
		}, []armProblem{{operatorIdentities + ".serviceManagedIdentity", msgNotAssigned}}},
		{"assigned_identity_not_used", func(b map[string]any) {
			assigned(b)[identityMI+"spare"] = assignedEntry(200)
		}, []armProblem{{assignedAt(identityMI + "spare"), msgNotUsed}}},
		{"assigned_identity_used_by_two_operators", func(b map[string]any) {
			cp(b)["image-registry"] = identityMI + "INGRESS"
			delete(assigned(b), identityMI+"image-registry")
		}, []armProblem{{assignedAt(identityMI + "ingress"), msgUsedTwice}}},
		{"assigned_identity_used_by_an_operator_and_as_service_managed", func(b map[string]any) {
			ua(b)["serviceManagedIdentity"] = identityMI + "ingress"
			delete(assigned(b), identityMI+"smi")
		}, []armProblem{{assignedAt(identityMI + "ingress"), msgUsedTwice}}},
		{"one_identity_assigned_twice_in_different_case", func(b map[string]any) {
			assigned(b)[identityMI+"INGRESS"] = assignedEntry(201)
		}, []armProblem{{assignedAt(identityMI + "ingress"), msgAssignedTwice}}},
		{"data_plane_identity_assigned", func(b map[string]any) {
			ua(b)["dataPlaneOperators"] = map[string]any{"disk-csi-driver": strings.ToUpper(identityMI + "disk-csi-driver")}
		}, []armProblem{{operatorIdentities + ".dataPlaneOperators[disk-csi-driver]", msgDataPlane}}},
		{"several_problems_are_each_named", func(b map[string]any) {
			delete(assigned(b), identityMI+"ingress")
			assigned(b)[identityMI+"spare"] = assignedEntry(200)
			ua(b)["dataPlaneOperators"] = map[string]any{"disk-csi-driver": identityMI + "smi"}
		}, []armProblem{
			{operatorIdentities + ".controlPlaneOperators[ingress]", msgNotAssigned},
			{assignedAt(identityMI + "spare"), msgNotUsed},
			{operatorIdentities + ".dataPlaneOperators[disk-csi-driver]", msgDataPlane},
		}},
	}
	patch := func(identity map[string]any, operators map[string]any) map[string]any {
		b := map[string]any{}
		if identity != nil {
			b["identity"] = map[string]any{"userAssignedIdentities": identity}
		}
		if operators != nil {
			set(b, operatorIdentities, operators)
		}
		return b
	}
	// Each PATCH is sent to a created cluster whose identities agree (identityRulesBody); the
	// refused ones change nothing, so they share one.
	patches := []struct {
		name string
		body map[string]any
		want []armProblem // nil: accepted
	}{
		{"removing_an_identity_still_used_is_refused", patch(map[string]any{identityMI + "ingress": nil}, nil),
			[]armProblem{{operatorIdentities + ".controlPlaneOperators[ingress]", msgNotAssigned}}},
		{"adding_an_identity_not_used_is_refused", patch(map[string]any{identityMI + "spare": assignedEntry(200)}, nil),
			[]armProblem{{assignedAt(identityMI + "spare"), msgNotUsed}}},
		{"pointing_a_data_plane_operator_at_an_assigned_identity_is_refused",
			patch(nil, map[string]any{"dataPlaneOperators": map[string]any{"disk-csi-driver": identityMI + "smi"}}),
			[]armProblem{{operatorIdentities + ".dataPlaneOperators[disk-csi-driver]", msgDataPlane}}},
		{"moving_an_operator_to_a_new_assigned_identity_is_accepted",
			patch(map[string]any{identityMI + "ingress": nil, identityMI + "ingress-2": assignedEntry(300)},
				map[string]any{"controlPlaneOperators": map[string]any{"ingress": identityMI + "ingress-2"}}), nil},
	}

	for _, ver := range api.Versions() {
		t.Run(ver, func(t *testing.T) {
			for i, c := range creates {
				t.Run("put_"+c.name, func(t *testing.T) {
					path := clusterPath("rg", fmt.Sprintf("id-%s-%d", strings.ReplaceAll(ver, "-", ""), i))
					body := identityRulesBody(ver)
					c.edit(body)
					e.wantCreate(t, path, ver, body, c.want)
				})
			}

			path := clusterPath("rg", "id-patched-"+strings.ReplaceAll(ver, "-", ""))
			created := e.do("PUT", withVersion(path, ver), mustJSON(identityRulesBody(ver)), nil)
			if created.code != 201 {
				t.Fatalf("create: %d %s", created.code, created.body)
			}
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			for _, c := range patches {
				t.Run("patch_"+c.name, func(t *testing.T) {
					before, _ := e.resource(path)
					resp := e.do("PATCH", withVersion(path, ver), mustJSON(c.body), nil)
					if c.want == nil {
						if after, _ := e.resource(path); resp.code != 202 || !strings.Contains(string(after.Properties), identityMI+"ingress-2") {
							t.Fatalf("%d %s; want 202 and the new identity stored", resp.code, resp.body)
						}
						return
					}
					wantProblems(t, resp, c.want)
					if after, _ := e.resource(path); string(after.Properties) != string(before.Properties) || after.ProvisioningState != armdoc.StateSucceeded {
						t.Fatalf("a refused PATCH changed the cluster: %s %s", after.ProvisioningState, after.Properties)
					}
				})
			}
		})
	}
}
