package store

import (
	"context"
	"syscall"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestReadsOfDecodedClusters: a read of an unchanged cluster comes from the decoded cache and is
// the reader's own copy; a write, by this store or by another replica on the same database, is
// read as written.
func TestReadsOfDecodedClusters(t *testing.T) {
	ctx := context.Background()
	dsn := newDSN(t)
	s, replica := open(t, dsn), open(t, dsn)
	register(t, s, "mc-1", 10)
	c, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.GetCluster(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("an_unchanged_cluster_is_decoded_once", func(t *testing.T) {
		s.decoded.mu.Lock()
		e, ok := s.decoded.m[c.ID]
		s.decoded.mu.Unlock()
		if !ok || e.revision != first.Revision {
			t.Fatalf("cache holds %+v (found %v), want revision %d", e, ok, first.Revision)
		}
	})
	t.Run("what_a_reader_changes_is_its_own", func(t *testing.T) {
		first.Spec.VersionId, first.Status.Message = "changed by a reader", "changed by a reader"
		again, err := s.GetCluster(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.Spec.GetVersionId() != "4.19.7" || again.Status.GetMessage() == "changed by a reader" {
			t.Fatalf("second read = version %q message %q: the first reader's change leaked", again.Spec.GetVersionId(), again.Status.GetMessage())
		}
	})
	// writeThenRead writes st through writer and reads the cluster back through s.
	writeThenRead := func(t *testing.T, writer *Store, st *csv1.ClusterStatus) {
		cur, err := writer.GetCluster(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.UpdateStatus(ctx, c.ID, cur.Revision, st); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetCluster(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.GetMessage() != st.Message || got.Status.GetState() != st.State {
			t.Fatalf("after the write: status %v, want %v", got.Status, st)
		}
	}
	t.Run("a_write_by_this_store_is_read", func(t *testing.T) {
		writeThenRead(t, s, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: "by this store"})
	})
	t.Run("a_write_by_another_replica_is_read", func(t *testing.T) {
		writeThenRead(t, replica, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Message: "by the replica"})
	})
}

// TestDecodedClustersStayBounded: past decodedCacheSize clusters, one entry makes room for the
// next, and a cluster that is read again is decoded again rather than missed.
func TestDecodedClustersStayBounded(t *testing.T) {
	d := &decodedClusters{m: map[string]decodedCluster{}}
	at := time.Unix(1, 0)
	for i := range decodedCacheSize + 10 {
		c := &Cluster{ID: csid(i), Revision: int64(i), UpdateTime: at}
		if err := d.decode(c, []byte(`{"versionId":"4.19.7"}`), []byte(`{"message":"m"}`)); err != nil {
			t.Fatal(err)
		}
		if c.Spec.GetVersionId() != "4.19.7" || c.Status.GetMessage() != "m" {
			t.Fatalf("cluster %d decoded as %v / %v", i, c.Spec, c.Status)
		}
	}
	if len(d.m) != decodedCacheSize {
		t.Fatalf("cache holds %d, want %d", len(d.m), decodedCacheSize)
	}
	bad := &Cluster{ID: csid(1 << 20), Revision: 1, UpdateTime: at}
	if err := d.decode(bad, []byte(`{"noSuchField":1}`), []byte(`{}`)); err == nil {
		t.Fatal("an undecodable spec decoded")
	}
}

// BenchmarkGetCluster: one caller reading one unchanged cluster, its spec and status decoded on
// every read against decoded once (decoded.go), in one run; cpu-µs/op is this process's CPU
// (Cluster Service's share of a read; PostgreSQL's is not in it).
func BenchmarkGetCluster(b *testing.B) {
	s := benchStore(b)
	ctx := context.Background()
	if _, err := s.RegisterShard(ctx, placement.Shard{Name: "mc-1", MaxClusters: 10}); err != nil {
		b.Fatal(err)
	}
	c := &Cluster{ID: csid(1), ARMResourceID: armID("bench"), Namespace: "ocm-dev-bench", Spec: benchSpec()}
	if _, _, err := s.CreateCluster(ctx, c, placement.LeastLoaded{}); err != nil {
		b.Fatal(err)
	}
	cache := s.decoded
	for _, mode := range []struct {
		name    string
		decoded *decodedClusters
	}{{"decoded-every-read", nil}, {"decoded-once", cache}, {"decoded-every-read-again", nil}, {"decoded-once-again", cache}} {
		b.Run(mode.name, func(b *testing.B) {
			s.decoded = mode.decoded
			before := processCPU()
			for b.Loop() {
				if _, err := s.GetCluster(ctx, c.ID); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
	s.decoded = cache
}

// benchSpec is a cluster spec with the fields an ARM create of the spec's example sets.
func benchSpec() *csv1.ClusterSpec {
	sub, rg := "00000000-0000-0000-0000-000000000001", "rg"
	vnet := "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/virtualNetworks/vnet"
	return &csv1.ClusterSpec{
		VersionId: "4.19.7", ChannelGroup: "stable", ApiVisibility: "Public", DnsBaseDomainPrefix: "bench",
		ImageRegistryState: "Enabled", NodeDrainTimeoutMinutes: 30, ApiAuthorizedCidrs: []string{"10.0.0.0/16", "192.168.0.0/24"},
		Network: &csv1.NetworkSpec{NetworkType: "OVNKubernetes", PodCidr: "10.128.0.0/14", ServiceCidr: "172.30.0.0/16", MachineCidr: "10.0.0.0/16", HostPrefix: 23},
		Azure: &csv1.AzureSpec{SubscriptionId: sub, ResourceGroup: rg, Location: "eastus", ManagedResourceGroup: "managed-" + rg,
			SubnetId: vnet + "/subnets/nodes", NetworkSecurityGroupId: "/subscriptions/" + sub + "/resourceGroups/" + rg + "/providers/Microsoft.Network/networkSecurityGroups/nsg",
			OutboundType: "LoadBalancer", TenantId: "00000000-0000-0000-0000-00000000000a"},
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
