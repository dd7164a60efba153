package manifests

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"
)

// Break-glass credentials (DESIGN §3.4). A credential's work holds the cluster-scoped
// CertificateSigningRequest, its CertificateSigningRequestApproval in the hosted control-plane
// namespace, and, read-only, the control plane's root CA ConfigMap; a revocation's work holds a
// CertificateRevocationRequest. Both are transient: the controller deletes them once the
// feedback said what it needed.
const (
	// LabelCredentialID and LabelRevocationID mark break-glass works and their objects.
	LabelCredentialID = "openhcp.io/credential-id"
	LabelRevocationID = "openhcp.io/revocation-id"

	credentialWorkNamePrefix = "breakglass-"
	revocationWorkNamePrefix = "revocation-"

	// CustomerBreakGlassSignerClass is HyperShift's signer class for customer credentials;
	// SREBreakGlassSignerClass its separate class for SRE credentials. Each has its own signer
	// (and its own revocation), both trusted by the hosted kube-apiserver's client CA bundle.
	CustomerBreakGlassSignerClass = "customer-break-glass"
	SREBreakGlassSignerClass      = "sre-break-glass"
	// BreakGlassUserPrefix is the common-name prefix HyperShift's signer requires.
	BreakGlassUserPrefix = "system:customer-break-glass:"
	// BreakGlassGroup is the group the certificate asks for (cluster-admin on OpenShift).
	BreakGlassGroup = "system:masters"
	// RootCAConfigMap is the hosted control plane's root CA (it signs the kube-apiserver's serving
	// certificate), key "ca.crt"; HyperShift keeps a ConfigMap of that name in the control-plane
	// namespace.
	RootCAConfigMap = "root-ca"
	// RootCAKey is the ConfigMap key of the PEM bundle.
	RootCAKey = "ca.crt"

	// Feedback value names.
	FeedbackCertificate = "certificate"
	FeedbackData        = "data"
)

// CredentialWorkName is the ManifestWork name of a credential.
func CredentialWorkName(id string) string { return credentialWorkNamePrefix + id }

// RevocationWorkName is the ManifestWork name of a revocation.
func RevocationWorkName(id string) string { return revocationWorkNamePrefix + id }

// CredentialIDFromWorkName reverses CredentialWorkName; ok is false for other works.
func CredentialIDFromWorkName(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, credentialWorkNamePrefix)
	return id, ok && id != ""
}

// RevocationIDFromWorkName reverses RevocationWorkName; ok is false for other works.
func RevocationIDFromWorkName(name string) (string, bool) {
	id, ok := strings.CutPrefix(name, revocationWorkNamePrefix)
	return id, ok && id != ""
}

// ControlPlaneNamespace is where HyperShift runs a hosted cluster's control plane:
// <HostedCluster namespace>-<HostedCluster name>.
func ControlPlaneNamespace(env, clusterID, armResourceID string) string {
	return Namespace(env, clusterID) + "-" + HostedClusterName(env, armResourceID)
}

// BreakGlassSignerName is HyperShift's signerName of the break-glass signer of class (empty:
// the customer's) of the control plane in hcpNamespace.
func BreakGlassSignerName(hcpNamespace, class string) string {
	return "hypershift.openshift.io/" + hcpNamespace + "." + orCustomer(class)
}

func orCustomer(class string) string {
	if class == "" {
		return CustomerBreakGlassSignerClass
	}
	return class
}

// SignerClass is the signer class of a customer's (sre false) or an SRE's credential.
func SignerClass(sre bool) string {
	if sre {
		return SREBreakGlassSignerClass
	}
	return CustomerBreakGlassSignerClass
}

// CSRName is the name of a credential's CertificateSigningRequest and its approval.
func CSRName(credentialID string) string { return "openhcp-break-glass-" + credentialID }

// CRRName is the name of a revocation's CertificateRevocationRequest.
func CRRName(revocationID string) string { return "openhcp-revoke-" + revocationID }

// CredentialWork is what a credential's build needs.
type CredentialWork struct {
	ID      string
	Cluster Cluster
	// CSR is the PEM certificate request.
	CSR []byte
	// ExpirationSeconds is asked of the signer (spec.expirationSeconds, at least 600).
	ExpirationSeconds int32
	// SignerClass is the signer that signs it (SignerClass); empty: the customer's.
	SignerClass string
}

