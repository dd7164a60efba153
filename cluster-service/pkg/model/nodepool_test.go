package model

import (
	"slices"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// TestValidateScaling: the one rule of a pool's size, at each bound.
func TestValidateScaling(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   *csv1.NodePoolSpec
		fields []string
	}{
		{"replicas_200_without_zone", &csv1.NodePoolSpec{Replicas: 200}, nil},
		{"replicas_201_without_zone_is_refused", &csv1.NodePoolSpec{Replicas: 201}, []string{"spec.replicas"}},
		{"replicas_500_in_a_zone", &csv1.NodePoolSpec{Replicas: 500, Platform: &csv1.NodePoolPlatform{AvailabilityZone: "1"}}, nil},
		{"replicas_501_in_a_zone_is_refused", &csv1.NodePoolSpec{Replicas: 501, Platform: &csv1.NodePoolPlatform{AvailabilityZone: "1"}}, []string{"spec.replicas"}},
		{"negative_replicas_is_refused", &csv1.NodePoolSpec{Replicas: -1}, []string{"spec.replicas"}},
		{"autoscaling_from_zero_is_refused", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 0, Max: 3}}, []string{"spec.autoscaling.min"}},
		{"autoscaling_negative_both", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: -1, Max: -1}}, []string{"spec.autoscaling.min", "spec.autoscaling.max"}},
		{"autoscaling_max_below_min", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 4, Max: 2}}, []string{"spec.autoscaling.max"}},
		{"autoscaling_max_201_without_zone", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 201}}, []string{"spec.autoscaling.max"}},
		{"replicas_beside_autoscaling_is_refused", &csv1.NodePoolSpec{Replicas: 3, Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}}, []string{"spec.replicas"}},
		{"replicas_0_beside_autoscaling_is_none", &csv1.NodePoolSpec{Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Violations
			validateScaling(&v, "spec", tc.spec)
			var got []string
			for _, f := range v {
				got = append(got, f.GetField())
			}
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("violations %v, want %v", v, tc.fields)
			}
		})
	}
}

// TestNewPoolAtTheControlPlanesVersion: a new pool that names the exact version its control
// plane runs is taken as the default is (the ARM frontend sends its pools with the defaults
// filled), even when the catalogue no longer offers that version to new installs; any other
// version is resolved against the catalogue as before.
func TestNewPoolAtTheControlPlanesVersion(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	catalogue := &versions.Catalogue{ChannelGroups: map[string]*versions.ChannelGroup{"stable": {Versions: []versions.Version{
		{ID: "4.19.7", Enabled: true, EndOfLife: now.Add(-time.Hour)},
		{ID: "4.20.3", Enabled: true, EndOfLife: now.AddDate(1, 0, 0)},
	}}}}
	cl := Cluster{
		Spec:   &csv1.ClusterSpec{ChannelGroup: "stable", VersionId: "4.19.7", Azure: &csv1.AzureSpec{SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"}},
		Status: &csv1.ClusterStatus{CurrentVersion: "4.19.7"},
	}
	for _, tc := range []struct {
		name, version string
		want          string // the version held, or "" for a refusal of spec.version_id
	}{
		{"left_out", "", "4.19.7"},
		{"the_control_planes_exact_version", "4.19.7", "4.19.7"},
		{"its_minor_resolves_and_is_past_end_of_life", "4.19", ""},
		{"ahead_of_the_control_plane", "4.20.3", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &csv1.NodePoolSpec{VersionId: tc.version, Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
			var v Violations
			got := ValidateNodePoolSpec(&v, "spec", in, cl, nil, catalogue, func() time.Time { return now })
			var fields []string
			for _, f := range v {
				fields = append(fields, f.GetField())
			}
			switch {
			case tc.want == "" && !slices.Contains(fields, "spec.version_id"):
				t.Fatalf("violations %v, want one of spec.version_id", v)
			case tc.want != "" && (len(v) != 0 || got.GetVersionId() != tc.want):
				t.Fatalf("version %q with violations %v, want %s and none", got.GetVersionId(), v, tc.want)
			}
		})
	}
}

// TestOSDiskBoundsOnCreateOnly: the OS disk's size and storage account type are checked against
// the specification's bounds when a pool is created; a pool stored before those bounds (with
// HyperShift's wider ones) is not refused an update that leaves its disk as it is, and a change
// of its disk is refused as a change.
func TestOSDiskBoundsOnCreateOnly(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	catalogue := &versions.Catalogue{ChannelGroups: map[string]*versions.ChannelGroup{"stable": {Versions: []versions.Version{
		{ID: "4.20.3", Enabled: true, EndOfLife: now.AddDate(1, 0, 0)},
	}}}}
	subnet := "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
	cl := Cluster{Spec: &csv1.ClusterSpec{ChannelGroup: "stable", VersionId: "4.20.3", Azure: &csv1.AzureSpec{SubnetId: subnet}}}
	pool := func(size int32, typ string, replicas int32) *csv1.NodePoolSpec {
		return &csv1.NodePoolSpec{VersionId: "4.20.3", ChannelGroup: "stable", Replicas: replicas, Platform: &csv1.NodePoolPlatform{
			VmSize: "Standard_D8s_v3", SubnetId: subnet, OsDiskSizeGib: size, OsDiskStorageAccountType: typ, OsDiskPersistence: "Persistent"}}
	}
	old := pool(8192, "PremiumV2_LRS", 2)
	for _, tc := range []struct {
		name   string
		in     *csv1.NodePoolSpec
		cur    *csv1.NodePoolSpec
		fields []string
	}{
		{"create_past_the_bounds", pool(8192, "PremiumV2_LRS", 2), nil,
			[]string{"spec.platform.os_disk_size_gib", "spec.platform.os_disk_storage_account_type"}},
		{"create_at_the_bounds", pool(4095, "Premium_LRS", 2), nil, nil},
		{"update_of_an_older_pool_keeping_its_disk", pool(8192, "PremiumV2_LRS", 3), old, nil},
		{"update_of_an_older_pool_changing_its_disk", pool(4095, "Premium_LRS", 3), old,
			[]string{"spec.platform.os_disk_size_gib", "spec.platform.os_disk_storage_account_type"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v Violations
			ValidateNodePoolSpec(&v, "spec", tc.in, cl, tc.cur, catalogue, func() time.Time { return now })
			var got []string
			for _, f := range v {
				got = append(got, f.GetField())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.fields) {
				t.Fatalf("violations %v, want %v", v, tc.fields)
			}
		})
	}
}

// TestPoolMinorsBehindTheUpgradeTarget: a pool's minors behind are counted to the version its
// control plane goes to, so that starting a recorded upgrade leaves no pool more than two minors
// behind; a pool is still never ahead of what the control plane runs.
func TestPoolMinorsBehindTheUpgradeTarget(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	eol := now.AddDate(1, 0, 0)
	catalogue := &versions.Catalogue{ChannelGroups: map[string]*versions.ChannelGroup{"stable": {Versions: []versions.Version{
		{ID: "4.17.44", Enabled: true, EndOfLife: eol}, {ID: "4.18.27", Enabled: true, EndOfLife: eol},
		{ID: "4.19.17", Enabled: true, EndOfLife: eol}, {ID: "4.20.3", Enabled: true, EndOfLife: eol},
	}}}}
	policy := func(state csv1.UpgradePolicyState) *csv1.UpgradePolicy {
		return &csv1.UpgradePolicy{Type: csv1.UpgradeType_UPGRADE_TYPE_CONTROL_PLANE, FromVersion: "4.19.17", ToVersion: "4.20.3", State: state}
	}
	for _, tc := range []struct {
		name          string
		spec, current string // the cluster's spec version and current_version
		upgrade       *csv1.UpgradePolicy
		version       string
		refused       bool
	}{
		{"two_behind_without_upgrade", "4.19.17", "4.19.17", nil, "4.17.44", false},
		{"three_behind_a_pending_upgrade_is_refused", "4.19.17", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING), "4.17.44", true},
		{"three_behind_a_scheduled_upgrade_is_refused", "4.19.17", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED), "4.17.44", true},
		{"two_behind_a_pending_upgrade", "4.19.17", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING), "4.18.27", false},
		{"three_behind_a_started_upgrade_is_refused", "4.20.3", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), "4.17.44", true},
		{"a_failed_upgrade_goes_nowhere", "4.19.17", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED), "4.17.44", false},
		{"ahead_of_what_runs_while_started_is_refused", "4.20.3", "4.19.17", policy(csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED), "4.20.3", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := Cluster{
				Spec: &csv1.ClusterSpec{ChannelGroup: "stable", VersionId: tc.spec, Azure: &csv1.AzureSpec{
					SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"}},
				Status: &csv1.ClusterStatus{CurrentVersion: tc.current, Upgrade: tc.upgrade},
			}
			in := &csv1.NodePoolSpec{VersionId: tc.version, Replicas: 1, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}
			var v Violations
			ValidateNodePoolSpec(&v, "spec", in, cl, nil, catalogue, func() time.Time { return now })
			refused := false
			for _, f := range v {
				refused = refused || f.GetField() == "spec.version_id"
			}
			if refused != tc.refused || len(v) > 1 {
				t.Fatalf("violations %v; want spec.version_id refused: %v", v, tc.refused)
			}
		})
	}
}

