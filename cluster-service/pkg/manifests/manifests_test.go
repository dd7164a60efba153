package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"google.golang.org/protobuf/proto"
	"regexp"
	"strings"
	"testing"

	hypershiftv1beta1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
)

const id = "0123456789abcdefghijklmnopqrstuv"

func key() []byte { return bytes.Repeat([]byte{7}, 32) }

func fullSpec() *csv1.ClusterSpec {
	return &csv1.ClusterSpec{
		VersionId:    "4.19.7",
		ChannelGroup: "candidate",
		Network: &csv1.NetworkSpec{NetworkType: "OVNKubernetes", PodCidr: "10.128.0.0/14", ServiceCidr: "172.30.0.0/16",
			MachineCidr: "10.0.0.0/16", HostPrefix: 23},
		ApiVisibility: "Public",
		Azure: &csv1.AzureSpec{SubscriptionId: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Location: "eastus",
			ManagedResourceGroup:   "rg-managed",
			SubnetId:               "/subscriptions/00000000-0000-0000-0000-000000000001/resourcegroups/rg/providers/microsoft.network/virtualnetworks/vnet/subnets/default",
			NetworkSecurityGroupId: "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
			TenantId:               "tenant",
			WorkloadIdentities: &csv1.AzureWorkloadIdentities{ImageRegistry: uuid(1), Ingress: uuid(2), File: uuid(3), Disk: uuid(4),
				NodePoolManagement: uuid(5), CloudProvider: uuid(6), Network: uuid(7)}},
		DnsBaseDomain:      "example.openshiftapps.com",
		ImageRegistryState: "Enabled",
	}
}

func uuid(n int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", n) }

func cluster(spec *csv1.ClusterSpec) Cluster {
	return Cluster{ID: id, ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/My-Cluster",
		Spec: spec, EtcdEncryptionKey: key(), SSHPublicKey: "ssh-ed25519 AAAA test"}
}

// decoded returns the manifests of w by kind.
func decoded(t *testing.T, w *workv1.ManifestWork) (map[string][]*unstructured.Unstructured, *hypershiftv1beta1.HostedCluster) {
	t.Helper()
	byKind := map[string][]*unstructured.Unstructured{}
	var hc *hypershiftv1beta1.HostedCluster
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			t.Fatalf("manifest is not a Kubernetes object: %v", err)
		}
		byKind[u.GetKind()] = append(byKind[u.GetKind()], u)
		if u.GetKind() == "HostedCluster" {
			hc = &hypershiftv1beta1.HostedCluster{}
			if err := json.Unmarshal(m.Raw, hc); err != nil {
				t.Fatal(err)
			}
		}
	}
	return byKind, hc
}

