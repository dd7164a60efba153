package manifests_test

// TestClusterServiceManifestsPassTheRealCRDs sends every object Cluster Service's manifest
// builder emits, for every field of the specs it builds from, to a real kube-apiserver with the
// management CRDs installed, as a server-side dry run: an object the apiserver would refuse is
// a test failure here rather than a cluster stuck in INSTALLING on a management cluster. The
// ManifestWork itself goes to the ManifestWork CRD the same way.
//
// Every other case has a cluster name of the longest length ARM allows (54 characters), so the
// control-plane namespace that credential works go to (ocm-<env>-<id>-<HostedCluster name>)
// is checked against Kubernetes' 63-character limit too (manifests.HostedClusterName).
//
// It lives in tooling (which already depends on cluster-service) so that cluster-service does
// not gain a dependency on the local-region code that starts the apiserver.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/dev-infrastructure/mgmtcluster/mgmtclustertest"
)

const armCluster = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/"

func i32(v int32) *int32 { return &v }

// clusterName is case i's ARM name: short, or every other one the 54 characters ARM allows.
func clusterName(i int) string {
	if i%2 == 1 {
		return fmt.Sprintf("Dry%d-", i+1) + strings.Repeat("x", 54-len(fmt.Sprintf("Dry%d-", i+1)))
	}
	return fmt.Sprintf("Dry%d", i+1)
}

func uuid(n int) string { return fmt.Sprintf("00000000-0000-0000-0000-%012d", n) }

// minimalSpec is a cluster with only what Cluster Service requires after defaulting.
func minimalSpec() *csv1.ClusterSpec {
	return &csv1.ClusterSpec{
		VersionId: "4.19.7", ChannelGroup: "stable", ApiVisibility: "Public", ImageRegistryState: "Enabled",
		Network: &csv1.NetworkSpec{NetworkType: "OVNKubernetes", PodCidr: "10.128.0.0/14", ServiceCidr: "172.30.0.0/16",
			MachineCidr: "10.0.0.0/16", HostPrefix: 23},
		Azure: &csv1.AzureSpec{SubscriptionId: "00000000-0000-0000-0000-000000000001", ResourceGroup: "rg", Location: "eastus",
			ManagedResourceGroup: "rg-managed", OutboundType: "LoadBalancer", TenantId: uuid(99),
			SubnetId:               "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/default",
			NetworkSecurityGroupId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg"},
		DnsBaseDomain: "example.openshiftapps.com",
	}
}

// fullSpec sets every field of the cluster spec.
func fullSpec() *csv1.ClusterSpec {
	s := minimalSpec()
	s.ChannelGroup = "candidate"
	s.ApiVisibility = "Private"
	s.ImageRegistryState = "Disabled"
	s.Azure.WorkloadIdentities = &csv1.AzureWorkloadIdentities{ImageRegistry: uuid(1), Ingress: uuid(2), File: uuid(3), Disk: uuid(4),
		NodePoolManagement: uuid(5), CloudProvider: uuid(6), Network: uuid(7)}
	s.Azure.VnetIntegrationSubnetId = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/integration"
	s.EtcdEncryptionKeyId = "https://myvault.vault.azure.net/keys/etcd/0123abcd"
	s.EtcdEncryptionBackupKeyId = "https://myvault.vault.azure.net/keys/etcd/00ffee11"
	s.EtcdEncryptionKeyVaultVisibility = "Private"
	s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: i32(100), MaxPodGracePeriodSeconds: i32(600),
		MaxNodeProvisionTimeSeconds: i32(900), PodPriorityThreshold: i32(-10)}
	s.NodeDrainTimeoutMinutes = 30
	s.ApiAuthorizedCidrs = []string{"10.0.0.0/8", "192.0.2.7/32"}
	s.ImageDigestMirrors = []*csv1.ImageDigestMirror{{Source: "quay.io/openshift-release-dev/ocp-release", Mirrors: []string{"mirror.example.com/ocp/release"}}}
	s.IngressVisibility = "Private"
	s.CryptoRestrictions = "FIPS"
	s.DnsBaseDomainPrefix = "mycluster"
	s.IssuerUrl = "https://oidc.example.com/0123456789abcdefghijklmnopqrstuv"
	s.PausedUntil = "2026-12-01T00:00:00Z" // an SRE's time-boxed pause
	return s
}

