//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"fmt"
	"slices"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestNodePoolScalingAgrees: for every replicas, autoScaling.min and autoScaling.max around each
// bound (the specification's 0 and 200 without a zone, HyperShift's minimum 1, Cluster Service's
// 500), with and without an availability zone, and with replicas beside autoScaling, the
// frontend's answer to a PUT (a real Cluster Service behind it), Cluster Service's own rule and
// the documented rule (scalingOutcome) agree.
func TestNodePoolScalingAgrees(t *testing.T) {
	e, cl, catalogue := poolEnv(t, "4.19.17")

	type scaling struct {
		replicas *int32
		as       *csv1.NodePoolAutoscaling
		zone     string
	}
	values := []int32{-1, 0, 1, 2, 199, 200, 201, 499, 500, 501}
	var sizes []scaling
	for _, zone := range []string{"", "1"} {
		for _, r := range values {
			sizes = append(sizes, scaling{replicas: &r, zone: zone})
		}
		for _, lo := range values {
			for _, hi := range values {
				if hi < lo-1 {
					continue // far below min: the same answer as hi = lo-1
				}
				sizes = append(sizes, scaling{as: &csv1.NodePoolAutoscaling{Min: lo, Max: hi}, zone: zone})
			}
		}
	}
	for _, r := range []int32{0, 1} {
		sizes = append(sizes, scaling{replicas: &r, as: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}})
	}

	var cases []ruleCase[*csv1.NodePoolSpec]
	for _, c := range sizes {
		name := fmt.Sprintf("zone=%q", c.zone)
		if c.replicas != nil {
			name += fmt.Sprintf("_replicas=%d", *c.replicas)
		}
		if c.as != nil {
			name += fmt.Sprintf("_min=%d_max=%d", c.as.Min, c.as.Max)
		}
		cases = append(cases, ruleCase[*csv1.NodePoolSpec]{name: name,
			body: func(props map[string]any) {
				if c.zone != "" {
					props["platform"].(map[string]any)["availabilityZone"] = c.zone
				}
				if c.replicas != nil {
					props["replicas"] = *c.replicas
				}
				if c.as != nil {
					props["autoScaling"] = map[string]any{"min": c.as.Min, "max": c.as.Max}
				}
			},
			spec: func(s *csv1.NodePoolSpec) {
				s.Platform.AvailabilityZone = c.zone
				s.Autoscaling = c.as
				if c.replicas != nil {
					s.Replicas = *c.replicas
				}
			},
			want: scalingOutcome(c.replicas, c.as, c.zone)})
	}
	body := func() map[string]any {
		return map[string]any{"location": testLocation, "properties": map[string]any{"platform": map[string]any{"vmSize": "Standard_D8s_v3"}}}
	}
	runRuleCases(t, e, poolCreates(cl, catalogue, "", body, &csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}), cases)

	// A replace (PUT of an existing pool) reaches Cluster Service as an update naming the whole
	// size: the same rule answers.
	t.Run("replace_with_replicas_and_autoscaling", func(t *testing.T) {
		e.readyPool(t, "c1", "upd", minimalPoolBody())
		both := set(set(minimalPoolBody(), "properties.replicas", 3), "properties.autoScaling", map[string]any{"min": 1, "max": 3})
		resp := e.put(poolPath("c1", "upd"), both)
		if got := refusalTargets(t, resp); resp.code != 400 || !slices.Equal(got, []string{"properties.replicas"}) {
			t.Fatalf("PUT with replicas and autoScaling = %d %v, want 400 naming properties.replicas", resp.code, got)
		}
		only := set(set(minimalPoolBody(), "properties.replicas", nil), "properties.autoScaling", map[string]any{"min": 1, "max": 3})
		if resp := e.put(poolPath("c1", "upd"), only); resp.code != 200 {
			t.Fatalf("PUT with autoScaling alone = %d %s", resp.code, resp.body)
		}
	})
}

