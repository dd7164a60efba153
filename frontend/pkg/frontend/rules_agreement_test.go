//go:build !fuzzlean

// Left out of the fuzzing build (hack/fuzz-long.sh builds with -tags fuzzlean): this file links
// Cluster Service's server, whose coverage counters every fuzz execution would scan.

package frontend

// The agreement tests' one harness: a frontend with a real Cluster Service in-process behind it
// (newCSEnv), and one runner (runRuleCases) that sends each case's request through the frontend,
// asks Cluster Service's model for its rule on the same values, and requires both to agree with
// each other and with the outcome the case pins (the ARM specification's or the documented rule,
// written in the case, never read off the code), so a rule loosened in both layers at once fails.

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
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	csserver "github.com/openhcp/openhcp/cluster-service/pkg/server"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// csEnv is a frontend whose node pools and external auths go to a real Cluster Service server
// (its own database, in-process on loopback); clusters still go to the fake, and each cluster the frontend creates
// is created in Cluster Service too (csCluster), with the spec the frontend sent. With
// realClusters, the frontend's clusters go to the real server too (csCluster is then not used).
type csEnv struct {
	*env
	clusters csv1.ClustersClient
	pools    csv1.NodePoolsClient
	auths    csv1.ExternalAuthsClient
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
		c.ExternalAuths = csv1.NewExternalAuthsClient(conn)
		if len(clustersToo) > 0 && bool(clustersToo[0]) {
			c.Clusters = csv1.NewClustersClient(conn)
		}
	})
	shards := csv1.NewProvisionShardsClient(conn)
	if _, err := shards.RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{Name: "mc-1", MaxClusters: 1000}}); err != nil {
		t.Fatal(err)
	}
	return &csEnv{env: e, clusters: csv1.NewClustersClient(conn), pools: csv1.NewNodePoolsClient(conn), auths: csv1.NewExternalAuthsClient(conn)}
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

// heldCluster creates a cluster through the frontend's PUT (through version; "" for the env's
// default), which must answer 201, and returns the answer and Cluster Service's copy.
func (e *csEnv) heldCluster(t *testing.T, path, version string, body map[string]any) (response, *csv1.Cluster) {
	t.Helper()
	if version != "" {
		path = withVersion(path, version)
	}
	resp := e.do("PUT", path, mustJSON(body), nil)
	if resp.code != 201 {
		t.Fatalf("PUT of a valid cluster = %d %s", resp.code, resp.body)
	}
	rd, _ := e.resource(strings.SplitN(path, "?", 2)[0])
	held, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: rd.InternalID})
	if err != nil {
		t.Fatal(err)
	}
	return resp, held
}

