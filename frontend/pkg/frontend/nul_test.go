package frontend

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestNULInABodyIs400 pins, over HTTP and a real PostgreSQL store, that a NUL (\u0000) in a
// PUT or PATCH body is a 400 naming where it stands, and nothing is written: the store's jsonb
// refuses it, and such a body was a 500 from the write's transaction.
func TestNULInABodyIs400(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	cluster := clusterPath("rg", "c")
	resp := e.put(cluster, set(minimalBody(), "tags", map[string]any{"keep": "1"}))
	if resp.code != 201 {
		t.Fatalf("PUT cluster: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	pool := poolPath("c", "p")
	e.readyPool(t, "c", "p", set(minimalPoolBody(), "tags", map[string]any{"keep": "1"}))

	for _, tc := range []struct {
		name, method, path, body, target string
	}{
		{"node_pool_PUT_label_key", "PUT", poolPath("c", "q"), `{"location":"` + testLocation + `","properties":{"replicas":1,"labels":[{"key":"a\u0000b","value":"c"}],"platform":{"vmSize":"Standard_D8s_v3"}}}`, "properties.labels[0].key"},
		{"node_pool_PATCH_label_value", "PATCH", pool, `{"properties":{"labels":[{"key":"a","value":"\u0000"}]}}`, "properties.labels[0].value"},
		{"node_pool_PATCH_taint_key", "PATCH", pool, `{"properties":{"taints":[{"key":"k\u0000","value":"v","effect":"NoSchedule"}]}}`, "properties.taints[0].key"},
		{"node_pool_PATCH_tag", "PATCH", pool, `{"tags":{"a":"\u0000"}}`, "tags.a"},
		{"cluster_PATCH_tag", "PATCH", cluster, `{"tags":{"a":"\u0000"}}`, "tags.a"},
		{"cluster_PUT_tag_key", "PUT", cluster, string(mustJSON(set(minimalBody(), "tags", map[string]any{"\x00": "x"}))), `tags.\u0000`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, tc.path, []byte(tc.body), nil)
			if code, target := resp.armError(t); resp.code != 400 || code != "InvalidRequestContent" || target != tc.target {
				t.Fatalf("%d %s; want 400 InvalidRequestContent naming %s", resp.code, resp.body, tc.target)
			}
			if !strings.Contains(string(resp.body), "NUL character") {
				t.Fatalf("the message does not say why: %s", resp.body)
			}
		})
	}
	for _, p := range []string{cluster, pool} {
		if rd, _ := e.resource(p); len(rd.Tags) != 1 || rd.Tags["keep"] != "1" {
			t.Fatalf("%s: stored tags %v after refused writes", p, rd.Tags)
		}
	}
	if rd, _ := e.resource(poolPath("c", "q")); rd != nil {
		t.Fatalf("a refused PUT created node pool q: %+v", rd)
	}
}

// TestNULInAPathIs400: a resource ID holding a NUL or bytes that are not UTF-8 names no
// resource; a resource group's name reached the store's key as it was, and PostgreSQL's
// refusal was a 500.
func TestNULInAPathIs400(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	for _, p := range []string{
		clusterPath("r%00g", "c"), clusterPath("r%ffg", "c"), clusterPath("rg", "a%00b"), poolPath("c", "p%00"),
		"/subscriptions/" + testSub + "/resourceGroups/r%00g/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters",
	} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			if m != "GET" && strings.HasSuffix(p, "hcpOpenShiftClusters") {
				continue
			}
			resp := e.do(m, p, mustJSON(minimalBody()), nil)
			if code, _ := resp.armError(t); resp.code != 400 || code != "InvalidResourceName" {
				t.Errorf("%s %s: %d %s; want 400 InvalidResourceName", m, p, resp.code, resp.body)
			}
		}
	}
}

// TestEncodedSlashInAPathIs400: a name holding an encoded slash (%2F, any case) names no
// resource, since ARM names never hold one. The path was decoded before routing, so
// …/hcpOpenShiftClusters/c%2FnodePools%2Fp was answered as node pool p of cluster c (a 404 for a
// missing cluster here, before).
func TestEncodedSlashInAPathIs400(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	for _, p := range []string{
		clusterPath("rg", "c%2FnodePools%2Fp"), clusterPath("r%2fg", "c"), poolPath("c", "p%2F"),
	} {
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			resp := e.do(m, p, mustJSON(minimalBody()), nil)
			if code, _ := resp.armError(t); resp.code != 400 || code != "InvalidResourceName" {
				t.Errorf("%s %s: %d %s; want 400 InvalidResourceName", m, p, resp.code, resp.body)
			}
		}
	}
}

// TestNULInSystemDataIsIgnored: ARM's x-ms-arm-resource-system-data header is JSON, so a NUL
// arrives there escaped; stored as it was, PostgreSQL refused the document and the write was a
// 500. The header is now invalid, as one that does not parse: ignored (logged), the write done.
func TestNULInSystemDataIsIgnored(t *testing.T) {
	e, _ := newNodePoolEnv(t)
	resp := e.do("PUT", clusterPath("rg", "c"), mustJSON(minimalBody()), map[string]string{arm.HeaderSystemData: `{"createdBy":"a\u0000b","createdByType":"User"}`})
	if resp.code != 201 {
		t.Fatalf("PUT with a NUL in systemData = %d %s; want 201, the header ignored", resp.code, resp.body)
	}
	if rd, _ := e.resource(clusterPath("rg", "c")); rd == nil || strings.Contains(string(rd.SystemData), `\u0000`) {
		t.Fatalf("stored %+v", rd)
	}
}
