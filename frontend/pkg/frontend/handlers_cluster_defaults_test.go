package frontend

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestClusterReplaceTakesDefaults: a PUT replaces, so what it leaves out takes Cluster Service's
// default (the specification's "if not specified" in every api-version): leaving out the channel
// group of a candidate cluster asks for stable, and leaving out a network whose stored value is
// not the default is a change of a create-only property, refused.
func TestClusterReplaceTakesDefaults(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	custom := map[string]any{"podCidr": "10.132.0.0/14", "hostPrefix": 24}
	created := set(minimalBody(), "properties.network", custom)
	set(created, "properties.version.channelGroup", "candidate")
	resp := e.put(path, created)
	if resp.code != 201 {
		t.Fatalf("PUT = %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)

	if resp := e.put(path, minimalBody()); resp.code != 400 || !strings.Contains(string(resp.body), "properties.network.podCidr") {
		t.Fatalf("PUT leaving out a network that is not the default = %d %s, want 400 naming properties.network.podCidr", resp.code, resp.body)
	}
	resp = e.put(path, set(minimalBody(), "properties.network", custom))
	if resp.code != 200 {
		t.Fatalf("PUT leaving out the channel group = %d %s, want 200", resp.code, resp.body)
	}
	if g := resp.json(t)["properties"].(map[string]any)["version"].(map[string]any)["channelGroup"]; g != "stable" {
		t.Fatalf("the replace shows channelGroup %v, want stable (the default)", g)
	}
}

// TestClusterGetShowsDefaultsOfALostWrite: a document without the defaults (written by hand, or
// by a frontend that stored them only after Cluster Service's answer and ended before it): a GET
// fills them from the spec Cluster Service holds.
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

// TestClusterPatchNullTakesTheDefault: a merge-patch null removes the channel group, which then
// takes Cluster Service's default (stable), as a PUT that leaves it out does, whether the patch
// changes nothing else or something else too; the document never holds an empty channel group.
func TestClusterPatchNullTakesTheDefault(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"alone", `{"properties":{"version":{"channelGroup":null}}}`},
		{"with_another_change", `{"properties":{"version":{"channelGroup":null},"nodeDrainTimeoutMinutes":30}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			path := clusterPath("rg", "c1")
			resp := e.put(path, set(minimalBody(), "properties.version.channelGroup", "candidate"))
			if resp.code != 201 {
				t.Fatalf("PUT = %d %s", resp.code, resp.body)
			}
			e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
			if resp := e.do("PATCH", path, []byte(tc.body), nil); resp.code != 202 {
				t.Fatalf("PATCH = %d %s, want 202", resp.code, resp.body)
			}
			rd, _ := e.resource(path)
			var stored map[string]any
			if err := json.Unmarshal(rd.Properties, &stored); err != nil {
				t.Fatal(err)
			}
			if g := stored["properties"].(map[string]any)["version"].(map[string]any)["channelGroup"]; g != "stable" {
				t.Fatalf("the document holds channelGroup %v after the PATCH, want stable", g)
			}
		})
	}
}

// TestClusterCreateStoresDefaultsWithItsFirstWrite: a create's resource document holds Cluster
// Service's defaults from its first write, so a create whose Cluster Service answer is lost (503,
// the document kept for the retry) already shows them, and a GET, the retry and a later replace
// of what the GET showed meet no difference. Before, with the defaults written only after Cluster
// Service's answer, such a document showed an empty network and a PUT of the network a GET had
// shown was refused as a change of an immutable field.
func TestClusterCreateStoresDefaultsWithItsFirstWrite(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	e.cs.setCreateErr(status.Error(codes.Unavailable, "connection refused"))
	resp := e.put(path, minimalBody())
	e.cs.setCreateErr(nil)
	if resp.code != 503 {
		t.Fatalf("PUT while Cluster Service is unreachable = %d %s, want 503", resp.code, resp.body)
	}
	rd, _ := e.resource(path)
	var stored struct {
		Properties struct {
			Network map[string]any `json:"network"`
			Version map[string]any `json:"version"`
			API     map[string]any `json:"api"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(rd.Properties, &stored); err != nil {
		t.Fatal(err)
	}
	p := stored.Properties
	if p.Network["podCidr"] != "10.128.0.0/14" || p.Network["hostPrefix"] != float64(23) || p.Version["channelGroup"] != "stable" || p.API["visibility"] != "Public" {
		t.Fatalf("the create's first write holds network %v, version %v, api %v; want Cluster Service's defaults", p.Network, p.Version, p.API)
	}
	retry := e.put(path, minimalBody())
	if retry.code != 201 {
		t.Fatalf("retry = %d %s, want 201", retry.code, retry.body)
	}
	e.finish(opIDFrom(t, retry.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	got := e.do("GET", path, nil, nil)
	body := minimalBody()
	set(body, "properties.network", got.json(t)["properties"].(map[string]any)["network"])
	if resp := e.put(path, body); resp.code != 200 {
		t.Fatalf("PUT of the network the GET showed = %d %s, want 200", resp.code, resp.body)
	}
}

// TestClusterExplicitZeroHostPrefixIsRefused: an explicit hostPrefix 0 is a value, refused
// before anything is written or Cluster Service is called, not taken for the default (Cluster
// Service, holding no presence, would default it to 23 and the caller would be shown 23).
func TestClusterExplicitZeroHostPrefixIsRefused(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "c1")
	resp := e.put(path, set(minimalBody(), "properties.network.hostPrefix", 0))
	if resp.code != 400 {
		t.Fatalf("PUT = %d %s, want 400", resp.code, resp.body)
	}
	if target := resp.json(t)["error"].(map[string]any)["target"]; target != "properties.network.hostPrefix" {
		t.Errorf("the refusal names %v, want properties.network.hostPrefix", target)
	}
	if rd, _ := e.resource(path); rd != nil {
		t.Error("a refused create left a resource document")
	}
	if creates, _, _ := e.cs.snapshot(); len(creates) != 0 {
		t.Errorf("a refused create reached Cluster Service %d times", len(creates))
	}
}
