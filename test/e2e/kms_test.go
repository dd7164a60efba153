package e2e

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
)

// TestKMSClusterProvisions creates a cluster with customer-managed etcd encryption through ARM:
// the management apiserver must accept its HostedCluster (HyperShift's CRD requires the KMS
// plugin's identity), and the create must reach Succeeded with the customer's key on it.
func TestKMSClusterProvisions(t *testing.T) {
	sub, rg := uuid.NewString(), "rg-kms"
	registerSubscription(t, sub)
	body := clusterBody(sub, rg)
	body["properties"].(map[string]any)["etcd"] = map[string]any{"dataEncryption": map[string]any{
		"keyManagementMode": "CustomerManaged",
		"customerManaged": map[string]any{"encryptionType": "KMS", "kms": map[string]any{
			"activeKey": map[string]any{"vaultName": "customer-vault", "name": "etcd-key", "version": "0123456789abcdef"},
		}},
	}}
	cs, mc := createCluster(t, clusterPath(sub, rg, "kms"), body)

	hcs := hostedClusters(t, mc, cs.GetId())
	if len(hcs) != 1 {
		t.Fatalf("%d HostedClusters for %s on %s, want 1", len(hcs), cs.GetId(), mc.Name)
	}
	hc := hcs[0]
	str := func(path ...string) string {
		v, _, _ := unstructured.NestedString(hc.Object, append([]string{"spec", "secretEncryption"}, path...)...)
		return v
	}
	want := map[string]string{
		"type":                                "kms",
		"kms.provider":                        "Azure",
		"kms.azure.activeKey.keyVaultName":    "customer-vault",
		"kms.azure.activeKey.keyName":         "etcd-key",
		"kms.azure.activeKey.keyVersion":      "0123456789abcdef",
		"kms.azure.kms.objectEncoding":        "utf-8",
		"kms.azure.kms.credentialsSecretName": manifests.KMSCredentialsSecretName(cs.GetId()),
	}
	for path, w := range want {
		if got := str(splitDots(path)...); got != w {
			t.Errorf("HostedCluster spec.secretEncryption.%s = %q, want %q", path, got, w)
		}
	}
	if got := condition(hc, "Available"); got != "True" {
		t.Errorf("HostedCluster Available = %q, want True", got)
	}
}

func splitDots(p string) []string { return strings.Split(p, ".") }