// BuildCredential returns the ManifestWork of one break-glass credential.
func BuildCredential(cfg Config, cw CredentialWork) (*workv1.ManifestWork, error) {
	cfg = cfg.withDefaults()
	if len(cw.CSR) == 0 || cw.Cluster.ARMResourceID == "" {
		return nil, errors.New("build credential manifests: no CSR or no cluster")
	}
	if cw.ExpirationSeconds < 600 {
		return nil, fmt.Errorf("build credential manifests: expiration %ds is below the 600s Kubernetes allows", cw.ExpirationSeconds)
	}
	hcpNS := ControlPlaneNamespace(cfg.Env, cw.Cluster.ID, cw.Cluster.ARMResourceID)
	labels := map[string]string{LabelClusterID: cw.Cluster.ID, LabelCredentialID: cw.ID}
	name := CSRName(cw.ID)
	exp := cw.ExpirationSeconds
	csr := &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: certificatesv1.SchemeGroupVersion.String(), Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           cw.CSR,
			SignerName:        BreakGlassSignerName(hcpNS, cw.SignerClass),
			ExpirationSeconds: &exp,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
	approval := &certificatesv1alpha1.CertificateSigningRequestApproval{
		TypeMeta:   metav1.TypeMeta{APIVersion: certificatesv1alpha1.SchemeGroupVersion.String(), Kind: "CertificateSigningRequestApproval"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: hcpNS, Labels: labels},
	}
	rootCA := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: RootCAConfigMap, Namespace: hcpNS},
	}
	ssa := &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
		ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager}}
	configs := []workv1.ManifestConfigOption{
		{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: certificatesv1.GroupName, Resource: "certificatesigningrequests", Name: name},
			UpdateStrategy:     ssa,
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: FeedbackCertificate, Path: ".status.certificate"},
				{Name: FeedbackConditions, Path: ".status.conditions"},
			}}},
		},
		{
			ResourceIdentifier: workv1.ResourceIdentifier{Group: certificatesv1alpha1.SchemeGroupVersion.Group, Resource: "certificatesigningrequestapprovals",
				Name: name, Namespace: hcpNS},
			UpdateStrategy: ssa,
		},
		{
			// Read-only: the agent never writes or deletes it, it only reports its data.
			ResourceIdentifier: workv1.ResourceIdentifier{Resource: "configmaps", Name: RootCAConfigMap, Namespace: hcpNS},
			UpdateStrategy:     &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly},
			FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
				{Name: FeedbackData, Path: ".data"},
			}}},
		},
	}
	return transientWork(CredentialWorkName(cw.ID), labels, configs, csr, approval, rootCA)
}

// RevocationWork is what a revocation's build needs.
type RevocationWork struct {
	ID      string
	Cluster Cluster
	// SignerClass is the signer to rotate (SignerClass); empty: the customer's.
	SignerClass string
}

// BuildRevocation returns the ManifestWork of one revocation: a CertificateRevocationRequest
// for one break-glass signer class in the control-plane namespace.
func BuildRevocation(cfg Config, rw RevocationWork) (*workv1.ManifestWork, error) {
	cfg = cfg.withDefaults()
	if rw.Cluster.ARMResourceID == "" {
		return nil, errors.New("build revocation manifests: no cluster")
	}
	hcpNS := ControlPlaneNamespace(cfg.Env, rw.Cluster.ID, rw.Cluster.ARMResourceID)
	labels := map[string]string{LabelClusterID: rw.Cluster.ID, LabelRevocationID: rw.ID}
	crr := &certificatesv1alpha1.CertificateRevocationRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: certificatesv1alpha1.SchemeGroupVersion.String(), Kind: "CertificateRevocationRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: CRRName(rw.ID), Namespace: hcpNS, Labels: labels},
		Spec:       certificatesv1alpha1.CertificateRevocationRequestSpec{SignerClass: orCustomer(rw.SignerClass)},
	}
	configs := []workv1.ManifestConfigOption{{
		ResourceIdentifier: workv1.ResourceIdentifier{Group: certificatesv1alpha1.SchemeGroupVersion.Group, Resource: "certificaterevocationrequests",
			Name: crr.Name, Namespace: hcpNS},
		UpdateStrategy: &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply,
			ServerSideApply: &workv1.ServerSideApplyConfig{Force: true, FieldManager: FieldManager}},
		FeedbackRules: []workv1.FeedbackRule{{Type: workv1.JSONPathsType, JsonPaths: []workv1.JsonPath{
			{Name: FeedbackConditions, Path: ".status.conditions"},
		}}},
	}}
	return transientWork(RevocationWorkName(rw.ID), labels, configs, crr)
}