// poolEnv is a csEnv with a cluster c1 at version (4.19.17, 4.20.3: in Cluster Service's
// catalogue) in Cluster Service, whose copy it returns, and Cluster Service's catalogue.
func poolEnv(t *testing.T, version string) (*csEnv, *csv1.Cluster, *versions.Catalogue) {
	t.Helper()
	e := newCSEnv(t)
	cl := e.csCluster(t, "c1", func(b map[string]any) { set(b, "properties.version.id", version) })
	catalogue, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	return e, cl, catalogue
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

// outcome is what a case's request must come to: accepted (no targets), or refused naming
// these ARM targets. It is written from the specification or the documented rule.
type outcome []string

// accepted is the outcome of a value the rules allow.
func accepted() outcome { return nil }

// refused is the outcome of a value refused naming targets.
func refused(targets ...string) outcome {
	out := slices.Clone(targets)
	sort.Strings(out)
	return slices.Compact(out)
}

// refusedUnless is accepted() when ok, and otherwise refused naming targets: a bound restated
// from the specification as a condition on the case's value.
func refusedUnless(ok bool, targets ...string) outcome {
	if ok {
		return accepted()
	}
	return refused(targets...)
}

func (o outcome) String() string {
	if len(o) == 0 {
		return "accepted"
	}
	return "refused naming " + strings.Join(o, ", ")
}

// ruleCase is one value of an agreement test: an edit of the request body, the same value in
// what the frontend sends Cluster Service (S: a spec or an update), and its pinned outcome.
type ruleCase[S proto.Message] struct {
	name string
	// body edits the part of the request body the target hands it (ruleTarget.scope).
	body func(b map[string]any)
	// spec is the same edit of what Cluster Service gets. nil: the value cannot reach Cluster
	// Service distinguishably (an explicit empty value in a field without presence, a JSON type
	// the field does not have, a key twice in what Cluster Service holds as a map, a property
	// the api-version requires), so the frontend alone answers: it must refuse naming exactly
	// want.
	spec func(s S)
	// asGiven, if set, is applied to Cluster Service's spec after its defaults: a value the
	// body gives that Cluster Service cannot tell from an absent one (an explicit 0, which it
	// defaults) is checked as given, as the frontend checks it.
	asGiven func(s S)
	want    outcome
}

// caseRule is Cluster Service's rule for one case, as ruleTarget.open prepares it.
type caseRule[S proto.Message] struct {
	// path is the resource the request goes to.
	path string
	// verdict is Cluster Service's model's violations for what the frontend sends with the
	// case's values.
	verdict func(c ruleCase[S]) model.Violations
	// whenAccepted, if set, checks what Cluster Service holds after an accepted request.
	whenAccepted func(t *testing.T)
}

// ruleTarget is what an agreement test drives: the request every case edits, and how Cluster
// Service's rule answers for it.
type ruleTarget[S proto.Message] struct {
	method  string
	version string // the api-version; "" for the env's default
	// accepted are the status codes of an accepted request; any other than 400 fails the case.
	accepted []int
	// request is the Cluster Service request whose field paths the violations name.
	request protoreflect.MessageDescriptor
	// body is the valid request each case edits; scope (nil: the whole body) picks the part the
	// case's edit receives.
	body  func() map[string]any
	scope func(body map[string]any) map[string]any
	// open prepares case i (a resource of its own where the case needs one).
	open func(t *testing.T, i int) caseRule[S]
	// frontendNames, if set, rewrites the frontend's targets into Cluster Service's terms.
	frontendNames func([]string) []string
}

// runRuleCases runs every case as a subtest of t: the frontend's answer to the target's request
// with the case's edit, Cluster Service's rule on the same values, and the case's pinned
// outcome must all agree (requireAgreement, then the outcome).
func runRuleCases[S proto.Message](t *testing.T, e *csEnv, tg ruleTarget[S], cases []ruleCase[S]) {
	t.Helper()
	for i, c := range cases {
		t.Run(strings.ReplaceAll(c.name, "/", ":"), func(t *testing.T) {
			r := tg.open(t, i)
			body := tg.body()
			if c.body != nil {
				part := body
				if tg.scope != nil {
					part = tg.scope(body)
				}
				c.body(part)
			}
			path := r.path
			if tg.version != "" {
				path = withVersion(path, tg.version)
			}
			resp := e.do(tg.method, path, mustJSON(body), nil)
			var frontend []string
			switch {
			case slices.Contains(tg.accepted, resp.code):
			case resp.code == 400:
				frontend = refusalTargets(t, resp)
			default:
				t.Fatalf("%s = %d %s", tg.method, resp.code, resp.body)
			}

			if c.spec == nil {
				if !slices.Equal(frontend, []string(c.want)) || len(c.want) == 0 {
					t.Fatalf("the frontend answers %d with targets %v; want it alone to refuse, %v (%s)", resp.code, frontend,
						c.want, strings.TrimSpace(string(resp.body)))
				}
				return
			}
			if tg.frontendNames != nil {
				frontend = tg.frontendNames(frontend)
			}
			cs := armTargets(t, tg.request, r.verdict(c))
			requireAgreement(t, resp, frontend, cs)
			if !slices.Equal(cs, []string(c.want)) {
				t.Fatalf("both answer alike, but Cluster Service's rule refuses %v and the frontend answers %d %v; the specified outcome is %v (%s)",
					cs, resp.code, frontend, c.want, strings.TrimSpace(string(resp.body)))
			}
			if frontend == nil && r.whenAccepted != nil {
				r.whenAccepted(t)
			}
		})
	}
}

// armTargets are the ARM paths of Cluster Service's violations v of request, sorted, each once.
func armTargets(t *testing.T, request protoreflect.MessageDescriptor, v model.Violations) []string {
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
	return slices.Compact(cs)
}

// requireAgreement fails t unless the frontend's answer resp (frontend: the targets it refused,
// nil when it accepted) and Cluster Service's own rule (cs: the ARM paths of its violations)
// agree: both accept, or both refuse. The frontend's structural check answers before Cluster
// Service is asked, so it may name fewer fields; each must be one Cluster Service names.
func requireAgreement(t *testing.T, resp response, frontend, cs []string) {
	t.Helper()
	agree := (frontend == nil) == (cs == nil)
	for _, f := range frontend {
		agree = agree && slices.Contains(cs, f)
	}
	if !agree {
		t.Fatalf("the frontend answers %d with targets %v; Cluster Service refuses %v (%s)", resp.code, frontend, cs,
			strings.TrimSpace(string(resp.body)))
	}
}

// labelsAsMap names a label the way Cluster Service does: its spec holds the labels as a map,
// so its violations name properties.labels where the frontend names an element of the list.
func labelsAsMap(targets []string) []string {
	var out []string
	for _, t := range targets {
		if strings.HasPrefix(t, "properties.labels[") {
			t = "properties.labels"
		}
		if len(out) == 0 || out[len(out)-1] != t {
			out = append(out, t)
		}
	}
	return out
}

// poolProps is a node pool body's properties, the part a node pool case edits.
func poolProps(body map[string]any) map[string]any { return body["properties"].(map[string]any) }

// poolCreates is the target of node pool creates in cluster c1 (cl, as Cluster Service holds
// it): a PUT through version of body, to a pool of each case's own, and Cluster Service's rule
// on a create (model.ValidateNodePoolSpec) on base with the case's edit.
func poolCreates(cl *csv1.Cluster, catalogue *versions.Catalogue, version string, body func() map[string]any,
	base *csv1.NodePoolSpec) ruleTarget[*csv1.NodePoolSpec] {
	return ruleTarget[*csv1.NodePoolSpec]{
		method: "PUT", version: version, accepted: []int{201},
		request: (&csv1.CreateNodePoolRequest{}).ProtoReflect().Descriptor(),
		body:    body, scope: poolProps, frontendNames: labelsAsMap,
		open: func(t *testing.T, i int) caseRule[*csv1.NodePoolSpec] {
			return caseRule[*csv1.NodePoolSpec]{
				path: poolPath("c1", fmt.Sprintf("np%d", i)),
				verdict: func(c ruleCase[*csv1.NodePoolSpec]) model.Violations {
					spec := proto.Clone(base).(*csv1.NodePoolSpec)
					c.spec(spec)
					var v model.Violations
					model.ValidateNodePoolSpec(&v, "node_pool.spec", spec, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, nil, catalogue, time.Now)
					return v
				},
			}
		},
	}
}

// poolUpdates is the target of node pool updates in cluster c1: a PATCH through version of
// each case's own pool, created from minimalPoolBody, and the rule Cluster Service's
// UpdateNodePool runs, model.ValidateNodePoolSpec on the stored spec with the case's edit,
// against the stored spec.
func poolUpdates(e *csEnv, cl *csv1.Cluster, catalogue *versions.Catalogue, version string) ruleTarget[*csv1.NodePoolSpec] {
	return ruleTarget[*csv1.NodePoolSpec]{
		method: "PATCH", version: version, accepted: []int{200, 202},
		request:       (&csv1.CreateNodePoolRequest{}).ProtoReflect().Descriptor(),
		body:          func() map[string]any { return map[string]any{"properties": map[string]any{}} },
		scope:         poolProps,
		frontendNames: labelsAsMap,
		open: func(t *testing.T, i int) caseRule[*csv1.NodePoolSpec] {
			name := fmt.Sprintf("upd%d", i)
			id := e.readyPool(t, "c1", name, minimalPoolBody())
			cur, err := e.pools.GetNodePool(context.Background(), &csv1.GetNodePoolRequest{Id: id})
			if err != nil {
				t.Fatal(err)
			}
			return caseRule[*csv1.NodePoolSpec]{
				path: poolPath("c1", name),
				verdict: func(c ruleCase[*csv1.NodePoolSpec]) model.Violations {
					spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
					c.spec(spec)
					var v model.Violations
					model.ValidateNodePoolSpec(&v, "node_pool.spec", spec, model.Cluster{Spec: cl.GetSpec(), Status: cl.GetStatus()}, cur.GetSpec(), catalogue, time.Now)
					return v
				},
			}
		},
	}
}

// clusterCreates is the target of cluster creates: a PUT through version of body, to a cluster
// of each case's own, and Cluster Service's rule on a create (model.DefaultCluster, then
// model.ValidateClusterSpec) on held (a valid cluster as Cluster Service holds it, less what it
// chooses itself) with the case's edit.
func clusterCreates(held *csv1.ClusterSpec, version string, body func() map[string]any) ruleTarget[*csv1.ClusterSpec] {
	return ruleTarget[*csv1.ClusterSpec]{
		method: "PUT", version: version, accepted: []int{201},
		request: (&csv1.CreateClusterRequest{}).ProtoReflect().Descriptor(),
		body:    body,
		open: func(t *testing.T, i int) caseRule[*csv1.ClusterSpec] {
			return caseRule[*csv1.ClusterSpec]{
				path: clusterPath("rg", fmt.Sprintf("c%d", i)),
				verdict: func(c ruleCase[*csv1.ClusterSpec]) model.Violations {
					spec := proto.Clone(held).(*csv1.ClusterSpec)
					spec.IssuerUrl, spec.DnsBaseDomain = "", "" // chosen by Cluster Service, never sent
					c.spec(spec)
					model.DefaultCluster(spec)
					if c.asGiven != nil {
						c.asGiven(spec)
					}
					var v model.Violations
					model.ValidateClusterSpec(&v, "cluster.spec", spec)
					return v
				},
			}
		},
	}
}

// clusterUpdates is the target of cluster updates: method through version with body, to a
// cluster of each case's own created from configBody, and Cluster Service's rule for an update
// (model.ValidateConfigUpdate, then model.ApplyConfigUpdate on the stored spec, as its
// UpdateCluster) on the update the case's edit gives. An accepted update must reach Cluster
// Service as the rule applies it.
func clusterUpdates(e *csEnv, method, version string, body func() map[string]any) ruleTarget[*csv1.ClusterUpdate] {
	return ruleTarget[*csv1.ClusterUpdate]{
		method: method, version: version, accepted: []int{200, 201, 202},
		request: (&csv1.UpdateClusterRequest{}).ProtoReflect().Descriptor(),
		body:    body,
		open: func(t *testing.T, i int) caseRule[*csv1.ClusterUpdate] {
			path := clusterPath("rg", fmt.Sprintf("%s%d", strings.ToLower(method), i))
			created, held := e.heldCluster(t, path, version, configBody())
			e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), "Succeeded", nil)
			var want *csv1.ClusterSpec
			return caseRule[*csv1.ClusterUpdate]{
				path: path,
				verdict: func(c ruleCase[*csv1.ClusterUpdate]) model.Violations {
					u := &csv1.ClusterUpdate{}
					c.spec(u)
					var v model.Violations
					model.ValidateConfigUpdate(&v, u)
					if len(v) == 0 {
						want = model.ApplyConfigUpdate(&v, held.GetSpec(), u)
					}
					return v
				},
				whenAccepted: func(t *testing.T) {
					after, err := e.clusters.GetCluster(context.Background(), &csv1.GetClusterRequest{Id: held.GetId()})
					if err != nil {
						t.Fatal(err)
					}
					if !proto.Equal(after.GetSpec(), want) {
						t.Fatalf("Cluster Service holds %v; the update applied gives %v", after.GetSpec(), want)
					}
				},
			}
		},
	}
}
