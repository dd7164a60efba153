package frontend

import (
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestNullTagValue: a tag is a string, so a PUT naming a tag with a null value is a 400
// naming it (it was stored as ""), while a PATCH, a JSON merge patch, removes that tag.
// Clusters and node pools.
func TestNullTagValue(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	cluster := clusterPath("rg", "c")
	resp := e.put(cluster, set(minimalBody(), "tags", map[string]any{"keep": "1", "drop": "2"}))
	if resp.code != 201 {
		t.Fatalf("PUT cluster: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	pool := poolPath("c", "p")
	e.readyPool(t, "c", "p", set(minimalPoolBody(), "tags", map[string]any{"keep": "1", "drop": "2"}))

	for _, tc := range []struct{ name, path string }{{"cluster", cluster}, {"node_pool", pool}} {
		t.Run(tc.name+"/put_null_returns_400_naming_the_tag", func(t *testing.T) {
			body := minimalBody()
			if tc.path == pool {
				body = minimalPoolBody()
			}
			resp := e.put(tc.path, set(body, "tags", map[string]any{"keep": "1", "drop": nil}))
			if code, target := resp.armError(t); resp.code != 400 || code != "InvalidRequestContent" || target != "tags[drop]" {
				t.Fatalf("%d %s", resp.code, resp.body)
			}
			if rd, _ := e.resource(tc.path); len(rd.Tags) != 2 || rd.Tags["drop"] != "2" {
				t.Fatalf("stored tags %v", rd.Tags)
			}
		})
		t.Run(tc.name+"/patch_null_removes_the_tag", func(t *testing.T) {
			resp := e.do("PATCH", tc.path, []byte(`{"tags":{"drop":null}}`), nil)
			if resp.code != 202 && resp.code != 200 {
				t.Fatalf("%d %s", resp.code, resp.body)
			}
			if rd, _ := e.resource(tc.path); len(rd.Tags) != 1 || rd.Tags["keep"] != "1" {
				t.Fatalf("stored tags %v", rd.Tags)
			}
		})
	}
}
