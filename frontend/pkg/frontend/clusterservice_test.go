package frontend

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
)

func TestClusterSpecWorkloadIdentities(t *testing.T) {
	operators := map[string]string{
		"image-registry": "ir", "ingress": "in", "file-csi-driver": "fi", "disk-csi-driver": "di",
		"cluster-api-azure": "capz", "cloud-controller-manager": "ccm", "cloud-network-config": "net",
	}
	build := func(skip string) *api.Cluster {
		id, _ := arm.ParseResourceID(clusterPath("rg", "c"))
		c := &api.Cluster{ID: id, Identity: &api.ManagedServiceIdentity{UserAssignedIdentities: map[string]*api.UserAssignedIdentity{}}}
		c.Properties.Platform.OperatorsAuthentication.UserAssignedIdentities.ControlPlaneOperators = map[string]string{}
		for op, name := range operators {
			rid := "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/" + name
			c.Properties.Platform.OperatorsAuthentication.UserAssignedIdentities.ControlPlaneOperators[op] = rid
			if op != skip {
				// ARM's spelling of the key may differ in case from the operator map's.
				c.Identity.UserAssignedIdentities[strings.ToLower(rid)] = &api.UserAssignedIdentity{ClientID: "client-" + name}
			}
		}
		return c
	}
	wi := clusterSpec(build(""), "").Azure.WorkloadIdentities
	if wi == nil || wi.NodePoolManagement != "client-capz" || wi.CloudProvider != "client-ccm" || wi.Network != "client-net" ||
		wi.ImageRegistry != "client-ir" || wi.File != "client-fi" || wi.Disk != "client-di" || wi.Ingress != "client-in" {
		t.Fatalf("workload identities %v", wi)
	}
	if wi := clusterSpec(build("ingress"), "").Azure.WorkloadIdentities; wi != nil {
		t.Fatalf("partial set sent: %v", wi)
	}
}
