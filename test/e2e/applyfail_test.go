package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRefusedManifestFailsTheOperation installs, on every management cluster, a
// ValidatingAdmissionPolicy that denies one HostedCluster by name, and creates that cluster
// through ARM: the agent cannot apply it, Cluster Service reports the cluster ERROR with the
// apiserver's reason, and the ARM operation ends Failed within 30 seconds with a message that
// carries it — not an hour of Provisioning.
func TestRefusedManifestFailsTheOperation(t *testing.T) {
	const name = "refused-by-policy"
	const reason = "clusters named refused-by-policy are not allowed on this management cluster"
	ctx := context.Background()
	for _, mc := range region.Info.ManagementClusters {
		cfg, err := clientcmd.BuildConfigFromFlags("", mc.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		k, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		deny := admissionv1.Deny
		fail := admissionv1.Fail
		policy := &admissionv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-" + name},
			Spec: admissionv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: &fail,
				MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionv1.RuleWithOperations{
						Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
						Rule:       admissionv1.Rule{APIGroups: []string{"hypershift.openshift.io"}, APIVersions: []string{"*"}, Resources: []string{"hostedclusters"}},
					},
				}}},
				Validations: []admissionv1.Validation{{Expression: "object.metadata.name != '" + name + "'", Message: reason}},
			},
		}
		binding := &admissionv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-deny-" + name},
			Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name, ValidationActions: []admissionv1.ValidationAction{deny}},
		}
		if _, err := k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("policy on %s: %v", mc.Name, err)
		}
		if _, err := k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("binding on %s: %v", mc.Name, err)
		}
		t.Cleanup(func() {
			_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
			_ = k.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, policy.Name, metav1.DeleteOptions{})
		})
	}
	// The apiserver's admission plugin learns of a new policy through its informers, within a
	// second; give it a few (a dry run cannot prove it: schema validation runs first and an
	// object complete enough to pass it would be a whole HostedCluster).
	time.Sleep(3 * time.Second)

	sub, rg := uuid.NewString(), "rg-refused"
	registerSubscription(t, sub)
	path := clusterPath(sub, rg, name)
	put := arm(t, http.MethodPut, path, clusterBody(sub, rg))
	if put.Status != http.StatusCreated {
		t.Fatalf("PUT cluster: got %d, want 201: %s", put.Status, put.Raw)
	}
	t.Cleanup(func() {
		if del := arm(t, http.MethodDelete, path, nil); del.Status == http.StatusAccepted {
			waitOperation(t, del.Header.Get("Azure-AsyncOperation"), 5*time.Minute)
		}
	})
	start := time.Now()
	final := waitOperation(t, put.Header.Get("Azure-AsyncOperation"), 30*time.Second)
	if final["status"] != "Failed" {
		t.Fatalf("operation ended %v, want Failed: %v", final["status"], final["error"])
	}
	e, _ := final["error"].(map[string]any)
	msg, _ := e["message"].(string)
	if e["code"] != "ManifestRejected" || !strings.Contains(msg, reason) {
		t.Errorf("operation error %v, want code ManifestRejected and the apiserver's reason %q", e, reason)
	}
	t.Logf("Failed %s after the PUT: %s", time.Since(start).Round(100*time.Millisecond), msg)
	if got := arm(t, http.MethodGet, path, nil); got.Body["properties"].(map[string]any)["provisioningState"] != "Failed" {
		t.Errorf("GET provisioningState = %v, want Failed", got.Body["properties"].(map[string]any)["provisioningState"])
	}
}
