package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

func poolARM(cluster, name string) string { return arm(cluster) + "/nodePools/" + name }

func validPool(n int, clusterID, cluster, name string) *csv1.NodePool {
	return &csv1.NodePool{Id: id(n), ClusterId: clusterID, ArmResourceId: poolARM(cluster, name), Spec: &csv1.NodePoolSpec{
		Replicas: 2, Labels: map[string]string{"tier": "web"}, AutoRepair: true,
		Taints:   []*csv1.Taint{{Key: "dedicated", Value: "web", Effect: "NoSchedule"}},
		Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"},
	}}
}

func (e *env) cluster(t *testing.T, n int, name string) *csv1.Cluster {
	t.Helper()
	c, err := e.clusters.CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: validCluster(n, name)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNodePools(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")

	var created *csv1.NodePool
	t.Run("create_applies_defaults_and_is_pending", func(t *testing.T) {
		np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(100, cl.Id, "alpha", "workers")})
		if err != nil {
			t.Fatal(err)
		}
		p := np.GetSpec().GetPlatform()
		if np.GetStatus().GetState() != csv1.NodePoolState_NODE_POOL_STATE_PENDING || np.GetSpec().GetVersionId() != "4.19.17" ||
			p.GetOsDiskSizeGib() != 64 || p.GetOsDiskStorageAccountType() != "Premium_LRS" || p.GetSubnetId() != cl.GetSpec().GetAzure().GetSubnetId() {
			t.Fatalf("created = %v", np)
		}
		created = np
	})
	t.Run("create_is_idempotent_on_arm_id_whatever_the_id", func(t *testing.T) {
		in := validPool(101, cl.Id, "ALPHA", "WORKERS")
		np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: in})
		if err != nil || np.GetId() != created.GetId() || np.GetRevision() != created.GetRevision() {
			t.Fatalf("second create = %v, %v; want the first", np, err)
		}
	})
	t.Run("id_of_another_arm_resource_is_already_exists", func(t *testing.T) {
		_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(100, cl.Id, "alpha", "other")})
		if status.Code(err) != codes.AlreadyExists {
			t.Fatalf("got %v, want AlreadyExists", err)
		}
	})
	t.Run("unknown_cluster_is_not_found", func(t *testing.T) {
		_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(102, id(99), "alpha", "np2")})
		if status.Code(err) != codes.NotFound {
			t.Fatalf("got %v, want NotFound", err)
		}
	})
	t.Run("arm_id_of_another_cluster_is_invalid", func(t *testing.T) {
		_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(102, cl.Id, "beta", "np2")})
		if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["node_pool.arm_resource_id"] {
			t.Fatalf("got %v, want InvalidArgument on arm_resource_id", err)
		}
	})
	t.Run("get_and_list", func(t *testing.T) {
		if _, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(103, cl.Id, "alpha", "second")}); err != nil {
			t.Fatal(err)
		}
		got, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: created.Id})
		if err != nil || !proto.Equal(got.GetSpec(), created.GetSpec()) {
			t.Fatalf("get = %v, %v", got, err)
		}
		list, err := e.pools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: cl.Id})
		if err != nil || len(list.GetNodePools()) != 2 || list.GetNodePools()[0].GetId() != id(100) || list.GetNodePools()[1].GetId() != id(103) {
			t.Fatalf("list = %v, %v", list, err)
		}
		if _, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: id(98)}); status.Code(err) != codes.NotFound {
			t.Fatalf("get unknown: %v", err)
		}
		if _, err := e.pools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: id(98)}); status.Code(err) != codes.NotFound {
			t.Fatalf("list of unknown cluster: %v", err)
		}
	})
	t.Run("scale_then_enable_autoscaling", func(t *testing.T) {
		spec := proto.Clone(created.GetSpec()).(*csv1.NodePoolSpec)
		spec.Replicas = 5
		np, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: created.Id, Update: csv1.FullNodePoolUpdate(spec), Revision: created.Revision})
		if err != nil || np.GetSpec().GetReplicas() != 5 || np.GetRevision() <= created.GetRevision() {
			t.Fatalf("scale = %v, %v", np, err)
		}
		if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: created.Id, Update: csv1.FullNodePoolUpdate(spec), Revision: created.Revision}); status.Code(err) != codes.Aborted {
			t.Fatalf("update at a stale revision: %v, want Aborted", err)
		}
		spec.Replicas, spec.Autoscaling = 0, &csv1.NodePoolAutoscaling{Min: 2, Max: 6}
		np, err = e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: created.Id, Update: csv1.FullNodePoolUpdate(spec)})
		if err != nil || np.GetSpec().GetAutoscaling().GetMax() != 6 {
			t.Fatalf("enable autoscaling = %v, %v", np, err)
		}
		created = np
	})
	t.Run("immutable_platform_and_downgrade_are_rejected", func(t *testing.T) {
		spec := proto.Clone(created.GetSpec()).(*csv1.NodePoolSpec)
		spec.Platform.VmSize, spec.Platform.OsDiskSizeGib = "Standard_D4s_v3", 128
		spec.VersionId = "4.19.16"
		_, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: created.Id, Update: csv1.FullNodePoolUpdate(spec)})
		fv := fieldViolations(err)
		if status.Code(err) != codes.InvalidArgument || !fv["update.version_id"] {
			t.Fatalf("got %v (%v)", err, fv)
		}
		// The platform cannot change: an update has no field for it, so the same update without
		// the downgrade is accepted and leaves the platform as created.
		spec.VersionId = ""
		np, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: created.Id, Update: csv1.FullNodePoolUpdate(spec)})
		if err != nil || np.GetSpec().GetPlatform().GetVmSize() != created.GetSpec().GetPlatform().GetVmSize() || np.GetSpec().GetPlatform().GetOsDiskSizeGib() == 128 {
			t.Fatalf("update = %v, %v; want the platform kept", np.GetSpec().GetPlatform(), err)
		}
		created = np
	})
	t.Run("delete_is_uninstalling_and_blocks_updates", func(t *testing.T) {
		np, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: id(103)})
		if err != nil || np.GetStatus().GetState() != csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING {
			t.Fatalf("delete = %v, %v", np, err)
		}
		again, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: id(103)})
		if err != nil || again.GetRevision() != np.GetRevision() {
			t.Fatalf("second delete = %v, %v; want no change", again, err)
		}
		if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: id(103), Update: csv1.FullNodePoolUpdate(np.GetSpec())}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("update while deleting: %v", err)
		}
		if _, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(104, cl.Id, "alpha", "second")}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("create while the ARM resource's pool is deleting: %v", err)
		}
	})
	t.Run("deleting_the_cluster_deletes_its_pools", func(t *testing.T) {
		if _, err := e.clusters.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: cl.Id}); err != nil {
			t.Fatal(err)
		}
		np, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: created.Id})
		if err != nil || np.GetStatus().GetState() != csv1.NodePoolState_NODE_POOL_STATE_UNINSTALLING {
			t.Fatalf("pool of deleting cluster = %v, %v", np, err)
		}
		if _, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(105, cl.Id, "alpha", "late")}); status.Code(err) != codes.FailedPrecondition {
			t.Fatalf("create on a deleting cluster: %v", err)
		}
		// The cluster cannot be removed while its pools exist.
		c, _ := e.st.GetCluster(ctx, cl.Id)
		if err := e.st.RemoveCluster(ctx, cl.Id, c.Revision); err == nil {
			t.Fatal("RemoveCluster succeeded with node pools left")
		}
	})
}

