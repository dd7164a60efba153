package hypershiftsim

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Break-glass PKI of a hosted control plane, as HyperShift's control-plane-pki-operator keeps it
// in the control-plane namespace <namespace>-<name>. The sim creates that namespace (HyperShift's
// operator does) with only what break-glass needs in it.
const (
	// CustomerSignerSecret holds the customer break-glass signer (tls.crt, tls.key);
	// SRESignerSecret the SRE break-glass signer, a separate CA.
	CustomerSignerSecret = "customer-system-admin-signer"
	SRESignerSecret      = "sre-system-admin-signer"
	// RootCASecret / RootCAConfigMap: the root CA that signs the hosted kube-apiserver's serving
	// certificate; the ConfigMap holds only ca.crt.
	RootCASecret    = "root-ca"
	RootCAConfigMap = "root-ca"
	// ClientCABundleConfigMap is the kube-apiserver's client CA bundle (ca.crt): a client
	// certificate is accepted exactly when it chains to a certificate in it.
	ClientCABundleConfigMap = "total-client-ca"
	// CABundleKey is the key of PEM bundles in those ConfigMaps.
	CABundleKey = "ca.crt"

	// CustomerBreakGlassSignerClass, SREBreakGlassSignerClass and the signer-name form are
	// HyperShift's.
	CustomerBreakGlassSignerClass = "customer-break-glass"
	SREBreakGlassSignerClass      = "sre-break-glass"

	// FailBreakGlassAnnotation on a HostedCluster makes its signer refuse every CSR (Failed,
	// reason SimulatedFailure, the annotation's value as message) and keeps every revocation from
	// completing.
	FailBreakGlassAnnotation = "hypershift-sim.openhcp.io/fail-break-glass"

	// hostedClusterAnnotation on the control-plane namespace names its HostedCluster.
	hostedClusterAnnotation = "hypershift-sim.openhcp.io/hosted-cluster"

	// Reasons HyperShift uses on CSRs.
	reasonApprovalPresent         = "ApprovalPresent"
	reasonSignerValidationFailure = "SignerValidationFailure"
)

// BreakGlassOptions tunes the break-glass signer; the zero value signs and revokes at once.
type BreakGlassOptions struct {
	// SignDelay is the time from a CSR's approval to its certificate.
	SignDelay time.Duration
	// RevokeDelay is how long a revocation keeps trusting the previous signer next to the new
	// one (NewCertificatesTrusted) before PreviousCertificatesRevoked.
	RevokeDelay time.Duration
}

var breakGlassEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hypershift_sim_break_glass_total",
	Help: "Break-glass events written by the sim, by event (approved, signed, refused, rotated, revoked).",
}, []string{"event"})

func init() { ctrlmetrics.Registry.MustRegister(breakGlassEvents) }

// signerClass is one break-glass signer of a control plane: the Secret holding it and the
// common-name prefix it signs.
type signerClass struct {
	secret, userPrefix string
}

// signerClasses are the break-glass signers, each its own CA, each rotated by its own
// CertificateRevocationRequest; the client CA bundle trusts all of them.
var signerClasses = map[string]signerClass{
	CustomerBreakGlassSignerClass: {secret: CustomerSignerSecret, userPrefix: "system:customer-break-glass:"},
	SREBreakGlassSignerClass:      {secret: SRESignerSecret, userPrefix: "system:sre-break-glass:"},
}

// classNames lists signerClasses in a fixed order (the client CA bundle's).
var classNames = []string{CustomerBreakGlassSignerClass, SREBreakGlassSignerClass}

// ControlPlaneNamespace is HyperShift's control-plane namespace of a HostedCluster.
func ControlPlaneNamespace(hc types.NamespacedName) string { return hc.Namespace + "-" + hc.Name }

// SignerName is the customer break-glass signerName of a control-plane namespace.
func SignerName(hcpNamespace string) string {
	return SignerNameOf(hcpNamespace, CustomerBreakGlassSignerClass)
}

// SignerNameOf is the signerName of a break-glass signer class of a control-plane namespace.
func SignerNameOf(hcpNamespace, class string) string {
	return "hypershift.openshift.io/" + hcpNamespace + "." + class
}

// setupBreakGlass registers the break-glass controllers: the control plane's PKI per
// HostedCluster, the CSR signer and the revocation.
func setupBreakGlass(mgr ctrl.Manager, o Options, hosted *hostedAPIServers) error {
	pki := &breakGlassPKIReconciler{Client: mgr.GetClient()}
	if err := ctrl.NewControllerManagedBy(mgr).Named("breakglass-pki").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&hyperv1.HostedCluster{}, builder.WithPredicates(pkiEvents())).
		Complete(pki); err != nil {
		return fmt.Errorf("set up break-glass PKI controller: %w", err)
	}
	signer := &csrSigner{Client: mgr.GetClient(), Options: o}
	if err := ctrl.NewControllerManagedBy(mgr).Named("breakglass-csr").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&certificatesv1.CertificateSigningRequest{}).
		// An approval wakes the CSR of the same name.
		Watches(&certificatesv1alpha1.CertificateSigningRequestApproval{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
			})).
		Complete(signer); err != nil {
		return fmt.Errorf("set up break-glass CSR controller: %w", err)
	}
	revoker := &revocationReconciler{Client: mgr.GetClient(), Options: o, hosted: hosted}
	if err := ctrl.NewControllerManagedBy(mgr).Named("breakglass-revocation").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&certificatesv1alpha1.CertificateRevocationRequest{}).
		Complete(revoker); err != nil {
		return fmt.Errorf("set up break-glass revocation controller: %w", err)
	}
	return nil
}

