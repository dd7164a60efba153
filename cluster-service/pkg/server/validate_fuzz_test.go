package server

import (
	"bytes"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
)

// FuzzValidateCreate checks the promise validation makes to the controller: a spec it accepts
// can always be built into a ManifestWork, so a cluster never fails after create for input that
// create let through. It also must never panic on any input.
func FuzzValidateCreate(f *testing.F) {
	catalogue, err := versions.Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("4.19.17", "10.128.0.0/14", "172.30.0.0/16", "10.0.0.0/16", int32(23), "OVNKubernetes", "Public", "eastus",
		"/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s", "", "example.com", "my-cluster")
	f.Add("4.19", "", "", "", int32(0), "", "Private", "westeurope", "", "https://kv.vault.azure.net/keys/k/v1", "", "abc")
	f.Add("4.19", "10.0.0.0/8", "10.0.0.0/16", "", int32(26), "Other", "", "", "x", "kv/key", "EXAMPLE.com", "a")
	f.Fuzz(func(t *testing.T, version, pod, svc, machine string, hostPrefix int32, netType, visibility, location, subnet, keyID, domain, name string) {
		c := &csv1.Cluster{
			Id:            "0123456789abcdefghijklmnopqrstuv",
			ArmResourceId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name,
			Spec: &csv1.ClusterSpec{
				VersionId:           version,
				Network:             &csv1.NetworkSpec{PodCidr: pod, ServiceCidr: svc, MachineCidr: machine, HostPrefix: hostPrefix, NetworkType: netType},
				ApiVisibility:       visibility,
				EtcdEncryptionKeyId: keyID,
				DnsBaseDomain:       domain,
				Azure: &csv1.AzureSpec{Location: location, SubnetId: subnet,
					NetworkSecurityGroupId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
			},
		}
		spec, err := validateCreate(&csv1.CreateClusterRequest{Cluster: c}, catalogue, time.Now())
		if err != nil {
			return
		}
		_, err = manifests.Build(manifests.Config{DevWorkloadIdentityClientID: "00000000-0000-0000-0000-000000000009"},
			manifests.Cluster{ID: c.Id, ARMResourceID: c.ArmResourceId, Spec: spec, EtcdEncryptionKey: bytes.Repeat([]byte{1}, 32), SSHPublicKey: "ssh-ed25519 AAAA"})
		if err != nil {
			t.Fatalf("validation accepted a spec that cannot be built: %v\nspec: %v", err, spec)
		}
	})
}