func TestNodePoolValidation(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	for _, tc := range []struct {
		name   string
		mutate func(*csv1.NodePool)
		field  string
	}{
		{"version_ahead_of_control_plane", func(p *csv1.NodePool) { p.Spec.VersionId = "4.20.3" }, "node_pool.spec.version_id"},
		{"version_not_in_catalogue", func(p *csv1.NodePool) { p.Spec.VersionId = "4.19.99" }, "node_pool.spec.version_id"},
		{"negative_replicas", func(p *csv1.NodePool) { p.Spec.Replicas = -1 }, "node_pool.spec.replicas"},
		{"replicas_with_autoscaling", func(p *csv1.NodePool) { p.Spec.Autoscaling = &csv1.NodePoolAutoscaling{Min: 1, Max: 3} }, "node_pool.spec.replicas"},
		{"autoscaling_max_below_min", func(p *csv1.NodePool) {
			p.Spec.Replicas, p.Spec.Autoscaling = 0, &csv1.NodePoolAutoscaling{Min: 3, Max: 2}
		}, "node_pool.spec.autoscaling.max"},
		{"autoscaling_min_zero", func(p *csv1.NodePool) {
			p.Spec.Replicas, p.Spec.Autoscaling = 0, &csv1.NodePoolAutoscaling{Min: 0, Max: 2}
		}, "node_pool.spec.autoscaling.min"},
		{"bad_label_key", func(p *csv1.NodePool) { p.Spec.Labels = map[string]string{"not a key": "x"} }, "node_pool.spec.labels"},
		{"bad_taint_effect", func(p *csv1.NodePool) { p.Spec.Taints[0].Effect = "Sometimes" }, "node_pool.spec.taints[0].effect"},
		{"duplicate_taint", func(p *csv1.NodePool) { p.Spec.Taints = append(p.Spec.Taints, p.Spec.Taints[0]) }, "node_pool.spec.taints[1]"},
		{"bad_vm_size", func(p *csv1.NodePool) { p.Spec.Platform.VmSize = "huge" }, "node_pool.spec.platform.vm_size"},
		{"small_os_disk", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskSizeGib = 8 }, "node_pool.spec.platform.os_disk_size_gib"},
		{"os_disk_below_the_arm_minimum", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskSizeGib = 63 }, "node_pool.spec.platform.os_disk_size_gib"},
		{"os_disk_above_the_arm_maximum", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskSizeGib = 4096 }, "node_pool.spec.platform.os_disk_size_gib"},
		{"os_disk_type_for_data_disks_only", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskStorageAccountType = "UltraSSD_LRS" }, "node_pool.spec.platform.os_disk_storage_account_type"},
		{"taint_key_over_the_arm_maximum", func(p *csv1.NodePool) {
			p.Spec.Taints[0].Key = strings.Repeat("p", 253) + "/" + strings.Repeat("k", 63)
		}, "node_pool.spec.taints[0].key"},
		{"bad_os_disk_type", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskStorageAccountType = "Floppy" }, "node_pool.spec.platform.os_disk_storage_account_type"},
		{"bad_subnet", func(p *csv1.NodePool) { p.Spec.Platform.SubnetId = "/subnets/x" }, "node_pool.spec.platform.subnet_id"},
		{"bad_zone", func(p *csv1.NodePool) { p.Spec.Platform.AvailabilityZone = "4" }, "node_pool.spec.platform.availability_zone"},
		{"unknown_channel_group", func(p *csv1.NodePool) { p.Spec.ChannelGroup = "beta" }, "node_pool.spec.channel_group"},
		{"version_not_in_channel_group", func(p *csv1.NodePool) { p.Spec.ChannelGroup, p.Spec.VersionId = "candidate", "4.19" }, "node_pool.spec.version_id"},
		{"drain_timeout_negative", func(p *csv1.NodePool) { p.Spec.NodeDrainTimeoutMinutes = proto.Int32(-1) }, "node_pool.spec.node_drain_timeout_minutes"},
		{"drain_timeout_over_a_week", func(p *csv1.NodePool) { p.Spec.NodeDrainTimeoutMinutes = proto.Int32(10081) }, "node_pool.spec.node_drain_timeout_minutes"},
		{"bad_os_disk_persistence", func(p *csv1.NodePool) { p.Spec.Platform.OsDiskPersistence = "Managed" }, "node_pool.spec.platform.os_disk_persistence"},
		{"encryption_set_not_a_disk_encryption_set", func(p *csv1.NodePool) {
			p.Spec.Platform.OsDiskEncryptionSetId = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.KeyVault/vaults/kv"
		}, "node_pool.spec.platform.os_disk_encryption_set_id"},
		{"encryption_set_subscription_not_a_uuid", func(p *csv1.NodePool) {
			p.Spec.Platform.OsDiskEncryptionSetId = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des"
		}, "node_pool.spec.platform.os_disk_encryption_set_id"},
		{"encryption_set_resource_group_ends_with_period", func(p *csv1.NodePool) {
			p.Spec.Platform.OsDiskEncryptionSetId = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg./providers/Microsoft.Compute/diskEncryptionSets/des"
		}, "node_pool.spec.platform.os_disk_encryption_set_id"},
		{"name_too_long", func(p *csv1.NodePool) { p.ArmResourceId = poolARM("alpha", "abcdefghijklmnop") }, "node_pool.arm_resource_id"},
		{"bad_id", func(p *csv1.NodePool) { p.Id = "X" }, "node_pool.id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := validPool(200, cl.Id, "alpha", "np1")
			tc.mutate(in)
			_, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: in})
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
				t.Fatalf("got %v; want InvalidArgument on %s", err, tc.field)
			}
		})
	}
	t.Run("older_minor_within_skew_is_accepted", func(t *testing.T) {
		in := validPool(201, cl.Id, "alpha", "old")
		in.Spec.VersionId = "4.18"
		np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: in})
		if err != nil || np.GetSpec().GetVersionId() != "4.18.27" {
			t.Fatalf("create at 4.18 = %v, %v; want 4.18.27", np, err)
		}
	})
}