func transientWork(name string, labels map[string]string, configs []workv1.ManifestConfigOption, objs ...runtime.Object) (*workv1.ManifestWork, error) {
	work := &workv1.ManifestWork{
		TypeMeta:   metav1.TypeMeta{APIVersion: "work.open-cluster-management.io/v1", Kind: "ManifestWork"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: workv1.ManifestWorkSpec{
			DeleteOption:    &workv1.DeleteOption{PropagationPolicy: workv1.DeletePropagationPolicyTypeForeground},
			ManifestConfigs: configs,
		},
	}
	for _, o := range objs {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encode manifest of work %s: %w", name, err)
		}
		work.Spec.Workload.Manifests = append(work.Spec.Workload.Manifests, workv1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	hash, err := SpecHash(work)
	if err != nil {
		return nil, err
	}
	work.Annotations = map[string]string{AnnotationSpecHash: hash}
	return work, nil
}

// CredentialFeedback is what a credential's work reported.
type CredentialFeedback struct {
	// Certificate is the PEM the signer issued (empty until signed).
	Certificate []byte
	// Conditions of the CSR (Approved, Denied, Failed).
	Conditions []certificatesv1.CertificateSigningRequestCondition
	// RootCA is the control plane's root CA bundle (PEM), empty until reported.
	RootCA string
}

// ParseCredentialFeedback reads a credential work's feedback.
func ParseCredentialFeedback(w *workv1.ManifestWork) (CredentialFeedback, error) {
	var fb CredentialFeedback
	if w == nil {
		return fb, nil
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		for _, v := range m.StatusFeedbacks.Values {
			switch {
			case m.ResourceMeta.Resource == "certificatesigningrequests" && v.Name == FeedbackCertificate:
				s, err := feedbackString(v.Value)
				if err != nil || s == "" {
					if err != nil {
						return fb, fmt.Errorf("decode feedback %q of work %s: %w", v.Name, w.Name, err)
					}
					continue
				}
				// status.certificate is []byte in the API, so base64 in JSON.
				pem, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return fb, fmt.Errorf("decode certificate of work %s: %w", w.Name, err)
				}
				fb.Certificate = pem
			case m.ResourceMeta.Resource == "certificatesigningrequests" && v.Name == FeedbackConditions && v.Value.JsonRaw != nil:
				if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &fb.Conditions); err != nil {
					return fb, fmt.Errorf("decode CSR conditions of work %s: %w", w.Name, err)
				}
			case m.ResourceMeta.Resource == "configmaps" && v.Name == FeedbackData && v.Value.JsonRaw != nil:
				var data map[string]string
				if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &data); err != nil {
					return fb, fmt.Errorf("decode root CA of work %s: %w", w.Name, err)
				}
				fb.RootCA = data[RootCAKey]
			}
		}
	}
	return fb, nil
}

// ParseRevocationFeedback reads the CertificateRevocationRequest's conditions from its work.
func ParseRevocationFeedback(w *workv1.ManifestWork) ([]metav1.Condition, error) {
	if w == nil {
		return nil, nil
	}
	for _, m := range w.Status.ResourceStatus.Manifests {
		for _, v := range m.StatusFeedbacks.Values {
			if v.Name == FeedbackConditions && v.Value.JsonRaw != nil {
				var conds []metav1.Condition
				if err := json.Unmarshal([]byte(*v.Value.JsonRaw), &conds); err != nil {
					return nil, fmt.Errorf("decode revocation conditions of work %s: %w", w.Name, err)
				}
				return conds, nil
			}
		}
	}
	return nil, nil
}

func feedbackString(v workv1.FieldValue) (string, error) {
	switch {
	case v.String != nil:
		return *v.String, nil
	case v.JsonRaw != nil:
		var s string
		err := json.Unmarshal([]byte(*v.JsonRaw), &s)
		return s, err
	}
	return "", nil
}
