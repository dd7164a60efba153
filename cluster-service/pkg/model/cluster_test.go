package model

import (
	"slices"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestIPv4CIDRsInDottedForm: the network's blocks and the API's authorized CIDRs are IPv4 blocks
// written as such. An IPv4 address in IPv6 form (::ffff:a.b.c.d/n), which net.ParseCIDR reads as
// IPv4, is refused: the string is what HyperShift and Azure are given, and they read it as IPv6.
func TestIPv4CIDRsInDottedForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pod    string
		cidrs  []string
		fields []string
	}{
		{"dotted", "10.128.0.0/14", []string{"192.0.2.0/24"}, nil},
		{"pod_network_in_ipv6_form", "::ffff:10.128.0.0/110", nil, []string{"spec.network.pod_cidr"}},
		{"authorized_cidr_in_ipv6_form", "10.128.0.0/14", []string{"::ffff:192.0.2.0/120"}, []string{"spec.api_authorized_cidrs[0]"}},
		{"ipv6", "fd00::/48", []string{"2001:db8::/32"}, []string{"spec.api_authorized_cidrs[0]", "spec.network.pod_cidr"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &csv1.ClusterSpec{Network: &csv1.NetworkSpec{PodCidr: tc.pod}, ApiAuthorizedCidrs: tc.cidrs}
			DefaultCluster(spec)
			var v Violations
			ValidateNetwork(&v, "spec.network", spec.GetNetwork())
			validateAuthorizedCIDRs(&v, "spec.api_authorized_cidrs", spec.GetApiAuthorizedCidrs())
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
