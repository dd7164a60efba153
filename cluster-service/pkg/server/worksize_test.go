package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// manyRules is an external auth spec with n claim validation rules.
func manyRules(n int) *csv1.ExternalAuthSpec {
	spec := validExternalAuthSpec()
	spec.ValidationRules = nil
	for i := range n {
		spec.ValidationRules = append(spec.ValidationRules, &csv1.TokenClaimValidationRule{RequiredClaim: fmt.Sprintf("claim%05d", i), RequiredValue: "v"})
	}
	return spec
}

// manyLabels is n valid node labels of about 340 bytes each (the probe's 9,000 made a 3.5 MB body).
func manyLabels(n int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("%s.example.com/k%05d", strings.Repeat("p", 240), i)] = strings.Repeat("v", 63)
	}
	return out
}

func requireViolation(t *testing.T, err error, field string) {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[field] {
		t.Fatalf("err = %v; want InvalidArgument naming %s", err, field)
	}
	if !strings.Contains(err.Error(), "too large") {
		t.Fatalf("err = %v; want it to say the resource is too large", err)
	}
}

// TestExternalAuthWorkSize: an external auth travels in its cluster's ManifestWork, so one whose
// work would pass Maestro's limit is refused when it is written (the probe's 10,000 claim
// validation rules made a work of 794,196 bytes that Maestro refused on every reconcile), naming
// its largest field; an update just under the budget is taken, one rule more is refused.
func TestExternalAuthWorkSize(t *testing.T) {
	e, eas := startExternalAuths(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "c1")

	_, err := eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: id(101), ClusterId: cl.GetId(), ArmResourceId: externalAuthARM("c1", "eaok"), Spec: manyRules(10000)}})
	requireViolation(t, err, "external_auth.spec.validation_rules")

	created, err := eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: id(102), ClusterId: cl.GetId(), ArmResourceId: externalAuthARM("c1", "eaok"), Spec: manyRules(10)}})
	if err != nil {
		t.Fatal(err)
	}
	// The most rules an update may carry: the boundary found through the API must be where the
	// work, built as the controller builds it from what is stored, meets the budget.
	fits := func(n int) bool {
		_, err := eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: created.GetId(), Update: csv1.FullExternalAuthUpdate(manyRules(n))})
		if err != nil && !fieldViolations(err)["update.validation_rules.values"] {
			t.Fatalf("update with %d rules: %v", n, err)
		}
		return err == nil
	}
	lo, hi := 10, 10000 // fits(lo), !fits(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	stored, err := e.st.GetCluster(ctx, cl.GetId())
	if err != nil {
		t.Fatal(err)
	}
	size := func(n int) int {
		w, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: standInClientID}, manifests.Cluster{ID: stored.ID,
			ARMResourceID: stored.ARMResourceID, Spec: stored.Spec, EtcdEncryptionKey: stored.EtcdEncryptionKey, SSHPublicKey: stored.SSHPublicKey, WatchStatus: true})
		if err != nil {
			t.Fatal(err)
		}
		var v model.Violations // normalised as stored
		spec := model.ValidateExternalAuthSpec(&v, "spec", manyRules(n))
		if w, err = manifests.WithExternalAuth(w, &manifests.ExternalAuth{ARMResourceID: created.GetArmResourceId(), Spec: spec}); err != nil {
			t.Fatal(err)
		}
		return manifests.ManifestsSize(w)
	}
	if s := size(lo); s > manifests.ManifestsBudget || size(lo+1) <= manifests.ManifestsBudget {
		t.Fatalf("%d rules are taken (a work of %d bytes) and %d refused (%d bytes); the budget is %d", lo, s, lo+1, size(lo+1), manifests.ManifestsBudget)
	}
	t.Logf("at most %d validation rules: a work of %d bytes", lo, size(lo))
}

