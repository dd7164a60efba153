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
	// The spec's policy → the HostedCluster's.
	cases := map[string]configv1.UsernamePrefixPolicy{"None": configv1.NoOpinion, "": configv1.NoOpinion, "NoPrefix": configv1.NoPrefix, "Prefix": configv1.Prefix}
	for policy, want := range cases {
		spec := &csv1.ExternalAuthSpec{ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub", PrefixPolicy: policy}}}
		p := OIDCProvider("hc", ExternalAuth{ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c/externalAuths/e", Spec: spec})
		if got := p.ClaimMappings.Username.PrefixPolicy; got != want {
			t.Errorf("prefix policy %q = %q, want %q", policy, got, want)
		}
	}
}