// TestNodePoolDiskEncryptionDrainAndChannelGroup: the platform's encryption and disk
// persistence are stored (with defaults) and immutable; the drain timeout and the channel group
// are updatable, and a pool created without a channel group follows the cluster's.
func TestNodePoolDiskEncryptionDrainAndChannelGroup(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	const des = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des-1"

	plain, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(300, cl.Id, "alpha", "plain")})
	if err != nil {
		t.Fatal(err)
	}
	if s := plain.GetSpec(); s.GetChannelGroup() != "stable" || s.NodeDrainTimeoutMinutes != nil ||
		s.GetPlatform().GetOsDiskPersistence() != "Persistent" || s.GetPlatform().GetEncryptionAtHost() || s.GetPlatform().GetOsDiskEncryptionSetId() != "" {
		t.Fatalf("defaults: %v", s)
	}

	in := validPool(301, cl.Id, "alpha", "secure")
	in.Spec.ChannelGroup = "stable"
	in.Spec.NodeDrainTimeoutMinutes = proto.Int32(0)
	in.Spec.Platform.EncryptionAtHost, in.Spec.Platform.OsDiskEncryptionSetId, in.Spec.Platform.OsDiskPersistence = true, des, "Ephemeral"
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: in})
	if err != nil {
		t.Fatal(err)
	}
	if s := np.GetSpec(); s.NodeDrainTimeoutMinutes == nil || s.GetNodeDrainTimeoutMinutes() != 0 ||
		!s.GetPlatform().GetEncryptionAtHost() || s.GetPlatform().GetOsDiskEncryptionSetId() != des || s.GetPlatform().GetOsDiskPersistence() != "Ephemeral" {
		t.Fatalf("created = %v", s)
	}

	for _, tc := range []struct {
		name   string
		mutate func(*csv1.NodePoolSpec)
		field  string // "" when the update is accepted
		check  func(*csv1.NodePoolSpec) bool
	}{
		// The platform is not part of an update (NodePoolUpdate has no such field): a full update
		// built from a spec with another platform leaves the pool's as created.
		{"encryption_at_host_is_immutable", func(s *csv1.NodePoolSpec) { s.Platform.EncryptionAtHost = false }, "",
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetEncryptionAtHost() }},
		{"encryption_set_is_immutable", func(s *csv1.NodePoolSpec) { s.Platform.OsDiskEncryptionSetId = "" }, "",
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskEncryptionSetId() != "" }},
		{"persistence_is_immutable", func(s *csv1.NodePoolSpec) { s.Platform.OsDiskPersistence = "Persistent" }, "",
			func(s *csv1.NodePoolSpec) bool { return s.GetPlatform().GetOsDiskPersistence() == "Ephemeral" }},
		{"channel_group_without_the_running_version", func(s *csv1.NodePoolSpec) { s.ChannelGroup = "candidate" }, "update.channel_group", nil},
		{"drain_timeout_out_of_range", func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = proto.Int32(20000) }, "update.node_drain_timeout_minutes.value", nil},
		{"drain_timeout_is_updatable", func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = proto.Int32(45) }, "",
			func(s *csv1.NodePoolSpec) bool { return s.GetNodeDrainTimeoutMinutes() == 45 }},
		{"unset_drain_timeout_goes_back_to_the_clusters", func(s *csv1.NodePoolSpec) { s.NodeDrainTimeoutMinutes = nil }, "",
			func(s *csv1.NodePoolSpec) bool { return s.NodeDrainTimeoutMinutes == nil }},
		{"empty_channel_group_keeps_the_pools", func(s *csv1.NodePoolSpec) { s.ChannelGroup = "" }, "",
			func(s *csv1.NodePoolSpec) bool { return s.GetChannelGroup() == "stable" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: np.Id})
			if err != nil {
				t.Fatal(err)
			}
			spec := proto.Clone(cur.GetSpec()).(*csv1.NodePoolSpec)
			tc.mutate(spec)
			got, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id, Update: csv1.FullNodePoolUpdate(spec), Revision: cur.Revision})
			if tc.field != "" {
				if fv := fieldViolations(err); status.Code(err) != codes.InvalidArgument || !fv[tc.field] || len(fv) != 1 {
					t.Fatalf("got %v (%v); want InvalidArgument on %s only", err, fv, tc.field)
				}
				return
			}
			if err != nil || !tc.check(got.GetSpec()) {
				t.Fatalf("update = %v, %v", got.GetSpec(), err)
			}
		})
	}
}

