package manifests

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	workv1 "open-cluster-management.io/api/work/v1"
)

const testARMID = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/MyCluster"

func TestBuildCredential(t *testing.T) {
	cl := Cluster{ID: "c1", ARMResourceID: testARMID}
	for _, tc := range []struct {
		name    string
		in      CredentialWork
		wantErr bool
	}{
		{"valid", CredentialWork{ID: "k1", Cluster: cl, CSR: []byte("pem"), ExpirationSeconds: 3600}, false},
		{"below_kubernetes_minimum", CredentialWork{ID: "k1", Cluster: cl, CSR: []byte("pem"), ExpirationSeconds: 599}, true},
		{"no_csr", CredentialWork{ID: "k1", Cluster: cl, ExpirationSeconds: 3600}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := BuildCredential(Config{}, tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatal("built")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Name != "breakglass-k1" || len(w.Spec.Workload.Manifests) != 3 || len(w.Spec.ManifestConfigs) != 3 {
				t.Fatalf("work = %s with %d manifests", w.Name, len(w.Spec.Workload.Manifests))
			}
			var csr certificatesv1.CertificateSigningRequest
			if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &csr); err != nil {
				t.Fatal(err)
			}
			// HyperShift's signer name for the control plane in <ns>-<name>.
			if want := "hypershift.openshift.io/ocm-dev-c1-mycluster.customer-break-glass"; csr.Spec.SignerName != want {
				t.Fatalf("signerName = %q, want %q", csr.Spec.SignerName, want)
			}
			if *csr.Spec.ExpirationSeconds != 3600 || csr.Spec.Usages[0] != certificatesv1.UsageClientAuth {
				t.Fatalf("spec = %+v", csr.Spec)
			}
			if w.Spec.ManifestConfigs[2].UpdateStrategy.Type != workv1.UpdateStrategyTypeReadOnly || w.Spec.ManifestConfigs[1].ResourceIdentifier.Namespace != "ocm-dev-c1-mycluster" {
				t.Fatalf("configs = %+v", w.Spec.ManifestConfigs)
			}
			again, _ := BuildCredential(Config{}, tc.in)
			if again.Annotations[AnnotationSpecHash] != w.Annotations[AnnotationSpecHash] {
				t.Fatal("two builds of the same credential differ")
			}
		})
	}
}

func TestParseCredentialFeedback(t *testing.T) {
	cert := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\n"))
	conds := `[{"type":"Approved","status":"True","reason":"ApprovalPresent"}]`
	data := `{"ca.crt":"ROOT"}`
	w := &workv1.ManifestWork{}
	w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{
		{ResourceMeta: workv1.ManifestResourceMeta{Resource: "certificatesigningrequests"}, StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: FeedbackCertificate, Value: workv1.FieldValue{Type: workv1.String, String: &cert}},
			{Name: FeedbackConditions, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &conds}},
		}}},
		{ResourceMeta: workv1.ManifestResourceMeta{Resource: "configmaps"}, StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{
			{Name: FeedbackData, Value: workv1.FieldValue{Type: workv1.JsonRaw, JsonRaw: &data}},
		}}},
	}
	fb, err := ParseCredentialFeedback(w)
	if err != nil {
		t.Fatal(err)
	}
	if string(fb.Certificate) != "-----BEGIN CERTIFICATE-----\n" || fb.RootCA != "ROOT" || len(fb.Conditions) != 1 || fb.Conditions[0].Reason != "ApprovalPresent" {
		t.Fatalf("feedback = %+v", fb)
	}
	if fb, err := ParseCredentialFeedback(nil); err != nil || fb.Certificate != nil {
		t.Fatalf("no work: %+v %v", fb, err)
	}
	bad := "not base64!"
	w.Status.ResourceStatus.Manifests[0].StatusFeedbacks.Values[0].Value.String = &bad
	if _, err := ParseCredentialFeedback(w); err == nil {
		t.Fatal("a certificate that is not base64 parsed")
	}
}

func TestBuildRevocation(t *testing.T) {
	w, err := BuildRevocation(Config{Env: "prod"}, RevocationWork{ID: "r1", Cluster: Cluster{ID: "c1", ARMResourceID: testARMID}})
	if err != nil {
		t.Fatal(err)
	}
	var crr map[string]any
	if err := json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &crr); err != nil {
		t.Fatal(err)
	}
	md, spec := crr["metadata"].(map[string]any), crr["spec"].(map[string]any)
	if w.Name != "revocation-r1" || md["namespace"] != "ocm-prod-c1-mycluster" || spec["signerClass"] != "customer-break-glass" ||
		crr["apiVersion"] != "certificates.hypershift.openshift.io/v1alpha1" {
		t.Fatalf("CRR = %v", crr)
	}
	if id, ok := RevocationIDFromWorkName(w.Name); !ok || id != "r1" {
		t.Fatal("work name does not map back")
	}
	if _, ok := CredentialIDFromWorkName(w.Name); ok {
		t.Fatal("a revocation work maps to a credential")
	}
}
