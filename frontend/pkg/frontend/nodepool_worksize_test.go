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