func TestWatchNodePools(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	first, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(100, cl.Id, "alpha", "one")})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.pools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	recvPool := func() *csv1.NodePoolEvent {
		t.Helper()
		for {
			ev, err := w.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if ev.GetType() != csv1.EventType_EVENT_TYPE_BOOKMARK {
				return ev
			}
		}
	}
	if ev := recvPool(); ev.GetNodePool().GetId() != first.Id || ev.GetRevision() != first.Revision {
		t.Fatalf("snapshot event = %v", ev)
	}
	// A cluster write in between takes a revision from the same sequence.
	second, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(101, cl.Id, "alpha", "two")})
	if err != nil {
		t.Fatal(err)
	}
	if ev := recvPool(); ev.GetType() != csv1.EventType_EVENT_TYPE_UPSERTED || ev.GetNodePool().GetId() != second.Id {
		t.Fatalf("live event = %v", ev)
	}
	del, err := e.pools.DeleteNodePool(ctx, &csv1.DeleteNodePoolRequest{Id: first.Id})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.st.NodePools().Remove(ctx, first.Id, del.Revision); err != nil {
		t.Fatal(err)
	}
	// Resuming from the first pool's creation replays the second pool and the first's tombstone.
	r, err := e.pools.WatchNodePools(ctx, &csv1.WatchNodePoolsRequest{SinceRevision: first.Revision})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for {
		ev, err := r.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetType() == csv1.EventType_EVENT_TYPE_BOOKMARK {
			break
		}
		got = append(got, ev.GetType().String()+" "+ev.GetNodePool().GetId())
	}
	want := []string{"EVENT_TYPE_UPSERTED " + second.Id, "EVENT_TYPE_DELETED " + first.Id}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("replay = %v, want %v", got, want)
	}
	if _, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: first.Id}); status.Code(err) != codes.NotFound {
		t.Fatalf("removed pool: %v", err)
	}
}

