package server

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestNULInAnyStringIsInvalidArgument pins that a request holding a NUL in any string (a read's
// ID or filter, a label's key or value, a taint's key) is InvalidArgument naming the field,
// before the store: PostgreSQL refuses a NUL, and the call failed with Internal.
func TestNULInAnyStringIsInvalidArgument(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(100, cl.Id, "alpha", "workers")})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"get_cluster_id", func() error {
			_, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: "a\x00b"})
			return err
		}, "id"},
		{"list_clusters_prefix", func() error {
			_, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: "/subscriptions/\x00"})
			return err
		}, "arm_resource_id_prefix"},
		{"list_clusters_ids_entry", func() error {
			_, err := e.clusters.ListClusters(ctx, &csv1.ListClustersRequest{Ids: []string{cl.Id, "\x00"}})
			return err
		}, "ids[1]"},
		{"list_node_pools_cluster_id", func() error {
			_, err := e.pools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: "\x00"})
			return err
		}, "cluster_id"},
		{"create_node_pool_label_key", func() error {
			p := validPool(101, cl.Id, "alpha", "second")
			p.Spec.Labels = map[string]string{"a\x00b": "c"}
			_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: p})
			return err
		}, `node_pool.spec.labels[a\u0000b]`},
		{"update_node_pool_label_value", func() error {
			_, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id,
				Update: &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: map[string]string{"a": "\x00"}}}})
			return err
		}, "update.labels.values[a]"},
		{"update_node_pool_taint_key", func() error {
			_, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id,
				Update: &csv1.NodePoolUpdate{Taints: &csv1.Taints{Values: []*csv1.Taint{{Key: "k\x00", Value: "v", Effect: "NoSchedule"}}}}})
			return err
		}, "update.taints.values[0].key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
				t.Fatalf("got %v (violations %v), want InvalidArgument naming %s", err, fieldViolations(err), tc.field)
			}
		})
	}
	t.Run("a_stream's_request_too", func(t *testing.T) {
		// WatchClustersRequest holds no string today; the stream's RecvMsg runs the same check,
		// so a request that did would be refused the same way. A valid one still streams.
		w, err := e.clusters.WatchClusters(ctx, &csv1.WatchClustersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Recv(); err != nil {
			t.Fatalf("a valid watch: %v", err)
		}
	})
	got, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: np.Id})
	if err != nil || got.GetRevision() != np.GetRevision() {
		t.Fatalf("refused updates changed the node pool: %v, %v", got, err)
	}
}

// TestNULInAnExternalAuthIsInvalidArgument: an external auth's strings are free text (a
// username prefix, an audience, a rule's claim), checked by no pattern a NUL would fail.
func TestNULInAnExternalAuthIsInvalidArgument(t *testing.T) {
	e, eas := startExternalAuths(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	for _, tc := range []struct {
		name   string
		mutate func(s *csv1.ExternalAuthSpec)
		field  string
	}{
		{"username_prefix", func(s *csv1.ExternalAuthSpec) { s.ClaimMappings.Username.Prefix = "entra\x00" }, "external_auth.spec.claim_mappings.username.prefix"},
		{"audience", func(s *csv1.ExternalAuthSpec) { s.Issuer.Audiences = append(s.Issuer.Audiences, "\x00") }, "external_auth.spec.issuer.audiences[2]"},
		{"rule_claim", func(s *csv1.ExternalAuthSpec) { s.ValidationRules[0].RequiredClaim = "t\x00id" }, "external_auth.spec.validation_rules[0].required_claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := validExternalAuthSpec()
			tc.mutate(spec)
			_, err := eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
				Id: id(200), ClusterId: cl.Id, ArmResourceId: externalAuthARM("alpha", "entra"), Spec: spec}})
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
				t.Fatalf("got %v (violations %v), want InvalidArgument naming %s", err, fieldViolations(err), tc.field)
			}
		})
	}
}