// TestNodePoolWorkSize: the probe's 9,000 labels (a 3.5 MB work) are refused on create and on
// update naming the labels; a pool stored over the budget before the rule stays readable, takes
// an update that brings it under, and can be deleted.
func TestNodePoolWorkSize(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "c1")

	big := validPool(201, cl.GetId(), "c1", "big")
	big.Spec.Labels = manyLabels(9000)
	_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: big})
	requireViolation(t, err, "node_pool.spec.labels")

	// Just under: 1,000 such labels are about 360 KB of NodePool.
	under := validPool(202, cl.GetId(), "c1", "under")
	under.Spec.Labels = manyLabels(1000)
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: under})
	if err != nil {
		t.Fatalf("a pool under the budget: %v", err)
	}
	_, err = e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Update: &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: manyLabels(2000)}}})
	requireViolation(t, err, "update.labels.values")

	// Stored over the budget (as before the rule), straight into the store: the spec of a pool
	// created through the server (defaults filled), with 9,000 labels.
	storedSpec := proto.Clone(np.GetSpec()).(*csv1.NodePoolSpec)
	storedSpec.Labels = manyLabels(9000)
	overBudget := func(n int, name string) *store.NodePool {
		p, _, err := e.st.NodePools().Create(ctx, &store.NodePool{ID: id(n), ClusterID: cl.GetId(), ARMResourceID: poolARM("c1", name), Spec: storedSpec})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	old := overBudget(203, "old")
	if got, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: old.ID}); err != nil || len(got.GetSpec().GetLabels()) != 9000 {
		t.Fatalf("read a pool stored over the budget: %v", err)
	}
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: old.ID, Update: &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: map[string]string{"a": "b"}}}}); err != nil {
		t.Fatalf("an update that brings a stored pool under the budget: %v", err)
	}
	if _, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: old.ID}); err != nil {
		t.Fatalf("delete: %v", err)
	}

	// One stored over the budget is deleted as it is.
	old2 := overBudget(204, "over2")
	if d, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: old2.ID}); err != nil || d.GetId() != old2.ID {
		t.Fatalf("delete a pool stored over the budget: %v", err)
	}
	if got, err := e.st.NodePools().Get(ctx, old2.ID); err != nil || !got.Deleting {
		t.Fatalf("the pool stored over the budget is not being deleted: %v", err)
	}
}

// mirrors is n image digest mirrors of 255 mirrors each, about 230 bytes a mirror: the
// specification allows 240 of 255 of 255 characters, far more than a work holds.
func mirrors(n int) []*csv1.ImageDigestMirror {
	var out []*csv1.ImageDigestMirror
	for i := range n {
		m := &csv1.ImageDigestMirror{Source: fmt.Sprintf("quay.io/source%d/repo", i)}
		for j := range 255 {
			m.Mirrors = append(m.Mirrors, fmt.Sprintf("m%d-%d.example.com/%s", i, j, strings.Repeat("r", 200)))
		}
		out = append(out, m)
	}
	return out
}

// TestClusterWorkSize: a cluster whose own work would be too large is refused on create and on
// update, naming the image digest mirrors; one under the budget is created and updated.
func TestClusterWorkSize(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)

	big := validCluster(1, "big")
	big.Spec.ImageDigestMirrors = mirrors(10) // about 600 KB
	_, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: big})
	requireViolation(t, err, "cluster.spec.image_digest_mirrors")

	ok := validCluster(2, "ok")
	ok.Spec.ImageDigestMirrors = mirrors(3) // about 180 KB
	cl, err := e.clusters.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: ok})
	if err != nil {
		t.Fatalf("a cluster under the budget: %v", err)
	}
	_, err = e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{
		ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: mirrors(10)}}})
	requireViolation(t, err, "update.image_digest_mirrors.mirrors")
	if _, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{
		ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: mirrors(4)}}}); err != nil {
		t.Fatalf("an update under the budget: %v", err)
	}
}