type clusterCase struct {
	name   string
	spec   func() *csv1.ClusterSpec
	devWI  bool // build with the region's development workload identity instead of the spec's
	extern *csv1.ExternalAuthSpec
}

func clusterCases() []clusterCase {
	with := func(f func(*csv1.ClusterSpec)) func() *csv1.ClusterSpec {
		return func() *csv1.ClusterSpec { s := fullSpec(); f(s); return s }
	}
	return []clusterCase{
		{name: "minimal", spec: minimalSpec, devWI: true},
		{name: "full", spec: fullSpec, extern: fullExternalAuth()},
		{name: "kms-without-backup", spec: with(func(s *csv1.ClusterSpec) { s.EtcdEncryptionBackupKeyId = "" })},
		{name: "kms-public-vault", spec: with(func(s *csv1.ClusterSpec) { s.EtcdEncryptionKeyVaultVisibility = "Public" })},
		{name: "platform-managed-etcd-key", spec: with(func(s *csv1.ClusterSpec) {
			s.EtcdEncryptionKeyId, s.EtcdEncryptionBackupKeyId, s.EtcdEncryptionKeyVaultVisibility = "", "", ""
		})},
		{name: "public-api-ingress-disabled", spec: with(func(s *csv1.ClusterSpec) { s.ApiVisibility, s.IngressVisibility = "Public", "Disabled" })},
		{name: "ingress-public-no-fips", spec: with(func(s *csv1.ClusterSpec) { s.IngressVisibility, s.CryptoRestrictions = "Public", "" })},
		{name: "zero-autoscaling", spec: with(func(s *csv1.ClusterSpec) {
			s.Autoscaling = &csv1.ClusterAutoscaling{MaxNodesTotal: i32(0), MaxPodGracePeriodSeconds: i32(0), MaxNodeProvisionTimeSeconds: i32(0), PodPriorityThreshold: i32(0)}
		})},
		{name: "paused-indefinitely", spec: with(func(s *csv1.ClusterSpec) { s.PausedUntil = "true" })},
		{name: "network-other", spec: with(func(s *csv1.ClusterSpec) { s.Network.NetworkType, s.Network.HostPrefix = "Other", 26 })},
		{name: "external-auth-minimal", spec: minimalSpec, devWI: true, extern: minimalExternalAuth()},
	}
}

func minimalExternalAuth() *csv1.ExternalAuthSpec {
	return &csv1.ExternalAuthSpec{
		Issuer:        &csv1.TokenIssuer{Url: "https://login.example.com/tenant/v2.0", Audiences: []string{"openshift"}},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "sub"}},
	}
}

func fullExternalAuth() *csv1.ExternalAuthSpec {
	return &csv1.ExternalAuthSpec{
		Issuer: &csv1.TokenIssuer{Url: "https://login.example.com/tenant/v2.0", Audiences: []string{"openshift", "console"},
			Ca: testCAPEM()},
		Clients: []*csv1.ExternalAuthClient{{ComponentName: "console", ComponentNamespace: "openshift-console", ClientId: "console",
			ExtraScopes: []string{"profile", "email"}, Type: "Confidential"}},
		ClaimMappings: &csv1.TokenClaimMappings{
			Username: &csv1.UsernameClaimMapping{Claim: "email", PrefixPolicy: "Prefix", Prefix: "sso:"},
			Groups:   &csv1.GroupsClaimMapping{Claim: "groups", Prefix: "sso:"},
		},
		ValidationRules: []*csv1.TokenClaimValidationRule{{Type: "RequiredClaim", RequiredClaim: "tid", RequiredValue: uuid(99)}},
	}
}

func nodePoolCases() map[string]*csv1.NodePoolSpec {
	return map[string]*csv1.NodePoolSpec{
		"replicas":      {Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}},
		"zero-replicas": {Replicas: 0, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskPersistence: "Ephemeral"}},
		"full": {VersionId: "4.19.7", ChannelGroup: "candidate", Replicas: 3, AutoRepair: true,
			Autoscaling:             &csv1.NodePoolAutoscaling{Min: 1, Max: 5},
			Labels:                  map[string]string{"tier": "web", "example.com/team": "a"},
			Taints:                  []*csv1.Taint{{Key: "dedicated", Value: "gpu", Effect: "NoSchedule"}, {Key: "a", Effect: "PreferNoSchedule"}, {Key: "b", Effect: "NoExecute"}},
			NodeDrainTimeoutMinutes: i32(15),
			Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3", OsDiskSizeGib: 128, OsDiskStorageAccountType: "StandardSSD_LRS",
				SubnetId:         "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
				AvailabilityZone: "2", EncryptionAtHost: true, OsDiskPersistence: "Persistent",
				OsDiskEncryptionSetId: "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.Compute/diskEncryptionSets/des"}},
		"autoscaling-drain-no-limit": {Autoscaling: &csv1.NodePoolAutoscaling{Min: 1, Max: 3}, NodeDrainTimeoutMinutes: i32(0),
			Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D4s_v3", OsDiskStorageAccountType: "Standard_LRS", AvailabilityZone: "3"}},
	}
}

