package frontend

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestClusterReplaceKeepsStoredDefaults: a PUT that replaces a cluster and leaves out properties
// Cluster Service defaults keeps the stored values (Cluster Service keeps them for an empty
// field), so leaving out network is not a change of an immutable field, and the answer shows
// what the cluster has.
func TestClusterReplaceKeepsStoredDefaults(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	created := set(minimalBody(), "properties.network", map[string]any{"podCidr": "10.132.0.0/14", "hostPrefix": 24})
	set(created, "properties.version.channelGroup", "candidate")
	resp := e.put(path, created)
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

	resp = e.put(path, set(minimalBody(), "tags", map[string]any{"k": "v"}))
	if resp.code != 200 {
		t.Fatalf("PUT leaving network and channelGroup out = %d %s, want 200", resp.code, resp.body)
	}
	props := resp.json(t)["properties"].(map[string]any)
	netw, _ := props["network"].(map[string]any)
	ver, _ := props["version"].(map[string]any)
	if netw["podCidr"] != "10.132.0.0/14" || netw["hostPrefix"] != float64(24) || netw["serviceCidr"] != "172.30.0.0/16" || ver["channelGroup"] != "candidate" {
		t.Fatalf("the replace shows network %v, version %v; want the stored ones", netw, ver)
	}
	rd, _ := e.resource(path)
	updateMu.Lock()
	defer updateMu.Unlock()
	for _, u := range updateCalls {
		if u.GetId() == rd.InternalID {
			t.Fatalf("a replace that changes only tags sent Cluster Service an update: %v", u)
		}
	}
}

// TestClusterGetShowsDefaultsOfALostWrite: a create whose write of Cluster Service's answer was
// lost (the frontend ended before it) leaves a document without the defaults; a GET fills them
// from the spec Cluster Service holds.
func TestClusterGetShowsDefaultsOfALostWrite(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	resp := e.put(path, minimalBody())
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	// The document as the first write left it: what the caller sent, no defaults.
	rd, doc := e.resource(path)
	var p map[string]any
	if err := json.Unmarshal(rd.Properties, &p); err != nil {
		t.Fatal(err)
	}
	props := p["properties"].(map[string]any)
	props["network"] = map[string]any{}
	props["version"] = map[string]any{"id": "4.19.7"}
	props["api"] = map[string]any{}
	rd.Properties = mustJSON(p)
	if _, err := e.store.Replace(context.Background(), mustWithBody(doc, rd), doc.ETag); err != nil {
		t.Fatal(err)
	}

	got := e.do("GET", path, nil, nil)
	if got.code != 200 {
		t.Fatalf("GET = %d %s", got.code, got.body)
	}
	gp := got.json(t)["properties"].(map[string]any)
	netw, _ := gp["network"].(map[string]any)
	ver, _ := gp["version"].(map[string]any)
	apiP, _ := gp["api"].(map[string]any)
	held := e.cs.clusters[rd.InternalID].GetSpec()
	if netw["podCidr"] != held.GetNetwork().GetPodCidr() || netw["hostPrefix"] != float64(held.GetNetwork().GetHostPrefix()) ||
		ver["channelGroup"] != held.GetChannelGroup() || apiP["visibility"] != held.GetApiVisibility() || ver["id"] != "4.19.7" {
		t.Fatalf("GET shows network %v, version %v, api %v; Cluster Service holds %v", netw, ver, apiP, held)
	}
}

// TestClusterReplaceAfterALostWrite: after a create whose write of Cluster Service's answer was
// lost, a PUT of what the GET showed (the defaults included) is not a change of the network.
func TestClusterReplaceAfterALostWrite(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	resp := e.put(path, minimalBody())
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, doc := e.resource(path)
	var p map[string]any
	if err := json.Unmarshal(rd.Properties, &p); err != nil {
		t.Fatal(err)
	}
	p["properties"].(map[string]any)["network"] = map[string]any{}
	rd.Properties = mustJSON(p)
	if _, err := e.store.Replace(context.Background(), mustWithBody(doc, rd), doc.ETag); err != nil {
		t.Fatal(err)
	}
	got := e.do("GET", path, nil, nil)
	if got.code != 200 {
		t.Fatalf("GET = %d %s", got.code, got.body)
	}
	body := minimalBody()
	set(body, "properties.network", got.json(t)["properties"].(map[string]any)["network"])
	if resp := e.put(path, body); resp.code != 200 {
		t.Fatalf("PUT of the network the GET showed = %d %s, want 200", resp.code, resp.body)
	}
}

// TestClusterPatchNullKeepsStoredDefault: a merge-patch null on a property Cluster Service
// defaults (the channel group, the one a PATCH may hold) leaves it empty, which keeps the
// stored value as a replace does, and as Cluster Service does with an empty channel group.
func TestClusterPatchNullKeepsStoredDefault(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	resp := e.put(path, set(minimalBody(), "properties.version.channelGroup", "candidate"))
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	if resp := e.do("PATCH", path, []byte(`{"properties":{"version":{"channelGroup":null}}}`), nil); resp.code != 202 {
		t.Fatalf("PATCH channelGroup null = %d %s, want 202", resp.code, resp.body)
	}
	got := e.do("GET", path, nil, nil)
	if g := got.json(t)["properties"].(map[string]any)["version"].(map[string]any)["channelGroup"]; g != "candidate" {
		t.Fatalf("GET shows channelGroup %v after the PATCH, want the stored candidate", g)
	}
	rd, _ := e.resource(path)
	var stored map[string]any
	if err := json.Unmarshal(rd.Properties, &stored); err != nil {
		t.Fatal(err)
	}
	if g := stored["properties"].(map[string]any)["version"].(map[string]any)["channelGroup"]; g != "candidate" {
		t.Fatalf("the document holds channelGroup %v after the PATCH, want candidate", g)
	}
}