// TestWorkSizeStoredOverBudget: a resource stored over the budget (before the rule, or before
// the budget was lowered) takes an update that shrinks
// its work while still over the budget; an update that grows it is refused, however little (an
// unrelated drain timeout: a slack let such a resource creep, an update at a time, towards
// Maestro's limit), and nothing over Maestro's limit is taken.
func TestWorkSizeStoredOverBudget(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "c1")
	stored, err := e.st.GetCluster(ctx, cl.GetId())
	if err != nil {
		t.Fatal(err)
	}

	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(301, cl.GetId(), "c1", "pool1")})
	if err != nil {
		t.Fatal(err)
	}
	poolSize := func(labels int) int {
		spec := proto.Clone(np.GetSpec()).(*csv1.NodePoolSpec)
		spec.Labels = manyLabels(labels)
		w, err := manifests.BuildNodePool(manifests.Config{DevWorkloadIdentityClientID: standInClientID}, manifests.NodePool{ID: np.GetId(),
			ARMResourceID: np.GetArmResourceId(), Spec: spec, Cluster: manifests.Cluster{ID: stored.ID, ARMResourceID: stored.ARMResourceID, Spec: stored.Spec}, WatchStatus: true})
		if err != nil {
			t.Fatal(err)
		}
		return manifests.ManifestsSize(w)
	}
	// 1,400 labels are over the budget and under the limit, 1,300 too; 8,000 are over the limit.
	const over, shrunk, huge, lessHuge = 1400, 1300, 9000, 8000
	for _, n := range []int{over, shrunk} {
		if s := poolSize(n); s <= manifests.ManifestsBudget || s > manifests.ManifestsLimit {
			t.Fatalf("%d labels make a work of %d bytes; the test wants one between %d and %d", n, s, manifests.ManifestsBudget, manifests.ManifestsLimit)
		}
	}
	if s := poolSize(lessHuge); s <= manifests.ManifestsLimit {
		t.Fatalf("%d labels make a work of %d bytes; the test wants one over %d", lessHuge, s, manifests.ManifestsLimit)
	}
	storePool := func(n int, name string, labels int) *store.NodePool {
		spec := proto.Clone(np.GetSpec()).(*csv1.NodePoolSpec)
		spec.Labels = manyLabels(labels)
		p, _, err := e.st.NodePools().Create(ctx, &store.NodePool{ID: id(n), ClusterID: cl.GetId(), ARMResourceID: poolARM("c1", name), Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	setLabels := func(n int) *csv1.NodePoolUpdate {
		return &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: manyLabels(n)}}
	}
	drain := func(minutes int32) *csv1.NodePoolUpdate {
		return &csv1.NodePoolUpdate{NodeDrainTimeoutMinutes: &csv1.OptionalInt32{Value: &minutes}}
	}

	p := storePool(302, "over", over)
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: p.ID, Update: drain(30)}); err == nil || !strings.Contains(err.Error(), "must not make them larger") {
		t.Fatalf("an edit that grows a pool stored over the budget by 27 bytes: %v; want it refused", err)
	}
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: p.ID, Update: setLabels(shrunk)}); err != nil {
		t.Fatalf("an update that shrinks a pool stored over the budget, still over it: %v", err)
	}
	for range 2 { // the same small growth again: no step of it is taken
		if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: p.ID, Update: drain(30)}); err == nil {
			t.Fatal("an edit that grows a pool still over the budget was taken")
		}
	}
	_, err = e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: p.ID, Update: setLabels(over)})
	requireViolation(t, err, "update.labels.values")
	if !strings.Contains(err.Error(), "hold now") {
		t.Fatalf("err = %v; want it to say the work would grow", err)
	}
	if got, err := e.st.NodePools().Get(ctx, p.ID); err != nil || len(got.Spec.GetLabels()) != shrunk || got.Spec.GetNodeDrainTimeoutMinutes() != 0 {
		t.Fatalf("stored pool: %d labels, drain %d, %v; want %d labels, no drain timeout", len(got.Spec.GetLabels()), got.Spec.GetNodeDrainTimeoutMinutes(), err, shrunk)
	}

	// Over Maestro's limit, even a shrinking update is refused: it could never be applied.
	h := storePool(303, "huge", huge)
	_, err = e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: h.ID, Update: setLabels(lessHuge)})
	requireViolation(t, err, "update.labels.values")
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: h.ID, Update: setLabels(shrunk)}); err != nil {
		t.Fatalf("an update that brings a pool stored over the limit under it: %v", err)
	}

	// A cluster: its own work over the budget, stored straight into the store.
	clusterSize := func(m []*csv1.ImageDigestMirror) int {
		spec := proto.Clone(stored.Spec).(*csv1.ClusterSpec)
		spec.ImageDigestMirrors = m
		w, err := manifests.Build(manifests.Config{DevWorkloadIdentityClientID: standInClientID}, manifests.Cluster{ID: stored.ID,
			ARMResourceID: stored.ARMResourceID, Spec: spec, EtcdEncryptionKey: stored.EtcdEncryptionKey, SSHPublicKey: stored.SSHPublicKey, WatchStatus: true})
		if err != nil {
			t.Fatal(err)
		}
		return manifests.ManifestsSize(w)
	}
	// 8 image digest mirrors of 255 mirrors are over the budget and under the limit, and so are
	// 7 and a half.
	mOver, mShrunk := mirrors(8), mirrors(8)
	mShrunk[7].Mirrors = mShrunk[7].Mirrors[:120]
	for _, m := range [][]*csv1.ImageDigestMirror{mOver, mShrunk} {
		if s := clusterSize(m); s <= manifests.ManifestsBudget || s > manifests.ManifestsLimit {
			t.Fatalf("%d mirrors make a work of %d bytes; the test wants one between %d and %d", len(m), s, manifests.ManifestsBudget, manifests.ManifestsLimit)
		}
	}
	if _, err := e.st.UpdateCluster(ctx, cl.GetId(), store.Precondition{}, func(c *store.Cluster, _ *csv1.UpgradePolicy, _ store.ClusterChildren) (store.ClusterChange, error) {
		spec := proto.Clone(c.Spec).(*csv1.ClusterSpec)
		spec.ImageDigestMirrors = mOver
		return store.ClusterChange{Spec: spec}, nil
	}); err != nil {
		t.Fatal(err)
	}
	minutes := int32(45)
	// A cluster's drain timeout lands on its node pools' works, not its own: an edit that does
	// not grow the cluster's work is taken.
	if _, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{NodeDrainTimeoutMinutes: &minutes}}); err != nil {
		t.Fatalf("an edit that leaves the work of a cluster stored over the budget as large: %v", err)
	}
	if _, err := e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{
		ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: mShrunk}}}); err != nil {
		t.Fatalf("an update that shrinks a cluster stored over the budget, still over it: %v", err)
	}
	_, err = e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.GetId(), Update: &csv1.ClusterUpdate{
		ImageDigestMirrors: &csv1.ImageDigestMirrors{Mirrors: mOver}}})
	requireViolation(t, err, "update.image_digest_mirrors.mirrors")
}

// TestWorkSizeBuildErrorLogged: a work the size rule cannot build is not its violation to
// report, but it is logged, so that a new build error cannot turn the rule off unseen.
func TestWorkSizeBuildErrorLogged(t *testing.T) {
	var buf bytes.Buffer
	s := &Server{cfg: Config{Log: slog.New(slog.NewJSONHandler(&buf, nil))}}
	var v violations
	s.workFits(&v, "spec", nil, id(1), nil, errors.New("no template for this"), nil)
	if len(v) != 0 {
		t.Fatalf("violations %v; want none for a build error", v)
	}
	for _, want := range []string{`"level":"WARN"`, `"error":"no template for this"`, `"clusterID":"` + id(1) + `"`, `"field":"spec"`} {
		if !strings.Contains(buf.String(), want) {
			t.Fatalf("log %q; want it to hold %s", buf.String(), want)
		}
	}
}