// TestUpdateNodePoolPartial: UpdateNodePool changes only what the update names, merged into the
// stored spec under the write lock; an empty update keeps the revision; a bad field is reported
// on the request's field, which maps to the ARM property the caller wrote.
func TestUpdateNodePoolPartial(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(400, cl.Id, "alpha", "partial")})
	if err != nil {
		t.Fatal(err)
	}
	req := (&csv1.UpdateNodePoolRequest{}).ProtoReflect().Descriptor()
	for _, tc := range []struct {
		name    string
		update  *csv1.NodePoolUpdate
		field   string // the violation's field; "" when accepted
		armPath string // where that field is in the ARM resource
		check   func(before, after *csv1.NodePool) bool
	}{
		{name: "empty_update_changes_nothing_and_keeps_the_revision", update: &csv1.NodePoolUpdate{},
			check: func(b, a *csv1.NodePool) bool {
				return a.GetRevision() == b.GetRevision() && proto.Equal(a.GetSpec(), b.GetSpec())
			}},
		{name: "labels_only_leave_scaling_and_taints", update: &csv1.NodePoolUpdate{Labels: &csv1.StringMap{Values: map[string]string{"tier": "db"}}},
			check: func(b, a *csv1.NodePool) bool {
				return a.GetRevision() > b.GetRevision() && a.GetSpec().GetLabels()["tier"] == "db" && a.GetSpec().GetReplicas() == b.GetSpec().GetReplicas() &&
					len(a.GetSpec().GetTaints()) == 1 && a.GetSpec().GetAutoRepair()
			}},
		{name: "scale_only_leaves_labels", update: &csv1.NodePoolUpdate{Replicas: proto.Int32(7)},
			check: func(b, a *csv1.NodePool) bool {
				return a.GetSpec().GetReplicas() == 7 && a.GetSpec().GetLabels()["tier"] == "db"
			}},
		{name: "autoscaling_out_of_range_is_named_by_its_arm_path",
			update: &csv1.NodePoolUpdate{Autoscaling: &csv1.NodePoolAutoscaling{Min: 2, Max: 900}},
			field:  "update.autoscaling.max", armPath: "properties.autoScaling.max"},
		{name: "bad_taint_is_named_by_its_arm_path",
			update: &csv1.NodePoolUpdate{Taints: &csv1.Taints{Values: []*csv1.Taint{{Key: "a", Effect: "NoSchedule"}, {Key: "b", Effect: "Sometimes"}}}},
			field:  "update.taints.values[1].effect", armPath: "properties.taints[1].effect"},
		{name: "drain_timeout_out_of_range_is_named_by_its_arm_path",
			update: &csv1.NodePoolUpdate{NodeDrainTimeoutMinutes: &csv1.OptionalInt32{Value: proto.Int32(-1)}},
			field:  "update.node_drain_timeout_minutes.value", armPath: "properties.nodeDrainTimeoutMinutes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: np.Id})
			if err != nil {
				t.Fatal(err)
			}
			after, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id, Update: tc.update})
			if tc.field != "" {
				fv := fieldViolations(err)
				if status.Code(err) != codes.InvalidArgument || !fv[tc.field] || len(fv) != 1 {
					t.Fatalf("got %v (%v); want InvalidArgument on %s only", err, fv, tc.field)
				}
				if p, ok := csv1.ARMPath(req, tc.field); !ok || p != tc.armPath {
					t.Fatalf("ARM path of %s = %q, %v; want %s", tc.field, p, ok, tc.armPath)
				}
				if now, _ := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: np.Id}); now.GetRevision() != before.GetRevision() {
					t.Fatalf("a refused update moved the revision %d → %d", before.GetRevision(), now.GetRevision())
				}
				return
			}
			if err != nil || !tc.check(before, after) {
				t.Fatalf("update = %v, %v (before %v)", after.GetSpec(), err, before.GetSpec())
			}
		})
	}
	if _, err := e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id}); status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["update"] {
		t.Fatalf("no update message: %v, want InvalidArgument on update", err)
	}
}
