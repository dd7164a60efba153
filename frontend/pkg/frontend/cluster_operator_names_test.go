//go:build !fuzzlean

package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/frontend/pkg/rolesets"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// operatorNamesRoleSets is the catalogue of the operator name tests: 4.19 has the seven
// control plane operators identityRulesBody names (and control-plane) and two data plane
// operators; 4.20 has what 4.19 has; 4.21, the newest, drops cloud-network-config and adds kms.
func operatorNamesRoleSets(t *testing.T) *rolesets.Catalogue {
	t.Helper()
	role := `[{"name": "r", "resourceId": "/providers/Microsoft.Authorization/roleDefinitions/88366f10-ed47-4cc0-9fab-c8a06148393e"}]`
	ops := func(names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, fmt.Sprintf(`{"name": %q, "required": "Always", "roleDefinitions": %s}`, n, role))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	cp419 := append([]string{"control-plane"}, controlPlaneOperators...)
	var cp421 []string
	for _, n := range cp419 {
		if n != "cloud-network-config" {
			cp421 = append(cp421, n)
		}
	}
	cp421 = append(cp421, "kms")
	dp := ops("disk-csi-driver", "image-registry")
	c, err := rolesets.Parse([]byte(`{"roleSets": [
		{"versions": ["4.19", "4.20"], "controlPlaneOperators": ` + ops(cp419...) + `, "dataPlaneOperators": ` + dp + `},
		{"versions": ["4.21"], "controlPlaneOperators": ` + ops(cp421...) + `, "dataPlaneOperators": ` + dp + `}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClusterOperatorNamesMustBeTheVersionsOperators: in every api-version, a PUT or PATCH whose
// controlPlaneOperators or dataPlaneOperators names an operator the role set of the cluster's
// minor version does not list (names compared exactly) is a 400 naming the entry, and stores
// nothing; the role set's operators are not required (empty maps are accepted); a cluster
// stored with a name the rule refuses still takes a write that leaves its operators as they
// are; an upgrade to a minor whose role set lacks a stored operator is refused naming it, one
// to a minor whose role set has them all is accepted.
func TestClusterOperatorNamesMustBeTheVersionsOperators(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.RoleSets = operatorNamesRoleSets(t) })
	ua := func(b map[string]any) map[string]any {
		return b["properties"].(map[string]any)["platform"].(map[string]any)["operatorsAuthentication"].(map[string]any)["userAssignedIdentities"].(map[string]any)
	}
	cp := func(b map[string]any) map[string]any { return ua(b)["controlPlaneOperators"].(map[string]any) }
	dp := func(b map[string]any) map[string]any { return ua(b)["dataPlaneOperators"].(map[string]any) }
	// renameCP gives the control plane operator from's identity to the name to.
	renameCP := func(b map[string]any, from, to string) {
		cp(b)[to] = cp(b)[from]
		delete(cp(b), from)
	}
	const cpAt, dpAt = operatorIdentities + ".controlPlaneOperators", operatorIdentities + ".dataPlaneOperators"
	creates := []struct {
		name     string
		versions string // "" every api-version, else only this one
		edit     func(b map[string]any)
		want     []armProblem // nil: accepted
	}{
		{"the_versions_operators_are_accepted", "", func(map[string]any) {}, nil},
		{"empty_operator_maps_are_accepted", "", func(b map[string]any) {
			b["identity"] = minimalBody()["identity"]
			ua(b)["controlPlaneOperators"], ua(b)["dataPlaneOperators"] = map[string]any{}, map[string]any{}
		}, nil},
		{"unknown_control_plane_operator_is_refused", "", func(b map[string]any) { renameCP(b, "ingress", "no-such-operator") },
			[]armProblem{{cpAt + "[no-such-operator]", "OpenShift 4.19 has no control plane operator 'no-such-operator'"}}},
		{"message_lists_the_versions_operators", "", func(b map[string]any) { renameCP(b, "ingress", "no-such-operator") },
			[]armProblem{{cpAt + "[no-such-operator]", "control-plane, image-registry, ingress"}}},
		{"unknown_data_plane_operator_is_refused", "", func(b map[string]any) { dp(b)["no-such-operator"] = identityMI + "dp-x" },
			[]armProblem{{dpAt + "[no-such-operator]", "OpenShift 4.19 has no data plane operator 'no-such-operator'"}}},
		{"a_control_plane_operator_is_not_a_data_plane_operator", "", func(b map[string]any) { dp(b)["control-plane"] = identityMI + "dp-x" },
			[]armProblem{{dpAt + "[control-plane]", "has no data plane operator 'control-plane'"}}},
		{"names_are_case_sensitive", "", func(b map[string]any) { renameCP(b, "ingress", "Ingress") },
			[]armProblem{{cpAt + "[Ingress]", "did you mean 'ingress'"}}},
		{"minor_version_id_is_its_minor", "", func(b map[string]any) {
			set(b, "properties.version.id", "4.21")
		}, []armProblem{{cpAt + "[cloud-network-config]", "OpenShift 4.21 has no control plane operator 'cloud-network-config'"}}},
		// Whether 4.22 is offered is Cluster Service's to answer (this fake accepts it), with
		// the body's other problems; the frontend does not refuse it ahead of them.
		{"a_minor_without_a_role_set_is_left_to_cluster_service", "", func(b map[string]any) {
			set(b, "properties.version.id", "4.22.1")
		}, nil},
		{"absent_version_is_the_newest_minor", "2024-06-10-preview", func(b map[string]any) {
			delete(b["properties"].(map[string]any), "version") // 4.19's operators, checked against 4.21's
		}, []armProblem{{cpAt + "[cloud-network-config]", "the newest minor version with a role set is assumed"}}},
	}
	for _, ver := range api.Versions() {
		t.Run(ver, func(t *testing.T) {
			for i, c := range creates {
				if c.versions != "" && c.versions != ver {
					continue
				}
				t.Run("put_"+c.name, func(t *testing.T) {
					path := clusterPath("rg", fmt.Sprintf("on-%s-%d", strings.ReplaceAll(ver, "-", ""), i))
					body := identityRulesBody(ver)
					c.edit(body)
					e.wantCreate(t, path, ver, body, c.want)
				})
			}
		})
	}

	// A cluster stored with an operator no role set has (written before the rule): a write that
	// leaves its operators as stored is accepted, one that changes them is held to the rule.
	for _, ver := range api.Versions() {
		t.Run(ver+"/stored_before_the_rule", func(t *testing.T) {
			path := clusterPath("rg", "on-stored-"+strings.ReplaceAll(ver, "-", ""))
			created := e.do("PUT", withVersion(path, ver), mustJSON(identityRulesBody(ver)), nil)
			if created.code != 201 {
				t.Fatalf("create: %d %s", created.code, created.body)
			}
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			rd, doc := e.resource(path)
			var p map[string]any
			if err := json.Unmarshal(rd.Properties, &p); err != nil {
				t.Fatal(err)
			}
			dp(p)["retired-operator"] = identityMI + "dp-retired"
			rd.Properties = mustJSON(p)
			if _, err := e.store.Replace(context.Background(), mustWithBody(doc, rd), doc.ETag); err != nil {
				t.Fatal(err)
			}
			tags := e.do("PATCH", withVersion(path, ver), mustJSON(map[string]any{"tags": map[string]any{"team": "a"}}), nil)
			if tags.code != 200 && tags.code != 202 {
				t.Fatalf("a tag change of a cluster stored before the rule: %d %s; want it accepted", tags.code, tags.body)
			}
			if after, _ := e.resource(path); !strings.Contains(string(after.Properties), "retired-operator") {
				t.Fatalf("the tag change lost the stored operator: %s", after.Properties)
			}
			if tags.code == 202 {
				e.finish(opIDFrom(t, tags.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			}
			change := e.do("PATCH", withVersion(path, ver), mustJSON(set(map[string]any{}, operatorIdentities+".dataPlaneOperators",
				map[string]any{"image-registry": identityMI + "dp-image-registry"})), nil)
			wantProblems(t, change, []armProblem{{dpAt + "[retired-operator]", "OpenShift 4.19 has no data plane operator 'retired-operator'"}})
		})
	}

	// An upgrade is checked against the new minor's role set (api-versions that let a write
	// change properties.version.id).
	for _, ver := range api.Versions() {
		if ver == "2024-06-10-preview" {
			continue
		}
		t.Run(ver+"/upgrade", func(t *testing.T) {
			path := clusterPath("rg", "on-up-"+strings.ReplaceAll(ver, "-", ""))
			created := e.do("PUT", withVersion(path, ver), mustJSON(identityRulesBody(ver)), nil)
			if created.code != 201 {
				t.Fatalf("create: %d %s", created.code, created.body)
			}
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			before, _ := e.resource(path)
			up := e.do("PATCH", withVersion(path, ver), mustJSON(set(map[string]any{}, "properties.version.id", "4.21.0")), nil)
			wantProblems(t, up, []armProblem{{cpAt + "[cloud-network-config]", "OpenShift 4.21 has no control plane operator 'cloud-network-config'"}})
			if after, _ := e.resource(path); string(after.Properties) != string(before.Properties) {
				t.Fatalf("a refused upgrade changed the cluster: %s", after.Properties)
			}
			// 4.20's role set has every stored operator: the upgrade is not the rule's to refuse.
			ok := e.do("PATCH", withVersion(path, ver), mustJSON(set(map[string]any{}, "properties.version.id", "4.20.3")), nil)
			if ok.code != 202 {
				t.Fatalf("an upgrade to a minor that runs every stored operator: %d %s; want 202", ok.code, ok.body)
			}
		})
	}
}
