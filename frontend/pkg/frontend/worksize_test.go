//go:build !fuzzlean

package frontend

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// armLabels is n valid node labels in an ARM body, about 340 bytes each.
func armLabels(n int) []any {
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, map[string]any{"key": fmt.Sprintf("%s.example.com/k%05d", strings.Repeat("p", 240), i), "value": strings.Repeat("v", 63)})
	}
	return out
}

// TestNodePoolTooLargeForItsWork: the probe's node pool PUT with 9,000 valid labels (a 3.5 MB
// body) was accepted with 201 and then stayed Accepted for ever, Maestro refusing its 3.4 MB
// ManifestWork on each reconcile. Behind a real Cluster Service it is a 400 naming
// properties.labels, as is a PATCH that would make a pool too large; a pool just under the
// budget (1,000 such labels) is created.
func TestNodePoolTooLargeForItsWork(t *testing.T) {
	e, _, _ := poolEnv(t, "4.20.3")

	refusedLabels := func(resp response) {
		t.Helper()
		if resp.code != 400 || !slices.Equal(refusalTargets(t, resp), []string{"properties.labels"}) || !strings.Contains(string(resp.body), "too large") {
			t.Fatalf("= %d %.600s; want 400 naming properties.labels, too large", resp.code, resp.body)
		}
	}
	body := minimalPoolBody()
	poolProps(body)["labels"] = armLabels(9000)
	refusedLabels(e.put(poolPath("c1", "big"), body))

	body = minimalPoolBody()
	poolProps(body)["labels"] = armLabels(1000)
	if resp := e.put(poolPath("c1", "under"), body); resp.code != 201 {
		t.Fatalf("PUT of a pool under the budget = %d %.600s", resp.code, resp.body)
	}

	e.readyPool(t, "c1", "small", minimalPoolBody())
	refusedLabels(e.do("PATCH", poolPath("c1", "small"), mustJSON(map[string]any{"properties": map[string]any{"labels": armLabels(2000)}}), nil))
}

// armMirrors is n image digest mirror sources of 255 mirrors each, about 230 bytes a mirror.
func armMirrors(n int) []any {
	var out []any
	for i := range n {
		var ms []string
		for j := range 255 {
			ms = append(ms, fmt.Sprintf("m%d-%d.example.com/%s", i, j, strings.Repeat("r", 200)))
		}
		out = append(out, map[string]any{"source": fmt.Sprintf("quay.io/source%d/repo", i), "mirrors": ms})
	}
	return out
}

// TestClusterTooLargeForItsWork: the specification allows 240 image digest mirror sources of
// 255 mirrors of 255 characters, far more than a ManifestWork holds. Behind a real Cluster
// Service a cluster PUT whose work would be too large is a 400 naming
// properties.imageDigestMirrors; one under the budget is created.
func TestClusterTooLargeForItsWork(t *testing.T) {
	e := newCSEnv(t, realClusters(true))
	resp := e.do("PUT", withVersion(clusterPath("rg", "big"), newestClusterVersion), mustJSON(set(configBody(), "properties.imageDigestMirrors", armMirrors(10))), nil)
	if resp.code != 400 || !slices.Equal(refusalTargets(t, resp), []string{"properties.imageDigestMirrors"}) || !strings.Contains(string(resp.body), "too large") {
		t.Fatalf("PUT of a cluster too large for its work = %d %.600s; want 400 naming properties.imageDigestMirrors", resp.code, resp.body)
	}
	e.heldCluster(t, clusterPath("rg", "under"), newestClusterVersion, set(configBody(), "properties.imageDigestMirrors", armMirrors(3)))
}

// armValidationRules is n token claim validation rules, about 90 bytes each in the work.
func armValidationRules(n int) []any {
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, map[string]any{"type": "RequiredClaim", "requiredClaim": map[string]any{"claim": fmt.Sprintf("claim%05d", i), "requiredValue": "value"}})
	}
	return out
}

// TestExternalAuthTooLargeForItsWork: the probe's external auth PUT with 10,000 claim
// validation rules was answered 200 and then wedged its cluster (its HostedCluster, which carries
// the external auth, made a ManifestWork Maestro refused on every reconcile). Behind a real
// Cluster Service it is a 400 naming properties.claim.validationRules, on a create and on a
// PATCH; a hundred rules are accepted.
func TestExternalAuthTooLargeForItsWork(t *testing.T) {
	e := newCSEnv(t)
	refused := func(resp response) {
		t.Helper()
		if resp.code != 400 || !slices.Equal(refusalTargets(t, resp), []string{"properties.claim.validationRules"}) || !strings.Contains(string(resp.body), "too large") {
			t.Fatalf("= %d %.600s; want 400 naming properties.claim.validationRules, too large", resp.code, resp.body)
		}
	}
	eaCluster(t, e, "c1")
	body := eaRulesBody()
	set(eaProps(body), "claim.validationRules", armValidationRules(10000))
	refused(e.put(eaPath("c1", "big"), body))

	eaCluster(t, e, "c2")
	body = eaRulesBody()
	set(eaProps(body), "claim.validationRules", armValidationRules(100))
	e.readyExternalAuth(t, "c2", "auth1", body)
	refused(e.do("PATCH", eaPath("c2", "auth1"), mustJSON(map[string]any{"properties": map[string]any{"claim": map[string]any{"validationRules": armValidationRules(10000)}}}), nil))
}