// pkiEvents passes the HostedCluster events the PKI depends on: its creation (and every
// HostedCluster when the sim starts, which replays them as creations), the setting of its
// deletionTimestamp, its removal, and the informer's periodic resync (an update that changes
// nothing). Status and spec writes do not change the PKI, and letting them through cost the
// management kube-apiserver about nine refused creates per cluster (docs/perf-data/run-log-2026-11.md, "What
// a management kube-apiserver serves"). A namespace or ConfigMap removed by hand is therefore
// put back when the sim restarts or at the manager's resync (hours), not at once.
func pkiEvents() predicate.Predicate {
	return predicate.Or(deletionPredicate(), predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetResourceVersion() == e.ObjectNew.GetResourceVersion()
		},
	})
}

// breakGlassPKIReconciler keeps a HostedCluster's control-plane namespace with its root CA, its
// customer break-glass signer and the client CA bundle, and removes the namespace with the
// HostedCluster.
type breakGlassPKIReconciler struct {
	Client client.Client
}

func (r *breakGlassPKIReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	hcpNS := ControlPlaneNamespace(req.NamespacedName)
	hc := &hyperv1.HostedCluster{}
	err := r.Client.Get(ctx, req.NamespacedName, hc)
	if apierrors.IsNotFound(err) || (err == nil && hc.DeletionTimestamp != nil) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hcpNS}}
		if err := r.Client.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, fmt.Errorf("delete control-plane namespace %s: %w", hcpNS, err)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hcpNS,
		Labels:      map[string]string{"hypershift.openshift.io/hosted-control-plane": "true"},
		Annotations: map[string]string{hostedClusterAnnotation: req.String()}}}
	if err := r.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("create control-plane namespace %s: %w", hcpNS, err)
	}
	// The key stays in the Secret: the hosted kube-apiserver's serving certificate is signed
	// with it (hostedapi.go).
	rootCert, _, err := r.ensureCA(ctx, hcpNS, RootCASecret, "ca.crt", "ca.key", "root-ca."+hcpNS)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := createConfigMap(ctx, r.Client, hcpNS, RootCAConfigMap, rootCert); err != nil {
		return reconcile.Result{}, err
	}
	var bundle []byte
	for _, class := range classNames {
		signerCert, _, err := r.ensureCA(ctx, hcpNS, signerClasses[class].secret, corev1.TLSCertKey, corev1.TLSPrivateKeyKey, class+"."+hcpNS)
		if err != nil {
			return reconcile.Result{}, err
		}
		bundle = append(bundle, signerCert...)
	}
	// Created once; from then on only a revocation changes what the API server trusts.
	if err := createConfigMap(ctx, r.Client, hcpNS, ClientCABundleConfigMap, bundle); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// ensureCA returns the CA kept in a Secret, creating it first if needed.
func (r *breakGlassPKIReconciler) ensureCA(ctx context.Context, ns, name, certKey, keyKey, cn string) (certPEM, keyPEM []byte, err error) {
	s := &corev1.Secret{}
	err = r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, s)
	if err == nil {
		return s.Data[certKey], s.Data[keyKey], nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, nil, fmt.Errorf("get secret %s/%s: %w", ns, name, err)
	}
	certPEM, keyPEM, err = newCA(cn, time.Now())
	if err != nil {
		return nil, nil, err
	}
	s = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{certKey: certPEM, keyKey: keyPEM}}
	if certKey == corev1.TLSCertKey {
		s.Type = corev1.SecretTypeTLS
	}
	if err := r.Client.Create(ctx, s); err != nil {
		if apierrors.IsAlreadyExists(err) {
			// Another reconcile won; use its CA.
			return r.ensureCA(ctx, ns, name, certKey, keyKey, cn)
		}
		return nil, nil, fmt.Errorf("create secret %s/%s: %w", ns, name, err)
	}
	return certPEM, keyPEM, nil
}

func createConfigMap(ctx context.Context, c client.Client, ns, name string, bundle []byte) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{CABundleKey: string(bundle)}}
	if err := c.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create configmap %s/%s: %w", ns, name, err)
	}
	return nil
}

// caValidity: the sim's CAs outlive any test; HyperShift's signers are rotated yearly.
const caValidity = 365 * 24 * time.Hour

func newCA(cn string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn, OrganizationalUnit: []string{"openshift"}},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(caValidity),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create CA %s: %w", cn, err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), nil
}

func parseCA(certPEM, keyPEM []byte) (*x509.Certificate, any, error) {
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("signer secret does not hold a PEM certificate and key")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse signer certificate: %w", err)
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse signer key: %w", err)
	}
	return cert, key, nil
}

// sameCert compares two PEM certificates by content.
func sameCert(a, b []byte) bool { return bytes.Equal(bytes.TrimSpace(a), bytes.TrimSpace(b)) }