func TestBuild(t *testing.T) {
	cfg := Config{Env: "int"}
	tests := []struct {
		name  string
		spec  func() *csv1.ClusterSpec
		check func(t *testing.T, w *workv1.ManifestWork, kinds map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster)
	}{
		{
			name: "work_identity_and_delete_option",
			spec: fullSpec,
			check: func(t *testing.T, w *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, _ *hypershiftv1beta1.HostedCluster) {
				if w.Name != "cluster-"+id || w.Labels[LabelClusterID] != id || w.Annotations[AnnotationSpecHash] == "" {
					t.Fatalf("work meta = %+v", w.ObjectMeta)
				}
				if got, ok := ClusterIDFromWorkName(w.Name); !ok || got != id {
					t.Fatalf("ClusterIDFromWorkName = %q, %v", got, ok)
				}
				if w.Spec.DeleteOption == nil || w.Spec.DeleteOption.PropagationPolicy != workv1.DeletePropagationPolicyTypeForeground {
					t.Fatalf("delete option = %+v", w.Spec.DeleteOption)
				}
			},
		},
		{
			name: "namespace_secrets_and_hostedcluster_in_ocm_env_id",
			spec: fullSpec,
			check: func(t *testing.T, _ *workv1.ManifestWork, kinds map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				ns := "ocm-int-" + id
				if len(kinds["Namespace"]) != 1 || kinds["Namespace"][0].GetName() != ns {
					t.Fatalf("namespace = %v", kinds["Namespace"])
				}
				if len(kinds["Secret"]) != 3 {
					t.Fatalf("secrets = %d, want 3", len(kinds["Secret"]))
				}
				for _, s := range kinds["Secret"] {
					if s.GetNamespace() != ns {
						t.Fatalf("secret %s in %s", s.GetName(), s.GetNamespace())
					}
				}
				if hc == nil || hc.Namespace != ns || hc.Name != "my-cluster" || hc.APIVersion != "hypershift.openshift.io/v1beta1" {
					t.Fatalf("hosted cluster = %+v", hc)
				}
			},
		},
		{
			name: "hostedcluster_spec_from_cluster_spec",
			spec: fullSpec,
			check: func(t *testing.T, _ *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				s := hc.Spec
				if s.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.19.7-multi" || s.Channel != "candidate-4.19" {
					t.Fatalf("release %q channel %q", s.Release.Image, s.Channel)
				}
				if s.Networking.NetworkType != hypershiftv1beta1.OVNKubernetes || s.Networking.ClusterNetwork[0].CIDR.String() != "10.128.0.0/14" ||
					s.Networking.ClusterNetwork[0].HostPrefix != 23 || s.Networking.ServiceNetwork[0].CIDR.String() != "172.30.0.0/16" ||
					s.Networking.MachineNetwork[0].CIDR.String() != "10.0.0.0/16" {
					t.Fatalf("networking = %+v", s.Networking)
				}
				az := s.Platform.Azure
				if s.Platform.Type != hypershiftv1beta1.AzurePlatform || az == nil || az.Location != "eastus" || az.ResourceGroupName != "rg-managed" ||
					az.SubscriptionID != "00000000-0000-0000-0000-000000000001" || az.TenantID != "tenant" ||
					az.VnetID != "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet" ||
					az.SubnetID != az.VnetID+"/subnets/default" ||
					az.SecurityGroupID != "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg" {
					t.Fatalf("azure platform = %+v", az)
				}
				if s.Etcd.ManagementType != hypershiftv1beta1.Managed || s.Etcd.Managed.Storage.PersistentVolume.Size.String() != "8Gi" {
					t.Fatalf("etcd = %+v", s.Etcd)
				}
				if s.PullSecret.Name != "my-cluster-pull-secret" || s.SSHKey.Name != "my-cluster-ssh-key" {
					t.Fatalf("secret refs %q %q", s.PullSecret.Name, s.SSHKey.Name)
				}
				if s.SecretEncryption == nil || s.SecretEncryption.Type != hypershiftv1beta1.AESCBC ||
					s.SecretEncryption.AESCBC.ActiveKey.Name != "my-cluster-etcd-encryption-key" {
					t.Fatalf("secret encryption = %+v", s.SecretEncryption)
				}
				if s.DNS.BaseDomain != "example.openshiftapps.com" || s.InfraID != id || s.Capabilities != nil {
					t.Fatalf("dns %q infra %q caps %+v", s.DNS.BaseDomain, s.InfraID, s.Capabilities)
				}
			},
		},
		{
			name: "secrets_carry_the_stored_material",
			spec: fullSpec,
			check: func(t *testing.T, w *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, _ *hypershiftv1beta1.HostedCluster) {
				for _, m := range w.Spec.Workload.Manifests {
					var s corev1.Secret
					if json.Unmarshal(m.Raw, &s) != nil || s.Kind != "Secret" {
						continue
					}
					switch s.Name {
					case "my-cluster-pull-secret":
						if s.Type != corev1.SecretTypeDockerConfigJson || string(s.Data[".dockerconfigjson"]) != DefaultPullSecret {
							t.Fatalf("pull secret = %+v", s)
						}
					case "my-cluster-ssh-key":
						if string(s.Data["id_rsa.pub"]) != "ssh-ed25519 AAAA test" {
							t.Fatalf("ssh key = %q", s.Data["id_rsa.pub"])
						}
					case "my-cluster-etcd-encryption-key":
						if !bytes.Equal(s.Data["key"], key()) {
							t.Fatalf("etcd key = %x", s.Data["key"])
						}
					default:
						t.Fatalf("unexpected secret %s", s.Name)
					}
				}
			},
		},
		{
			name: "server_side_apply_for_every_manifest_and_feedback_on_hostedcluster",
			spec: fullSpec,
			check: func(t *testing.T, w *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				if len(w.Spec.ManifestConfigs) != len(w.Spec.Workload.Manifests) {
					t.Fatalf("%d configs for %d manifests", len(w.Spec.ManifestConfigs), len(w.Spec.Workload.Manifests))
				}
				var found bool
				for _, mc := range w.Spec.ManifestConfigs {
					if mc.UpdateStrategy == nil || mc.UpdateStrategy.Type != workv1.UpdateStrategyTypeServerSideApply ||
						mc.UpdateStrategy.ServerSideApply.FieldManager != FieldManager {
						t.Fatalf("update strategy of %+v = %+v", mc.ResourceIdentifier, mc.UpdateStrategy)
					}
					if mc.ResourceIdentifier.Resource != "hostedclusters" {
						if len(mc.FeedbackRules) != 0 {
							t.Fatalf("feedback on %+v", mc.ResourceIdentifier)
						}
						continue
					}
					found = true
					if mc.ResourceIdentifier != (workv1.ResourceIdentifier{Group: "hypershift.openshift.io", Resource: "hostedclusters", Name: hc.Name, Namespace: hc.Namespace}) {
						t.Fatalf("identifier = %+v", mc.ResourceIdentifier)
					}
					paths := map[string]string{}
					for _, p := range mc.FeedbackRules[0].JsonPaths {
						paths[p.Name] = p.Path
					}
					want := map[string]string{"conditions": ".status.conditions", "versionDesired": ".status.version.desired",
						"versionHistory": ".status.version.history", "controlPlaneEndpoint": ".status.controlPlaneEndpoint",
						"generation": ".metadata.generation", "autoscaling": ".spec.autoscaling", "apiServerNetworking": ".spec.networking.apiServer",
						"imageContentSources": ".spec.imageContentSources", "secretEncryption": ".spec.secretEncryption",
						"workloadIdentities": ".spec.platform.azure.azureAuthenticationConfig.workloadIdentities"}
					if mc.FeedbackRules[0].Type != workv1.JSONPathsType || len(paths) != len(want) {
						t.Fatalf("feedback = %+v", mc.FeedbackRules)
					}
					for k, v := range want {
						if paths[k] != v {
							t.Fatalf("feedback %s = %q, want %q", k, paths[k], v)
						}
					}
				}
				if !found {
					t.Fatal("no manifest config for the HostedCluster")
				}
			},
		},
		{
			name: "workload_identities_from_spec",
			spec: fullSpec,
			check: func(t *testing.T, _ *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				a := hc.Spec.Platform.Azure.AzureAuthenticationConfig
				if a.AzureAuthenticationConfigType != hypershiftv1beta1.AzureAuthenticationTypeWorkloadIdentities || a.WorkloadIdentities == nil ||
					a.WorkloadIdentities.ImageRegistry.ClientID != hypershiftv1beta1.AzureClientID(uuid(1)) ||
					a.WorkloadIdentities.Network.ClientID != hypershiftv1beta1.AzureClientID(uuid(7)) {
					t.Fatalf("authentication = %+v", a)
				}
			},
		},
		{
			name: "customer_managed_key_uses_azure_kms",
			spec: func() *csv1.ClusterSpec {
				s := fullSpec()
				s.EtcdEncryptionKeyId = "https://myvault.vault.azure.net/keys/etcd/0123abcd"
				return s
			},
			check: func(t *testing.T, _ *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				se := hc.Spec.SecretEncryption
				if se.Type != hypershiftv1beta1.KMS || se.KMS.Provider != hypershiftv1beta1.AZURE ||
					se.KMS.Azure.ActiveKey != (hypershiftv1beta1.AzureKMSKey{KeyVaultName: "myvault", KeyName: "etcd", KeyVersion: "0123abcd"}) {
					t.Fatalf("secret encryption = %+v", se)
				}
				// The KMS plugin's identity: HyperShift's CRD requires both fields.
				if want := (hypershiftv1beta1.ManagedIdentity{ObjectEncoding: "utf-8", CredentialsSecretName: "kms-" + id}); se.KMS.Azure.KMS != want {
					t.Fatalf("KMS identity = %+v, want %+v", se.KMS.Azure.KMS, want)
				}
			},
		},
		{
			name: "private_api_and_disabled_registry",
			spec: func() *csv1.ClusterSpec {
				s := fullSpec()
				s.ApiVisibility, s.ImageRegistryState = "Private", "Disabled"
				return s
			},
			check: func(t *testing.T, _ *workv1.ManifestWork, _ map[string][]*unstructured.Unstructured, hc *hypershiftv1beta1.HostedCluster) {
				for _, m := range hc.Spec.Services {
					if m.Service == hypershiftv1beta1.APIServer && m.Type != hypershiftv1beta1.Route {
						t.Fatalf("private API published as %s", m.Type)
					}
				}
				if hc.Spec.Capabilities == nil || len(hc.Spec.Capabilities.Disabled) != 1 || hc.Spec.Capabilities.Disabled[0] != hypershiftv1beta1.ImageRegistryCapability {
					t.Fatalf("capabilities = %+v", hc.Spec.Capabilities)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Build(cfg, cluster(tt.spec()))
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			kinds, hc := decoded(t, w)
			tt.check(t, w, kinds, hc)
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, err := Build(Config{}, cluster(fullSpec()))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Build(Config{}, cluster(fullSpec()))
	if a.Annotations[AnnotationSpecHash] != b.Annotations[AnnotationSpecHash] {
		t.Fatal("two builds of the same cluster differ")
	}
	s := fullSpec()
	s.VersionId = "4.19.8"
	c, _ := Build(Config{}, cluster(s))
	if c.Annotations[AnnotationSpecHash] == a.Annotations[AnnotationSpecHash] {
		t.Fatal("a spec change did not change the hash")
	}
	if !strings.HasPrefix(Namespace("", id), "ocm-dev-") {
		t.Fatalf("default env namespace = %s", Namespace("", id))
	}
}

func TestBuildWorkloadIdentityPlaceholder(t *testing.T) {
	s := fullSpec()
	s.Azure.WorkloadIdentities = nil
	if _, err := Build(Config{}, cluster(s)); !errors.Is(err, ErrNoWorkloadIdentities) {
		t.Fatalf("without identities or placeholder: err = %v", err)
	}
	w, err := Build(Config{DevWorkloadIdentityClientID: uuid(9)}, cluster(s))
	if err != nil {
		t.Fatal(err)
	}
	_, hc := decoded(t, w)
	if got := hc.Spec.Platform.Azure.AzureAuthenticationConfig.WorkloadIdentities; got == nil || got.Disk.ClientID != hypershiftv1beta1.AzureClientID(uuid(9)) {
		t.Fatalf("placeholder identities = %+v", got)
	}
}

func TestBuildRejects(t *testing.T) {
	tests := []struct {
		name string
		c    Cluster
	}{
		{"no_spec", Cluster{ID: id, EtcdEncryptionKey: key()}},
		{"short_etcd_key", Cluster{ID: id, Spec: fullSpec(), EtcdEncryptionKey: []byte("short")}},
		{"bad_pod_cidr", func() Cluster {
			s := fullSpec()
			s.Network.PodCidr = "nope"
			return cluster(s)
		}()},
		{"bad_key_vault_url", func() Cluster {
			s := fullSpec()
			s.EtcdEncryptionKeyId = "https://vault.vault.azure.net/secrets/x"
			return cluster(s)
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Build(Config{}, tt.c); err == nil {
				t.Fatal("Build accepted it")
			}
		})
	}
}

func TestValidateEnv(t *testing.T) {
	for env, ok := range map[string]bool{"dev": true, "int-1": true, "": false, "Dev": false, "-x": false, "toolongenvironment": false} {
		if err := ValidateEnv(env); (err == nil) != ok {
			t.Errorf("ValidateEnv(%q) = %v, want ok=%v", env, err, ok)
		}
	}
}

func TestBuildNodePool(t *testing.T) {
	cl := Cluster{ID: "00000000000000000000000000000001", ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/Alpha",
		Spec: &csv1.ClusterSpec{VersionId: "4.19.17", Azure: &csv1.AzureSpec{
			SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourcegroups/rg/providers/microsoft.network/virtualnetworks/vnet/subnets/s"}}}
	// As Cluster Service stores it (model.DefaultNodePool): the cluster's version and subnet.
	spec := &csv1.NodePoolSpec{VersionId: cl.Spec.VersionId, Replicas: 3, Labels: map[string]string{"tier": "web"}, AutoRepair: true,
		Taints: []*csv1.Taint{{Key: "b", Effect: "NoSchedule"}, {Key: "a", Value: "x", Effect: "NoExecute"}},
		Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128, OsDiskStorageAccountType: "StandardSSD_LRS", AvailabilityZone: "2",
			SubnetId: cl.Spec.Azure.SubnetId, OsDiskPersistence: model.DefaultOSDiskPersistence}}
	np := NodePool{ID: "00000000000000000000000000000100", ARMResourceID: cl.ARMResourceID + "/nodePools/Workers", Spec: spec, Cluster: cl}
	w, err := BuildNodePool(Config{}, np)
	if err != nil {
		t.Fatal(err)
	}
	if w.Name != "nodepool-00000000000000000000000000000100" || len(w.Spec.Workload.Manifests) != 1 || len(w.Spec.ManifestConfigs) != 1 {
		t.Fatalf("work = %s with %d manifests", w.Name, len(w.Spec.Workload.Manifests))
	}
	if id, ok := NodePoolIDFromWorkName(w.Name); !ok || id != np.ID {
		t.Fatalf("NodePoolIDFromWorkName = %q, %v", id, ok)
	}
	if _, ok := ClusterIDFromWorkName(w.Name); ok {
		t.Fatal("a node pool work name maps to a cluster")
	}
	var pool hypershiftv1beta1.NodePool
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &pool); err != nil {
		t.Fatal(err)
	}
	az := pool.Spec.Platform.Azure
	switch {
	case pool.Name != "workers" || pool.Namespace != "ocm-dev-"+cl.ID || pool.Spec.ClusterName != "alpha":
		t.Fatalf("placement: %s/%s of %s", pool.Namespace, pool.Name, pool.Spec.ClusterName)
	case pool.Spec.Replicas == nil || *pool.Spec.Replicas != 3 || pool.Spec.AutoScaling != nil:
		t.Fatalf("replicas %v autoscaling %v", pool.Spec.Replicas, pool.Spec.AutoScaling)
	case pool.Spec.Release.Image != "quay.io/openshift-release-dev/ocp-release:4.19.17-multi":
		t.Fatalf("release %s", pool.Spec.Release.Image)
	case az.VMSize != "Standard_D8s_v3" || az.OSDisk.SizeGiB != 128 || az.OSDisk.DiskStorageAccountType != "StandardSSD_LRS" || az.AvailabilityZone != "2":
		t.Fatalf("azure platform %+v", az)
	case az.SubnetID != "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s":
		t.Fatalf("subnet (the cluster's, canonical casing) %s", az.SubnetID)
	case !pool.Spec.Management.AutoRepair || pool.Spec.Management.UpgradeType != hypershiftv1beta1.UpgradeTypeReplace:
		t.Fatalf("management %+v", pool.Spec.Management)
	case len(pool.Spec.Taints) != 2 || pool.Spec.Taints[0].Key != "a" || pool.Spec.NodeLabels["tier"] != "web":
		t.Fatalf("taints %v labels %v", pool.Spec.Taints, pool.Spec.NodeLabels)
	}
	fb := w.Spec.ManifestConfigs[0].FeedbackRules[0].JsonPaths
	if len(fb) != 5 || fb[1].Path != ".status.replicas" || fb[3].Path != ".metadata.labels" || fb[4].Path != ".metadata.generation" ||
		w.Spec.ManifestConfigs[0].UpdateStrategy.Type != workv1.UpdateStrategyTypeServerSideApply {
		t.Fatalf("manifest config %+v", w.Spec.ManifestConfigs[0])
	}

	// Autoscaling replaces replicas; the build is deterministic, and a change changes the hash.
	again, _ := BuildNodePool(Config{}, np)
	if again.Annotations[AnnotationSpecHash] != w.Annotations[AnnotationSpecHash] {
		t.Fatal("same input, different hash")
	}
	spec.Replicas, spec.Autoscaling = 0, &csv1.NodePoolAutoscaling{Min: 2, Max: 6}
	auto, _ := BuildNodePool(Config{}, np)
	if err := json.Unmarshal(auto.Spec.Workload.Manifests[0].Raw, &pool); err != nil {
		t.Fatal(err)
	}
	var rawPool map[string]any
	_ = json.Unmarshal(auto.Spec.Workload.Manifests[0].Raw, &rawPool)
	if _, has := rawPool["spec"].(map[string]any)["replicas"]; has || pool.Spec.AutoScaling == nil || pool.Spec.AutoScaling.Max != 6 {
		t.Fatalf("autoscaled pool: %s", auto.Spec.Workload.Manifests[0].Raw)
	}
	if auto.Annotations[AnnotationSpecHash] == w.Annotations[AnnotationSpecHash] {
		t.Fatal("enabling autoscaling did not change the hash")
	}
	// The NodePool carries a hash of its own spec (fed back with its labels), which the same
	// change changes too.
	before, _ := NodePoolSpecHashOf(w)
	after, _ := NodePoolSpecHashOf(auto)
	if before == "" || after == "" || before == after || pool.Labels[LabelNodePoolSpecHash] != after || len(after) > 63 {
		t.Fatalf("NodePool spec hash %q before, %q after enabling autoscaling (label %q)", before, after, pool.Labels[LabelNodePoolSpecHash])
	}
}

// TestBuildNodePoolDisksAndEncryption: encryption at host is always explicit (HyperShift's
// default is Enabled), the disk encryption set is spelled as HyperShift's CRD wants it, and
// the OS disk persistence is the stored one (Cluster Service defaults it to Persistent:
// server.TestDefaultNodePool).
func TestBuildNodePoolDisksAndEncryption(t *testing.T) {
	cl := Cluster{ID: "00000000000000000000000000000001", ARMResourceID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/Alpha",
		Spec: &csv1.ClusterSpec{VersionId: "4.19.17", Azure: &csv1.AzureSpec{
			SubnetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/s"}}}
	const des = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des-1"
	for _, tc := range []struct {
		name                              string
		platform                          *csv1.NodePoolPlatform
		encryptionAtHost, set, persistent string
	}{
		{"defaults", &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}, "Disabled", "", "Persistent"},
		{"encryption_at_host", &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", EncryptionAtHost: true}, "Enabled", "", "Persistent"},
		{"encryption_set_in_canonical_casing", &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3",
			OsDiskEncryptionSetId: "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000001/resourcegroups/rg/providers/microsoft.compute/diskencryptionsets/des-1"}, "Disabled", des, "Persistent"},
		{"ephemeral_os_disk", &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskPersistence: "Ephemeral"}, "Disabled", "", "Ephemeral"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := BuildNodePool(Config{}, NodePool{ID: "00000000000000000000000000000100", ARMResourceID: cl.ARMResourceID + "/nodePools/workers",
				Spec: &csv1.NodePoolSpec{Replicas: 1, Platform: stored(tc.platform)}, Cluster: cl})
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &raw); err != nil {
				t.Fatal(err)
			}
			// Read the JSON by HyperShift's field names, not through its Go types.
			az := raw["spec"].(map[string]any)["platform"].(map[string]any)["azure"].(map[string]any)
			disk := az["osDisk"].(map[string]any)
			if az["encryptionAtHost"] != tc.encryptionAtHost || disk["persistence"] != tc.persistent {
				t.Fatalf("encryptionAtHost %v persistence %v, want %s and %s", az["encryptionAtHost"], disk["persistence"], tc.encryptionAtHost, tc.persistent)
			}
			if got, has := disk["encryptionSetID"]; (tc.set == "" && has) || (tc.set != "" && got != tc.set) {
				t.Fatalf("encryptionSetID %v, want %q", got, tc.set)
			}
		})
	}
}

func TestBuildDNSIssuerAndConsoleURL(t *testing.T) {
	prefixed := func(p string) *csv1.ClusterSpec { s := fullSpec(); s.DnsBaseDomainPrefix = p; return s }
	noIngress := fullSpec()
	noIngress.IngressVisibility = "Disabled"
	noDomain := fullSpec()
	noDomain.DnsBaseDomain = ""
	withIssuer := fullSpec()
	withIssuer.IssuerUrl = IssuerURL("https://oidc.example.com/", id)
	tests := []struct {
		name        string
		spec        *csv1.ClusterSpec
		wantIssuer  string
		wantConsole string
	}{
		{"console_under_the_name", fullSpec(), "", "https://console-openshift-console.apps.my-cluster.example.openshiftapps.com"},
		{"console_under_the_prefix", prefixed("shop"), "", "https://console-openshift-console.apps.shop.example.openshiftapps.com"},
		{"no_console_with_ingress_disabled", noIngress, "", ""},
		{"no_console_without_base_domain", noDomain, "", ""},
		{"issuer_sent_as_spec_issuerURL", withIssuer, "https://oidc.example.com/" + id, "https://console-openshift-console.apps.my-cluster.example.openshiftapps.com"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Build(Config{}, cluster(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			_, hc := decoded(t, w)
			if hc.Spec.DNS.BaseDomain != tt.spec.GetDnsBaseDomain() || hc.Spec.IssuerURL != tt.wantIssuer {
				t.Fatalf("dns %+v issuerURL %q", hc.Spec.DNS, hc.Spec.IssuerURL)
			}
			if got := ConsoleURL(hc); got != tt.wantConsole {
				t.Fatalf("ConsoleURL = %q, want %q", got, tt.wantConsole)
			}
		})
	}
	if got := ClusterBaseDomain("", "ocm-dev-"+id); got != "ocm-dev-"+id+".hypershift.local" {
		t.Fatalf("ClusterBaseDomain default = %q", got)
	}
	if got := IssuerURL("", id); got != "https://oidc.hypershift.local/"+id {
		t.Fatalf("IssuerURL default = %q", got)
	}
}

// TestHostedClusterNameFitsTheControlPlaneNamespace: every name ARM allows (up to 54 characters)
// gives a HostedCluster whose control-plane namespace fits Kubernetes' 63, stable, distinct and a
// valid DNS label, in the shortest and the longest environment name.
func TestHostedClusterNameFitsTheControlPlaneNamespace(t *testing.T) {
	label := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	const prefix = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/"
	for _, env := range []string{"", "dev", "abcdefghijklmnop"} {
		seen := map[string]string{}
		for _, name := range []string{"c", "My-Cluster", "exactly-twenty-two-chr", "a-cluster-name-of-twenty-three", strings.Repeat("x", 53) + "1", strings.Repeat("x", 53) + "2", "ab" + strings.Repeat("-", 51) + "z"} {
			hc := HostedClusterName(env, prefix+name)
			ns := ControlPlaneNamespace(env, id, prefix+name)
			if len(ns) > 63 || !label.MatchString(hc) || !label.MatchString(ns) {
				t.Errorf("env %q name %q: HostedCluster %q, control-plane namespace %q (%d characters)", env, name, hc, ns, len(ns))
			}
			if hc != HostedClusterName(env, prefix+name) {
				t.Errorf("env %q name %q: not stable", env, name)
			}
			if other, dup := seen[hc]; dup {
				t.Errorf("env %q: %q and %q share the HostedCluster name %q", env, other, name, hc)
			}
			seen[hc] = name
			if len(name) <= 22 && env != "abcdefghijklmnop" && hc != strings.ToLower(name) {
				t.Errorf("env %q: a short name %q became %q; it should stay the ARM name", env, name, hc)
			}
		}
	}
}

// stored is p with the persistence Cluster Service's defaulting gives a pool that names none.
func stored(p *csv1.NodePoolPlatform) *csv1.NodePoolPlatform {
	p = proto.Clone(p).(*csv1.NodePoolPlatform)
	if p.OsDiskPersistence == "" {
		p.OsDiskPersistence = model.DefaultOSDiskPersistence
	}
	return p
}

// TestBuildFeedbackScrape: in flight the HostedCluster and the secrets are watched (the
// secrets' live reads are what watchSecrets saves); steady, the HostedCluster is polled and
// the secrets carry no scrape type, the same work as before watched secrets existed.
func TestBuildFeedbackScrape(t *testing.T) {
	for _, tc := range []struct {
		name                string
		watch, secretsLive  bool
		wantHC, wantSecrets workv1.FeedbackScrapeType
	}{
		{"steady", false, false, workv1.FeedbackPollType, ""},
		{"in_flight", true, false, workv1.FeedbackWatchType, workv1.FeedbackWatchType},
		{"in_flight_secrets_read_live", true, true, workv1.FeedbackWatchType, ""},
		{"steady_secrets_read_live", false, true, workv1.FeedbackPollType, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(fullSpec())
			c.WatchStatus, c.ReadSecretsLive = tc.watch, tc.secretsLive
			w, err := Build(Config{}, c)
			if err != nil {
				t.Fatal(err)
			}
			secrets := 0
			for _, mc := range w.Spec.ManifestConfigs {
				switch mc.ResourceIdentifier.Resource {
				case "hostedclusters":
					if mc.FeedbackScrapeType != tc.wantHC {
						t.Errorf("HostedCluster scrape type %q, want %q", mc.FeedbackScrapeType, tc.wantHC)
					}
				case "secrets":
					secrets++
					if mc.FeedbackScrapeType != tc.wantSecrets {
						t.Errorf("secret %s scrape type %q, want %q", mc.ResourceIdentifier.Name, mc.FeedbackScrapeType, tc.wantSecrets)
					}
				default:
					if mc.FeedbackScrapeType != "" {
						t.Errorf("%s scrape type %q, want none", mc.ResourceIdentifier.Resource, mc.FeedbackScrapeType)
					}
				}
			}
			if secrets != 3 {
				t.Errorf("%d secret manifest configs, want 3", secrets)
			}
			if got := FeedbackMode(w); got != tc.wantHC {
				t.Errorf("FeedbackMode = %q, want the HostedCluster's %q", got, tc.wantHC)
			}
		})
	}
	// The steady form does not depend on the baseline knob: a rollout republishes no work.
	a, _ := Build(Config{}, cluster(fullSpec()))
	c := cluster(fullSpec())
	c.ReadSecretsLive = true
	b, _ := Build(Config{}, c)
	if a.Annotations[AnnotationSpecHash] != b.Annotations[AnnotationSpecHash] {
		t.Error("the steady work differs with ReadSecretsLive")
	}
}
