package operations

import "testing"

// TestResourceKinds: the backend tells clusters from their children through internal/arm's
// parser, in any casing, and never by string position.
func TestResourceKinds(t *testing.T) {
	const c = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"
	tests := []struct {
		id            string
		cluster, pool bool
		externalAuth  bool
	}{
		{id: c, cluster: true},
		{id: c + "/", cluster: true},
		{id: "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000001/RESOURCEGROUPS/rg/PROVIDERS/microsoft.redhatopenshift/HCPOPENSHIFTCLUSTERS/c1", cluster: true},
		{id: c + "/nodePools/p1", pool: true},
		{id: c + "/NODEPOOLS/p1", pool: true},
		{id: c + "/externalAuths/e1", externalAuth: true},
		{id: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Other/hcpOpenShiftClusters/c1"},
		{id: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1/nodePools/p1/extra/x"},
		{id: "not-an-id/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1"},
	}
	for _, tc := range tests {
		if got := isCluster(tc.id); got != tc.cluster {
			t.Errorf("isCluster(%q) = %v", tc.id, got)
		}
		if got := isClusterChild(tc.id, "nodepools"); got != tc.pool {
			t.Errorf("isClusterChild(%q, nodepools) = %v", tc.id, got)
		}
		if got := isClusterChild(tc.id, "externalauths"); got != tc.externalAuth {
			t.Errorf("isClusterChild(%q, externalauths) = %v", tc.id, got)
		}
	}
}
