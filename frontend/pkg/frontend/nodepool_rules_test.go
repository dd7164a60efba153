//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	csserver "github.com/openhcp/openhcp/cluster-service/pkg/server"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// csEnv is a frontend whose node pools go to a real Cluster Service server (its own database,
// in-process on loopback); clusters still go to the fake, and each cluster the frontend creates
// is created in Cluster Service too (csCluster), with the spec the frontend sent. With
// realClusters, the frontend's clusters go to the real server too (csCluster is then not used).
type csEnv struct {
	*env
	clusters csv1.ClustersClient
	pools    csv1.NodePoolsClient
}

// realClusters points the frontend's cluster calls at csEnv's real Cluster Service.
type realClusters bool

func newCSEnv(t *testing.T, clustersToo ...realClusters) *csEnv {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := csstore.Open(ctx, pgservertest.NewDatabase(t, pg.Get(t)), log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	srv := csserver.New(st, csserver.Config{Log: log})
	conn := serveFake(t, func(gs *grpc.Server) { srv.Register(gs) })
	e := newEnv(t, func(c *Config) {
		c.NodePools = csv1.NewNodePoolsClient(conn)
		if len(clustersToo) > 0 && bool(clustersToo[0]) {
			c.Clusters = csv1.NewClustersClient(conn)
		}
	})
	shards := csv1.NewProvisionShardsClient(conn)
	if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "mc-1", MaxClusters: 1000}}); err != nil {
		t.Fatal(err)
	}
	return &csEnv{env: e, clusters: csv1.NewClustersClient(conn), pools: csv1.NewNodePoolsClient(conn)}
}

// csCluster creates a ready cluster in the frontend and the same cluster in Cluster Service,
// and returns Cluster Service's copy.
func (e *csEnv) csCluster(t *testing.T, name string, mutate func(body map[string]any)) *csv1.Cluster {
	t.Helper()
	body := minimalBody()
	if mutate != nil {
		mutate(body)
	}
	resp := e.put(clusterPath("rg", name), body)
	if resp.code != 201 {
		t.Fatalf("PUT cluster: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), "Succeeded", nil)
	rd, _ := e.resource(clusterPath("rg", name))
	creates, _, _ := e.cs.snapshot()
	var sent *csv1.Cluster
	for _, c := range creates {
		if c.GetCluster().GetId() == rd.InternalID {
			sent = c.GetCluster()
		}
	}
	if sent == nil {
		t.Fatalf("the frontend sent no CreateCluster for %s", rd.InternalID)
	}
	cl, err := e.clusters.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: sent})
	if err != nil {
		t.Fatalf("create the frontend's cluster in Cluster Service: %v", err)
	}
	return cl
}

// refusalTargets are the targets of an ARM error body (its details', or its own), sorted.
func refusalTargets(t *testing.T, r response) []string {
	t.Helper()
	var b struct {
		Error struct {
			Target  string `json:"target"`
			Details []struct {
				Target string `json:"target"`
			} `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("not an ARM error body: %v\n%s", err, r.body)
	}
	var out []string
	for _, d := range b.Error.Details {
		out = append(out, d.Target)
	}
	if len(out) == 0 {
		out = append(out, b.Error.Target)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestNodePoolScalingAgrees: for every replicas, autoScaling.min and autoScaling.max around each
// bound (the specification's 0 and 200 without a zone, HyperShift's minimum 1, Cluster Service's
// 500), with and without an availability zone, and with replicas beside autoScaling, the
// frontend's answer to a PUT (a real Cluster Service behind it) and Cluster Service's own rule
// agree: both accept, or both refuse, every field the frontend names being one Cluster Service
// names.
func TestNodePoolScalingAgrees(t *testing.T) {
	e := newCSEnv(t)
	cl := e.csCluster(t, "c1", func(b map[string]any) { set(b, "properties.version.id", "4.19.17") })
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	request := (&csv1.CreateNodePoolRequest{}).ProtoReflect().Descriptor()

	type scaling struct {
		replicas *int32
		as       *csv1.NodePoolAutoscaling
		zone     string
	}
	values := []int32{-1, 0, 1, 2, 199, 200, 201, 499, 500, 501}
	var cases []scaling
	for _, zone := range []string{"", "1"} {
		for _, r := range values {
			cases = append(cases, scaling{replicas: &r, zone: zone})
		}
		for _, lo := range values {
			for _, hi := range values {
				if hi < lo-1 {
					continue // far below min: the same answer as hi = lo-1
				}
				cases = append(cases, scaling{as: &csv1.NodePoolAutoscaling{Min: lo, Max: hi}, zone: zone})
			}
		}
	}
	for _, r := range []int32{0, 1} {
		cases = append(cases, scaling{replicas: &r, as: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}})
	}

	for i, c := range cases {
		name := fmt.Sprintf("zone=%q", c.zone)
		if c.replicas != nil {
			name += fmt.Sprintf("_replicas=%d", *c.replicas)
		}
		if c.as != nil {
			name += fmt.Sprintf("_min=%d_max=%d", c.as.Min, c.as.Max)
		}
		t.Run(name, func(t *testing.T) {
			// The frontend's answer, through its handler.
			props := map[string]any{"platform": map[string]any{"vmSize": "Standard_D8s_v3"}}
			if c.zone != "" {
				props["platform"].(map[string]any)["availabilityZone"] = c.zone
			}
			if c.replicas != nil {
				props["replicas"] = *c.replicas
			}
			if c.as != nil {
				props["autoScaling"] = map[string]any{"min": c.as.Min, "max": c.as.Max}
			}
			resp := e.put(poolPath("c1", fmt.Sprintf("np%d", i)), map[string]any{"location": testLocation, "properties": props})
			var frontend []string
			switch resp.code {
			case 201:
			case 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("PUT = %d %s", resp.code, resp.body)
			}

			// Cluster Service's answer: its model's rule, the field mapped to the ARM path.
			spec := &csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", AvailabilityZone: c.zone}, Autoscaling: c.as}
			if c.replicas != nil {
				spec.Replicas = *c.replicas
			}
			var v model.Violations
			model.ValidateNodePoolSpec(&v, "node_pool.spec", spec, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil, catalogue, time.Now)
			requireAgreement(t, resp, frontend, request, v)
		})
	}

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

// requireAgreement fails t unless the frontend's answer resp (frontend: the targets it refused,
// nil when it accepted) and Cluster Service's own rule (its violations v of request, each field
// mapped to its ARM path) agree: both accept, or both refuse. The frontend's structural check
// answers before Cluster Service is asked, so it may name fewer fields; each must be one Cluster
// Service names.
func requireAgreement(t *testing.T, resp response, frontend []string, request protoreflect.MessageDescriptor, v model.Violations) {
	t.Helper()
	var cs []string
	for _, f := range v {
		p, ok := csv1.ARMPath(request, f.GetField())
		if !ok {
			t.Fatalf("Cluster Service's violation %s has no ARM path", f.GetField())
		}
		cs = append(cs, p)
	}
	sort.Strings(cs)
	cs = slices.Compact(cs)
	agree := (frontend == nil) == (cs == nil)
	for _, f := range frontend {
		agree = agree && slices.Contains(cs, f)
	}
	if !agree {
		t.Fatalf("the frontend answers %d with targets %v; Cluster Service refuses %v (%s)", resp.code, frontend, cs,
			strings.TrimSpace(string(resp.body)))
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