// scalingOutcome is the documented size rule of a node pool (docs/cluster-service.md, node
// pools' spec), restated: replicas 0 to the limit, or autoScaling with min 1 to the limit and
// max from min (and the specification's 0) to the limit, replicas beside autoScaling only if 0;
// the limit is the specification's 200 without an availability zone, Cluster Service's 500 in one.
func scalingOutcome(replicas *int32, as *csv1.NodePoolAutoscaling, zone string) outcome {
	limit := int32(200)
	if zone != "" {
		limit = 500
	}
	var bad []string
	if as == nil {
		if *replicas < 0 || *replicas > limit {
			bad = append(bad, "properties.replicas")
		}
		return refused(bad...)
	}
	if replicas != nil && *replicas != 0 {
		bad = append(bad, "properties.replicas")
	}
	if as.Min < 1 || as.Min > limit {
		bad = append(bad, "properties.autoScaling.min")
	}
	if as.Max < 0 || as.Max < as.Min || as.Max > limit {
		bad = append(bad, "properties.autoScaling.max")
	}
	return refused(bad...)
}

// TestNodePoolChannelGroupFromCluster: a node pool created through ARM without a channel group
// takes its cluster's (Cluster Service's one default), and GET shows what Cluster Service holds.
func TestNodePoolChannelGroupFromCluster(t *testing.T) {
	e := newCSEnv(t)
	e.csCluster(t, "c1", func(b map[string]any) {
		set(b, "properties.version", map[string]any{"id": "4.20.3", "channelGroup": "candidate"})
	})
	body := minimalPoolBody()
	e.readyPool(t, "c1", "np1", body)
	rd, _ := e.resource(poolPath("c1", "np1"))
	held, err := e.pools.GetNodePool(context.Background(), &csv1.GetNodePoolRequest{Id: rd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
	if g := held.GetSpec().GetChannelGroup(); g != "candidate" {
		t.Fatalf("Cluster Service holds channel group %q, want the cluster's candidate", g)
	}
	for _, v := range []string{testVersion, "2026-06-30-preview"} {
		got := e.do("GET", withVersion(poolPath("c1", "np1"), v), nil, nil)
		props := got.json(t)["properties"].(map[string]any)
		ver, _ := props["version"].(map[string]any)
		disk, _ := props["platform"].(map[string]any)["osDisk"].(map[string]any)
		if got.code != 200 || ver["channelGroup"] != "candidate" || ver["id"] != held.GetSpec().GetVersionId() ||
			disk["sizeGiB"] != float64(held.GetSpec().GetPlatform().GetOsDiskSizeGib()) {
			t.Fatalf("GET through %s = %d %s; want Cluster Service's %v", v, got.code, got.body, held.GetSpec())
		}
	}
}

// TestNodePoolShortNameIsRefused: a name of 1 or 2 characters passes the specification's
// pattern and is refused by Cluster Service (ARO HCP's 3-15): a 400 naming the name, nothing kept.
func TestNodePoolShortNameIsRefused(t *testing.T) {
	e := newCSEnv(t)
	e.csCluster(t, "c1", func(b map[string]any) { set(b, "properties.version.id", "4.19.17") })
	for _, name := range []string{"a", "ab"} {
		resp := e.put(poolPath("c1", name), minimalPoolBody())
		if resp.code != 400 {
			t.Fatalf("PUT of node pool %q = %d %s, want 400", name, resp.code, resp.body)
		}
		if got := refusalTargets(t, resp); !slices.Equal(got, []string{"name"}) {
			t.Errorf("PUT of node pool %q refused naming %v, want name: %s", name, got, resp.body)
		}
		if rd, _ := e.resource(poolPath("c1", name)); rd != nil {
			t.Errorf("a refused create of %q left a resource document", name)
		}
	}
	if resp := e.put(poolPath("c1", "abc"), minimalPoolBody()); resp.code != 201 {
		t.Fatalf("PUT of node pool abc = %d %s, want 201", resp.code, resp.body)
	}
}
