package server

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
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
	f.Add("4.19", "", "", "", int32(0), "", "Private", "westeurope", "", "https://kv1.vault.azure.net/keys/k/v1", "", "abc")
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

// FuzzValidateNodePool checks node pool validation's promises: it never panics, and a spec it
// accepts builds into a NodePool with exactly one of replicas and autoscaling and a version not
// ahead of the control plane.
func FuzzValidateNodePool(f *testing.F) {
	catalogue, err := versions.Default()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("4.19", int32(2), int32(0), int32(0), "tier", "web", "dedicated", "web", "NoSchedule", "Standard_D8s_v3", int32(64), "Premium_LRS", "", "1")
	f.Add("4.18.27", int32(0), int32(1), int32(3), "a/b", "", "k", "", "NoExecute", "Standard_D4s_v5", int32(0), "", "", "")
	f.Add("4.20.3", int32(-1), int32(3), int32(2), "", "x", "", "v", "Never", "huge", int32(8), "Floppy", "/x", "4")
	f.Fuzz(func(t *testing.T, version string, replicas, min, max int32, labelKey, labelValue, taintKey, taintValue, effect, vmSize string,
		diskSize int32, diskType, subnet, zone string) {
		cl := &store.Cluster{ID: "0123456789abcdefghijklmnopqrstuv",
			ARMResourceID: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c",
			Spec: &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", Azure: &csv1.AzureSpec{
				SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s"}}}
		in := &csv1.NodePoolSpec{VersionId: version, Replicas: replicas, Labels: map[string]string{labelKey: labelValue},
			Taints:   []*csv1.Taint{{Key: taintKey, Value: taintValue, Effect: effect}},
			Platform: &csv1.NodePoolPlatform{VmSize: vmSize, OsDiskSizeGib: diskSize, OsDiskStorageAccountType: diskType, SubnetId: subnet, AvailabilityZone: zone}}
		if min != 0 || max != 0 {
			in.Autoscaling = &csv1.NodePoolAutoscaling{Min: min, Max: max}
		}
		var v violations
		spec := model.ValidateNodePoolSpec(v.model(), "spec", in, modelCluster(cl), nil, catalogue, time.Now)
		if v.err() != nil {
			return
		}
		w, err := manifests.BuildNodePool(manifests.Config{}, manifests.NodePool{ID: "0123456789abcdefghijklmnopqrstu0", ARMResourceID: cl.ARMResourceID + "/nodePools/np1",
			Spec: spec, Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: cl.Spec}})
		if err != nil {
			t.Fatalf("validation accepted a node pool that cannot be built: %v\nspec: %v", err, spec)
		}
		var np hypershiftv1beta1.NodePool
		if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &np); err != nil {
			t.Fatal(err)
		}
		if (np.Spec.Replicas == nil) == (np.Spec.AutoScaling == nil) {
			t.Fatalf("built NodePool has replicas %v and autoscaling %v", np.Spec.Replicas, np.Spec.AutoScaling)
		}
		if c, err := versions.Compare(spec.GetVersionId(), "4.19.17"); err != nil || c > 0 {
			t.Fatalf("accepted version %q against control plane 4.19.17 (%v)", spec.GetVersionId(), err)
		}
	})
}