func TestClusterServiceManifestsPassTheRealCRDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	mc := mgmtclustertest.Start(ctx, t, "dryrun")
	dyn, err := dynamic.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(mc.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cfg := manifests.Config{Env: "dry", DevWorkloadIdentityClientID: uuid(42)}

	var built []proto.Message // every spec the builder saw, for the coverage check
	for i, cc := range clusterCases() {
		t.Run(cc.name, func(t *testing.T) {
			spec := cc.spec()
			if cc.devWI {
				spec.Azure.WorkloadIdentities = nil
			}
			c := manifests.Cluster{ID: fmt.Sprintf("%032d", i+1), ARMResourceID: armCluster + clusterName(i), Spec: spec,
				EtcdEncryptionKey: []byte(strings.Repeat("k", 32)), SSHPublicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDryRunKey dryrun"}
			work, err := manifests.Build(cfg, c)
			if err != nil {
				t.Fatalf("build: %v", err)
			}
			built = append(built, spec)
			if cc.extern != nil {
				ea := &manifests.ExternalAuth{ARMResourceID: c.ARMResourceID + "/externalAuths/Entra", Spec: cc.extern}
				if work, err = manifests.WithExternalAuth(work, ea); err != nil {
					t.Fatalf("with external auth: %v", err)
				}
				built = append(built, cc.extern)
			}
			dryRun(ctx, t, kube, dyn, work)
			// Every node pool option against every cluster shape: a node pool's manifests
			// carry some of its cluster's spec (subnet, release, identities).
			for j, name := range sortedKeys(nodePoolCases()) {
				// As Cluster Service stores it: defaulted by its one default site.
				np := model.DefaultNodePool(nodePoolCases()[name], model.Cluster{Spec: c.Spec}, nil)
				t.Run("nodepool-"+name, func(t *testing.T) {
					w, err := manifests.BuildNodePool(cfg, manifests.NodePool{ID: fmt.Sprintf("%016d%016d", i+1, j+1), ARMResourceID: c.ARMResourceID + "/nodePools/" + name, Spec: np, Cluster: c})
					if err != nil {
						t.Fatalf("build node pool: %v", err)
					}
					built = append(built, np)
					dryRun(ctx, t, kube, dyn, w)
				})
			}
			// The break-glass works: a credential's CSR and approval, a revocation's request.
			t.Run("breakglass-credential", func(t *testing.T) {
				w, err := manifests.BuildCredential(cfg, manifests.CredentialWork{ID: fmt.Sprintf("cred%028d", i+1), Cluster: c,
					CSR: testCSRPEM(t), ExpirationSeconds: 3600})
				if err != nil {
					t.Fatalf("build credential: %v", err)
				}
				dryRun(ctx, t, kube, dyn, w)
			})
			t.Run("breakglass-revocation", func(t *testing.T) {
				w, err := manifests.BuildRevocation(cfg, manifests.RevocationWork{ID: fmt.Sprintf("revo%028d", i+1), Cluster: c})
				if err != nil {
					t.Fatalf("build revocation: %v", err)
				}
				dryRun(ctx, t, kube, dyn, w)
			})
		})
	}
	t.Run("every_field_is_exercised", func(t *testing.T) {
		set := map[protoreflect.FullName]bool{}
		for _, m := range built {
			markSet(m.ProtoReflect(), set)
		}
		var missing []string
		for _, m := range []proto.Message{&csv1.ClusterSpec{}, &csv1.NodePoolSpec{}, &csv1.ExternalAuthSpec{}} {
			for _, f := range allFields(m.ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}) {
				if !set[f] {
					missing = append(missing, string(f))
				}
			}
		}
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("no case sets these fields, so the manifests they produce are never checked against the CRDs; add them to a case: %s", strings.Join(missing, ", "))
		}
	})
}

