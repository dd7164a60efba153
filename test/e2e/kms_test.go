package e2e

import (
	"net/http"
	"strings"
	"testing"
	"time"

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
	url := clusterPath(sub, rg, "kms")
	cs, mc := createCluster(t, url, body)

	// check compares the HostedCluster's spec.secretEncryption with want (dotted paths).
	check := func(t *testing.T, want map[string]string) {
		t.Helper()
		hcs := hostedClusters(t, mc, cs.GetId())
		if len(hcs) != 1 {
			t.Fatalf("%d HostedClusters for %s on %s, want 1", len(hcs), cs.GetId(), mc.Name)
		}
		hc := hcs[0]
		for path, w := range want {
			got, _, _ := unstructured.NestedString(hc.Object, append([]string{"spec", "secretEncryption"}, splitDots(path)...)...)
			if got != w {
				t.Errorf("HostedCluster spec.secretEncryption.%s = %q, want %q", path, got, w)
			}
		}
		if got := condition(hc, "Available"); got != "True" {
			t.Errorf("HostedCluster Available = %q, want True", got)
		}
	}
	identity := map[string]string{
		"type":                                "kms",
		"kms.provider":                        "Azure",
		"kms.azure.activeKey.keyVaultName":    "customer-vault",
		"kms.azure.activeKey.keyName":         "etcd-key",
		"kms.azure.kms.objectEncoding":        "utf-8",
		"kms.azure.kms.credentialsSecretName": manifests.KMSCredentialsSecretName(cs.GetId()),
		// The platform key stays as the AES-CBC backup, so secrets written before stay readable.
		"aescbc.activeKey.name": manifests.EtcdEncryptionSecretName(manifests.HostedClusterName("dev", url)), // "dev": the e2e region's environment
	}
	with := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range identity {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	t.Run("create_puts_the_customer_key_and_the_kms_identity_on_the_hosted_cluster", func(t *testing.T) {
		check(t, with(map[string]string{"kms.azure.activeKey.keyVersion": "0123456789abcdef", "kms.azure.backupKey.keyVersion": ""}))
	})

	// A key rotation sends the HostedCluster again, now with a backup key: the management
	// apiserver must accept that shape too. The key version is updatable from
	// 2025-12-23-preview on, through a PUT (the PATCH body has no etcd).
	t.Run("rotating_the_key_version_succeeds_and_keeps_the_old_one_as_backup", func(t *testing.T) {
		const ver = "?api-version=2025-12-23-preview"
		got := arm(t, http.MethodGet, url+ver, nil)
		if got.Status != http.StatusOK {
			t.Fatalf("GET: %d %s", got.Status, got.Raw)
		}
		key, ok := got.Body["properties"].(map[string]any)["etcd"].(map[string]any)["dataEncryption"].(map[string]any)["customerManaged"].(map[string]any)["kms"].(map[string]any)["activeKey"].(map[string]any)
		if !ok {
			t.Fatalf("GET has no etcd.dataEncryption.customerManaged.kms.activeKey: %s", got.Raw)
		}
		key["version"] = "fedcba9876543210"
		r := arm(t, http.MethodPut, url+ver, got.Body)
		if r.Status != http.StatusOK {
			t.Fatalf("PUT: %d %s", r.Status, r.Raw)
		}
		if final := waitOperation(t, r.Header.Get("Azure-AsyncOperation"), 3*time.Minute); final["status"] != "Succeeded" {
			t.Fatalf("key rotation ended %v: %v", final["status"], final["error"])
		}
		check(t, with(map[string]string{
			"kms.azure.activeKey.keyVersion":   "fedcba9876543210",
			"kms.azure.backupKey.keyVaultName": "customer-vault",
			"kms.azure.backupKey.keyName":      "etcd-key",
			"kms.azure.backupKey.keyVersion":   "0123456789abcdef",
		}))
	})
}

func splitDots(p string) []string { return strings.Split(p, ".") }
