package model

import (
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestDefaultNodePool: the one default site of a node pool spec. What it fills is what the
// manifest builder takes as it is (manifests.BuildNodePool applies no default of its own).
func TestDefaultNodePool(t *testing.T) {
	const clusterSubnet = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s"
	cl := Cluster{Spec: &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "candidate", Azure: &csv1.AzureSpec{SubnetId: clusterSubnet}}}
	upgrading := Cluster{Spec: cl.Spec, Status: &csv1.ClusterStatus{CurrentVersion: "4.19.10"}}
	explicit := &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128, OsDiskStorageAccountType: "StandardSSD_LRS",
		OsDiskPersistence: "Ephemeral", SubnetId: clusterSubnet + "2"}
	defaulted := &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 64, OsDiskStorageAccountType: "Premium_LRS",
		OsDiskPersistence: "Persistent", SubnetId: clusterSubnet}
	for _, tc := range []struct {
		name    string
		cluster Cluster
		in, cur *csv1.NodePoolSpec
		want    *csv1.NodePoolSpec
	}{
		{"create takes the cluster's subnet, version and group, and the disk defaults", cl,
			&csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}, nil,
			&csv1.NodePoolSpec{VersionId: "4.19.17", ChannelGroup: "candidate", Platform: defaulted}},
		{"create during a control-plane upgrade takes what runs", upgrading,
			&csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}}, nil,
			&csv1.NodePoolSpec{VersionId: "4.19.10", ChannelGroup: "candidate", Platform: defaulted}},
		{"no platform at all", cl, &csv1.NodePoolSpec{}, nil,
			&csv1.NodePoolSpec{VersionId: "4.19.17", ChannelGroup: "candidate", Platform: &csv1.NodePoolPlatform{
				OsDiskSizeGib: 64, OsDiskStorageAccountType: "Premium_LRS", OsDiskPersistence: "Persistent", SubnetId: clusterSubnet}}},
		{"what is given is kept", cl,
			&csv1.NodePoolSpec{VersionId: "4.18.3", ChannelGroup: "stable", Platform: explicit}, nil,
			&csv1.NodePoolSpec{VersionId: "4.18.3", ChannelGroup: "stable", Platform: explicit}},
		{"an update keeps the pool's version and group", cl,
			&csv1.NodePoolSpec{Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}},
			&csv1.NodePoolSpec{VersionId: "4.18.3", ChannelGroup: "fast"},
			&csv1.NodePoolSpec{VersionId: "4.18.3", ChannelGroup: "fast", Platform: defaulted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := proto.Clone(tc.in)
			got := DefaultNodePool(tc.in, tc.cluster, tc.cur)
			if !proto.Equal(got, tc.want) {
				t.Fatalf("DefaultNodePool = %v, want %v", got, tc.want)
			}
			if !proto.Equal(in, tc.in) {
				t.Fatalf("DefaultNodePool changed its input: %v, was %v", tc.in, in)
			}
		})
	}
}

// TestDefaultExternalAuth: the one default site of an external auth spec (the frontend fills
// its document with it before the first write, Cluster Service's validation applies it too).
func TestDefaultExternalAuth(t *testing.T) {
	rule := func(typ string) *csv1.TokenClaimValidationRule {
		return &csv1.TokenClaimValidationRule{Type: typ, RequiredClaim: "tid", RequiredValue: "t1"}
	}
	for _, tc := range []struct {
		name     string
		in, want *csv1.ExternalAuthSpec
	}{
		{"nil is an empty spec with the policy", nil,
			&csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{PrefixPolicy: "None"}}}},
		{"left out: None and RequiredClaim",
			&csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub"}},
				ValidationRules: []*csv1.TokenClaimValidationRule{rule(""), rule("RequiredClaim")}},
			&csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: "None"}},
				ValidationRules: []*csv1.TokenClaimValidationRule{rule("RequiredClaim"), rule("RequiredClaim")}}},
		{"given: kept as given, refused or not by the validation",
			&csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: "Prefix", Prefix: "u:"}},
				ValidationRules: []*csv1.TokenClaimValidationRule{rule("Other")}},
			&csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: "Prefix", Prefix: "u:"}},
				ValidationRules: []*csv1.TokenClaimValidationRule{rule("Other")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before *csv1.ExternalAuthSpec
			if tc.in != nil {
				before = proto.Clone(tc.in).(*csv1.ExternalAuthSpec)
			}
			got := DefaultExternalAuth(tc.in)
			if !proto.Equal(got, tc.want) {
				t.Fatalf("DefaultExternalAuth = %v, want %v", got, tc.want)
			}
			if tc.in != nil && !proto.Equal(tc.in, before) {
				t.Fatalf("input changed: %v", tc.in)
			}
		})
	}
}