// TestOverlongLabelsAreRefusedForTheirLength: a label key or value longer than Kubernetes takes
// is refused for its length, said within MaxDescription. Before, a key was quoted whole ahead of
// the reason, so the description cut at MaxDescription said nothing but the key's first kilobyte
// (seen through ARM with a 3 MiB key), and Kubernetes' pattern match ran over the whole key or
// value inside the write transaction: about a quarter of a second of CPU a request for 3 MiB (a
// probe's profile), which the length check now spares.
func TestOverlongLabelsAreRefusedForTheirLength(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	catalogue := &versions.Catalogue{ChannelGroups: map[string]*versions.ChannelGroup{"stable": {Versions: []versions.Version{
		{ID: "4.20.3", Enabled: true, EndOfLife: now.AddDate(1, 0, 0)},
	}}}}
	subnet := "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default"
	cl := Cluster{Spec: &csv1.ClusterSpec{ChannelGroup: "stable", VersionId: "4.20.3", Azure: &csv1.AzureSpec{SubnetId: subnet}}}
	long := strings.Repeat("a", 1<<20) + "-"
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   string // in the one violation's description
	}{
		{"key_of_a_mebibyte", map[string]string{long: "v"}, "1048577 bytes"},
		{"prefixed_key_of_a_mebibyte", map[string]string{"example.com/" + long: "v"}, "1048589 bytes"},
		{"value_of_a_mebibyte", map[string]string{"tier": long}, "1048577 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &csv1.NodePoolSpec{VersionId: "4.20.3", ChannelGroup: "stable", Replicas: 1, Labels: tc.labels,
				Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", SubnetId: subnet}}
			var v Violations
			ValidateNodePoolSpec(&v, "spec", in, cl, nil, catalogue, func() time.Time { return now })
			if len(v) != 1 || v[0].GetField() != "spec.labels" {
				t.Fatalf("violations %v, want one of spec.labels", v)
			}
			if msg := v[0].GetDescription(); !strings.Contains(msg, tc.want) {
				t.Fatalf("message %.300q: want it to name the length (%s)", msg, tc.want)
			}
		})
	}
}