// workNamespace stands for the management cluster's namespace in Maestro, where ManifestWorks live.
const workNamespace = "dry-mgmt"

// dryRun creates the work's namespace for real (a dry-run object needs an existing namespace)
// and every other manifest as a server-side dry run, then the ManifestWork itself against the
// ManifestWork CRD. Manifests the work only reads (update strategy ReadOnly) are skipped: the
// agent never writes them, HyperShift does.
func dryRun(ctx context.Context, t *testing.T, kube kubernetes.Interface, dyn dynamic.Interface, w *workv1.ManifestWork) {
	t.Helper()
	readOnly := map[string]bool{}
	for _, c := range w.Spec.ManifestConfigs {
		if c.UpdateStrategy != nil && c.UpdateStrategy.Type == workv1.UpdateStrategyTypeReadOnly {
			readOnly[c.ResourceIdentifier.Namespace+"/"+c.ResourceIdentifier.Name] = true
		}
	}
	var objs []*unstructured.Unstructured
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			t.Fatalf("manifest is not a Kubernetes object: %v", err)
		}
		if readOnly[u.GetNamespace()+"/"+u.GetName()] {
			continue
		}
		objs = append(objs, u)
	}
	raw, err := json.Marshal(w)
	if err != nil {
		t.Fatalf("encode ManifestWork: %v", err)
	}
	work := &unstructured.Unstructured{}
	if err := work.UnmarshalJSON(raw); err != nil {
		t.Fatalf("decode ManifestWork: %v", err)
	}
	work.SetNamespace(workNamespace)
	objs = append(objs, work)
	for _, u := range objs {
		if u.GetKind() != "Namespace" {
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create namespace %s: %v", u.GetName(), err)
		}
	}
	for _, u := range objs {
		if u.GetKind() == "Namespace" {
			continue
		}
		if u.GetNamespace() != "" {
			if _, err := kube.CoreV1().Namespaces().Get(ctx, u.GetNamespace(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetNamespace()}}
				if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					t.Fatalf("create namespace %s: %v", u.GetNamespace(), err)
				}
			}
		}
		gvk := u.GroupVersionKind()
		gvr, err := resourceOf(kube, gvk)
		if err != nil {
			t.Fatalf("%s: %v", gvk, err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(gvr)
		if u.GetNamespace() != "" {
			ri = dyn.Resource(gvr).Namespace(u.GetNamespace())
		}
		if _, err := ri.Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}); err != nil {
			t.Errorf("the apiserver refuses %s %s/%s: %v", gvk.Kind, u.GetNamespace(), u.GetName(), err)
		}
	}
}

func resourceOf(kube kubernetes.Interface, gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	list, err := kube.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return schema.GroupVersionResource{}, fmt.Errorf("discover %s: %w", gvk.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("the apiserver serves no resource of kind %s", gvk.Kind)
}

// markSet records every field set (to a non-default value, or present when it has presence)
// in m and its nested messages.
func markSet(m protoreflect.Message, set map[protoreflect.FullName]bool) {
	m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		set[f.FullName()] = true
		switch {
		case f.IsList() && f.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				markSet(v.List().Get(i).Message(), set)
			}
		case f.IsMap():
		case f.Message() != nil:
			markSet(v.Message(), set)
		}
		return true
	})
}

// allFields lists every field of d and of the messages it nests (maps count as one field).
func allFields(d protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) []protoreflect.FullName {
	if seen[d.FullName()] {
		return nil
	}
	seen[d.FullName()] = true
	var out []protoreflect.FullName
	for i := 0; i < d.Fields().Len(); i++ {
		f := d.Fields().Get(i)
		out = append(out, f.FullName())
		if f.Message() != nil && !f.IsMap() {
			out = append(out, allFields(f.Message(), seen)...)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// testCSRPEM returns a fresh certificate request in the shape the break-glass flow sends.
func testCSRPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{
		CommonName: manifests.BreakGlassUserPrefix + "dryrun", Organization: []string{manifests.BreakGlassGroup}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// testCAPEM returns a fresh self-signed CA certificate (an issuer's CA bundle in the external
// auth case).
func testCAPEM() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dryrun-ca"}, IsCA: true,
		BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
