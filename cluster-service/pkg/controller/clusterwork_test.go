package controller

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/secretseal"
)

func buildableCluster() *store.Cluster {
	return &store.Cluster{ID: "0123456789abcdefghijklmnopqrstuv", Revision: 3, SpecRevision: 1,
		ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c",
		Spec: &csv1.ClusterSpec{VersionId: "4.19.7", ChannelGroup: "stable", ApiVisibility: "Public",
			DnsBaseDomain: "example.openshiftapps.com", ImageRegistryState: "Enabled",
			Network: &csv1.NetworkSpec{NetworkType: "OVNKubernetes", PodCidr: "10.128.0.0/14", ServiceCidr: "172.30.0.0/16",
				MachineCidr: "10.0.0.0/16", HostPrefix: 23}},
		EtcdEncryptionKey: bytes.Repeat([]byte{7}, 32), SSHPublicKey: "ssh-ed25519 AAAA test",
		Status: &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING}}
}

// TestUnchangedClusterWorkIsBuiltOnce: every reconcile of a cluster needs its work in both
// feedback modes; while the cluster, its external auth and the mode are what they were, the work
// is not encoded, hashed and decoded again (status writes change the row's revision, not what
// the work is built from), and any change to them builds it anew, equal to a fresh build.
func TestUnchangedClusterWorkIsBuiltOnce(t *testing.T) {
	c := New(nil, nil, Config{}, slog.New(slog.DiscardHandler))
	builds := func() float64 { return testutil.ToFloat64(c.workBuilds.WithLabelValues("cluster")) }
	cl := buildableCluster()
	hashOf := func(b builtClusterWork) string { return b.work.Annotations[manifests.AnnotationSpecHash] }

	first := map[bool]string{}
	for _, watch := range []bool{false, true} {
		b, err := c.clusterWork(cl, nil, nil, watch)
		if err != nil {
			t.Fatal(err)
		}
		first[watch] = hashOf(b)
	}
	if first[false] == first[true] {
		t.Fatal("the steady and watched works have the same hash")
	}
	if got := builds(); got != 2 {
		t.Fatalf("builds after the first reconcile = %v, want 2", got)
	}

	// Later reconciles: the status (and so the revision) changed, nothing the work holds did.
	again := proto.Clone(cl.Spec).(*csv1.ClusterSpec)
	next := *cl
	next.Spec, next.Revision = again, 9
	next.Status = &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY}
	for range 3 {
		for _, watch := range []bool{false, true} {
			b, err := c.clusterWork(&next, nil, nil, watch)
			if err != nil {
				t.Fatal(err)
			}
			if hashOf(b) != first[watch] {
				t.Fatalf("work of the unchanged cluster (watch %v) has hash %s, want %s", watch, hashOf(b), first[watch])
			}
		}
	}
	if got := builds(); got != 2 {
		t.Errorf("builds after three more reconciles of the unchanged cluster = %v, want 2", got)
	}

	// A steady cluster keeps only the polled form; the watched one is built again when needed.
	c.built.forgetWatched(cl.ID)
	for _, watch := range []bool{false, true, true} {
		if _, err := c.clusterWork(&next, nil, nil, watch); err != nil {
			t.Fatal(err)
		}
	}
	if got := builds(); got != 3 {
		t.Errorf("builds after the watched form was dropped = %v, want 3 (the watched form once)", got)
	}

	// Each input of the work builds it anew, and the result is a fresh build's.
	changed := map[string]func(*store.Cluster) *store.ExternalAuth{
		"spec": func(cl *store.Cluster) *store.ExternalAuth {
			cl.Spec = proto.Clone(cl.Spec).(*csv1.ClusterSpec)
			cl.Spec.VersionId = "4.19.8"
			return nil
		},
		"ssh key": func(cl *store.Cluster) *store.ExternalAuth { cl.SSHPublicKey = "ssh-ed25519 BBBB"; return nil },
		"encryption key": func(cl *store.Cluster) *store.ExternalAuth {
			cl.EtcdEncryptionKey = bytes.Repeat([]byte{8}, 32)
			return nil
		},
		"external auth": func(cl *store.Cluster) *store.ExternalAuth {
			return &store.ExternalAuth{ARMResourceID: cl.ARMResourceID + "/externalAuths/a", Spec: &csv1.ExternalAuthSpec{
				Issuer:        &csv1.TokenIssuer{Url: "https://issuer.example.com", Audiences: []string{"a"}},
				ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub"}},
			}}
		},
	}
	for name, change := range changed {
		t.Run(name, func(t *testing.T) {
			cl := buildableCluster()
			ea := change(cl)
			before := builds()
			got, err := c.clusterWork(cl, ea, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if builds() != before+1 {
				t.Errorf("a changed %s did not build the work again", name)
			}
			fresh, err := New(nil, nil, Config{}, slog.New(slog.DiscardHandler)).clusterWork(cl, ea, nil, true)
			if err != nil {
				t.Fatal(err)
			}
			if hashOf(got) != hashOf(fresh) || hashOf(got) == first[true] {
				t.Errorf("work after a changed %s has hash %s, want a fresh build's %s (not the old %s)", name, hashOf(got), hashOf(fresh), first[true])
			}
		})
	}
}

// A work whose secrets are sealed is built again when the management cluster's sealing key
// changes, and not while it stays the same (a seal is random: the key's ID stands for it).
func TestClusterWorkFollowsItsSealingKey(t *testing.T) {
	c := New(nil, nil, Config{}, slog.New(slog.DiscardHandler))
	builds := func() float64 { return testutil.ToFloat64(c.workBuilds.WithLabelValues("cluster")) }
	keyA, err := secretseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	keyB, err := secretseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	cl := buildableCluster()
	for i, step := range []struct {
		key        *secretseal.PublicKey
		wantBuilds float64
	}{{nil, 1}, {keyA.Public(), 2}, {keyA.Public(), 2}, {keyB.Public(), 3}, {keyB.Public(), 3}} {
		if _, err := c.clusterWork(cl, nil, step.key, false); err != nil {
			t.Fatal(err)
		}
		if got := builds(); got != step.wantBuilds {
			t.Fatalf("step %d: %v builds, want %v", i, got, step.wantBuilds)
		}
	}
}
