package manifests

import (
	"testing"

	configv1 "github.com/openshift/api/config/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestOIDCProviderPrefixPolicy: the spec holds the specification's prefix policies (None is
// model.DefaultExternalAuth's default); the HostedCluster gets OpenShift's, None being its no
// opinion, "", as is a spec stored before the default was None.
func TestOIDCProviderPrefixPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy string
		want   configv1.UsernamePrefixPolicy
	}{
		{"None", configv1.NoOpinion},
		{"", configv1.NoOpinion},
		{"NoPrefix", configv1.NoPrefix},
		{"Prefix", configv1.Prefix},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			spec := &csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: tc.policy}}}
			p := OIDCProvider("hc", ExternalAuth{ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/externalAuths/e", Spec: spec})
			if got := p.ClaimMappings.Username.PrefixPolicy; got != tc.want {
				t.Fatalf("prefix policy %q = %q, want %q", tc.policy, got, tc.want)
			}
		})
	}
}
