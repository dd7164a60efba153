package hypershiftsim

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// csrSigner plays the control-plane-pki-operator's approver and signer for the break-glass
// signers: a CSR for hypershift.openshift.io/<hcp-namespace>.<class> (customer-break-glass or
// sre-break-glass) is approved when a CertificateSigningRequestApproval of the same name exists
// in that namespace, then validated and signed with that class's signer Secret.
type csrSigner struct {
	Client  client.Client
	Options Options
}

// hcpNamespaceOfSigner returns the control-plane namespace and signer class of a break-glass
// signerName.
func hcpNamespaceOfSigner(signerName string) (ns, class string, ok bool) {
	rest, ok := strings.CutPrefix(signerName, "hypershift.openshift.io/")
	if !ok {
		return "", "", false
	}
	for _, class := range classNames {
		if ns, ok := strings.CutSuffix(rest, "."+class); ok && ns != "" {
			return ns, class, true
		}
	}
	return "", "", false
}

func (r *csrSigner) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	hcpNS, class, ok := hcpNamespaceOfSigner(csr.Spec.SignerName)
	if !ok || len(csr.Status.Certificate) > 0 || csrCondition(csr, certificatesv1.CertificateFailed) != nil ||
		csrCondition(csr, certificatesv1.CertificateDenied) != nil {
		return reconcile.Result{}, nil
	}
	now := r.Options.now()
	approved := csrCondition(csr, certificatesv1.CertificateApproved)
	if approved == nil {
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: csr.Name}, &certificatesv1alpha1.CertificateSigningRequestApproval{})
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil // the approval's watch brings us back
		}
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("get approval %s/%s: %w", hcpNS, csr.Name, err)
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: reasonApprovalPresent,
			Message: "The CertificateSigningRequestApproval is present.", LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
		if err := r.Client.SubResource("approval").Update(ctx, csr); err != nil {
			return bgRetry(fmt.Errorf("approve CSR %s: %w", csr.Name, err))
		}
		breakGlassEvents.WithLabelValues("approved").Inc()
		log.Info("break-glass CSR approved", "csr", csr.Name, "signer", csr.Spec.SignerName)
		return requeueAfter(r.Options.BreakGlass.SignDelay), nil
	}
	if wait := remaining(now, approved.LastTransitionTime.Time, r.Options.BreakGlass.SignDelay); wait > 0 {
		return requeueAfter(wait), nil
	}
	if msg, failed := r.injectedFailure(ctx, hcpNS); failed {
		return r.refuse(ctx, csr, ReasonSimulatedFailure, msg, now)
	}
	x509cr, err := validateBreakGlassCSR(csr, signerClasses[class].userPrefix)
	if err != nil {
		return r.refuse(ctx, csr, reasonSignerValidationFailure, err.Error(), now)
	}
	signer := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: hcpNS, Name: signerClasses[class].secret}, signer); err != nil {
		if apierrors.IsNotFound(err) {
			return requeueAfter(time.Second), nil // the PKI controller has not made it yet
		}
		return reconcile.Result{}, fmt.Errorf("get signer %s/%s: %w", hcpNS, signerClasses[class].secret, err)
	}
	certPEM, err := signClientCert(signer.Data[corev1.TLSCertKey], signer.Data[corev1.TLSPrivateKeyKey], x509cr, csr.Spec.ExpirationSeconds, now)
	if err != nil {
		return reconcile.Result{}, err
	}
	csr.Status.Certificate = certPEM
	if err := r.Client.Status().Update(ctx, csr); err != nil {
		return bgRetry(fmt.Errorf("write certificate of CSR %s: %w", csr.Name, err))
	}
	breakGlassEvents.WithLabelValues("signed").Inc()
	log.Info("break-glass CSR signed", "csr", csr.Name, "user", x509cr.Subject.CommonName)
	return reconcile.Result{}, nil
}

func (r *csrSigner) refuse(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, reason, msg string, now time.Time) (reconcile.Result, error) {
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: reason, Message: msg,
		LastUpdateTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)})
	if err := r.Client.Status().Update(ctx, csr); err != nil {
		return bgRetry(fmt.Errorf("fail CSR %s: %w", csr.Name, err))
	}
	breakGlassEvents.WithLabelValues("refused").Inc()
	ctrl.LoggerFrom(ctx).Info("break-glass CSR refused", "csr", csr.Name, "reason", reason, "message", msg)
	return reconcile.Result{}, nil
}

// injectedFailure reads FailBreakGlassAnnotation from the HostedCluster of a control-plane
// namespace.
func (r *csrSigner) injectedFailure(ctx context.Context, hcpNS string) (string, bool) {
	return injectedBreakGlassFailure(ctx, r.Client, hcpNS)
}

func injectedBreakGlassFailure(ctx context.Context, c client.Client, hcpNS string) (string, bool) {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, types.NamespacedName{Name: hcpNS}, ns); err != nil {
		return "", false
	}
	hcNS, hcName, ok := strings.Cut(ns.Annotations[hostedClusterAnnotation], "/")
	if !ok {
		return "", false
	}
	hc := &hyperv1.HostedCluster{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: hcNS, Name: hcName}, hc); err != nil {
		return "", false
	}
	msg, ok := hc.Annotations[FailBreakGlassAnnotation]
	return msg, ok
}

// validateBreakGlassCSR applies a break-glass signer's rules: a user name with the signer's
// prefix (userPrefix), client authentication only, no subject alternative names.
func validateBreakGlassCSR(csr *certificatesv1.CertificateSigningRequest, userPrefix string) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("spec.request is not a PEM certificate request")
	}
	cr, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("spec.request cannot be parsed: %w", err)
	}
	if err := cr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("spec.request has an invalid signature: %w", err)
	}
	if !strings.HasPrefix(cr.Subject.CommonName, userPrefix) || len(cr.Subject.CommonName) == len(userPrefix) {
		return nil, fmt.Errorf("invalid CN %q: it must start with %q", cr.Subject.CommonName, userPrefix)
	}
	if len(cr.DNSNames)+len(cr.EmailAddresses)+len(cr.IPAddresses)+len(cr.URIs) > 0 {
		return nil, errors.New("a client certificate must not carry subject alternative names")
	}
	clientAuth := false
	for _, u := range csr.Spec.Usages {
		switch u {
		case certificatesv1.UsageClientAuth:
			clientAuth = true
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		default:
			return nil, fmt.Errorf("usage %q is not allowed for a client certificate", u)
		}
	}
	if !clientAuth {
		return nil, errors.New("usages must include client auth")
	}
	return cr, nil
}

// defaultCSRExpiration is used when a CSR asks for no lifetime (Kubernetes signers default to
// their own duration).
const defaultCSRExpiration = 24 * time.Hour

func signClientCert(caPEM, caKeyPEM []byte, cr *x509.CertificateRequest, expirationSeconds *int32, now time.Time) ([]byte, error) {
	ca, key, err := parseCA(caPEM, caKeyPEM)
	if err != nil {
		return nil, err
	}
	life := defaultCSRExpiration
	if expirationSeconds != nil {
		life = time.Duration(*expirationSeconds) * time.Second
	}
	notAfter := now.Add(life)
	if notAfter.After(ca.NotAfter) {
		notAfter = ca.NotAfter
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: cr.Subject,
		// Backdated a little for clock skew, as Kubernetes' signers do.
		NotBefore: now.Add(-5 * time.Minute), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, cr.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sign client certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func csrCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequestCondition {
	for i := range csr.Status.Conditions {
		if c := &csr.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// revocationReconciler plays the control-plane-pki-operator's revocation of a signer class:
// the current signer is kept as the previous one, a new signer is generated and trusted next to
// it (NewCertificatesTrusted), and after --break-glass-revoke-delay the previous one is dropped
// from the client CA bundle (PreviousCertificatesRevoked), so nothing it signed is accepted.
// The other class's signer stays in the bundle untouched: revoking SRE credentials never
// revokes the customer's, and the reverse.
type revocationReconciler struct {
	Client  client.Client
	Options Options
	// hosted, when set, runs the control plane's kube-apiserver: a revocation is complete only
	// once that apiserver refuses a certificate of the previous signer.
	hosted *hostedAPIServers
}

func (r *revocationReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	crr := &certificatesv1alpha1.CertificateRevocationRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, crr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if meta.IsStatusConditionTrue(crr.Status.Conditions, certificatesv1alpha1.PreviousCertificatesRevokedType) {
		return reconcile.Result{}, nil
	}
	now := r.Options.now()
	gen := crr.Generation
	set := func(t string, s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&crr.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg,
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now)})
	}
	writeStatus := func(what string) error {
		if err := r.Client.Status().Update(ctx, crr); err != nil {
			return fmt.Errorf("%s of CertificateRevocationRequest %s: %w", what, req, err)
		}
		return nil
	}
	class, known := signerClasses[crr.Spec.SignerClass]
	if !known {
		set(certificatesv1alpha1.SignerClassValidType, metav1.ConditionFalse, certificatesv1alpha1.SignerClassUnknownReason,
			fmt.Sprintf("Signer class %q unknown.", crr.Spec.SignerClass))
		return bgRetry(writeStatus("refuse"))
	}
	if msg, failed := injectedBreakGlassFailure(ctx, r.Client, crr.Namespace); failed {
		set(certificatesv1alpha1.PreviousCertificatesRevokedType, metav1.ConditionFalse, ReasonSimulatedFailure, msg)
		return bgRetry(writeStatus("fail"))
	}
	if crr.Status.RevocationTimestamp == nil {
		t := metav1.NewTime(now)
		crr.Status.RevocationTimestamp = &t
		set(certificatesv1alpha1.SignerClassValidType, metav1.ConditionTrue, hyperv1.AsExpectedReason, fmt.Sprintf("Signer class %q known.", crr.Spec.SignerClass))
		if err := writeStatus("start"); err != nil {
			return bgRetry(err)
		}
	}

	// 1. Keep the current signer as the previous one (once), 2. rotate unless already rotated.
	prevName := crr.Name + "-previous-signer"
	current := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: crr.Namespace, Name: class.secret}, current); err != nil {
		return reconcile.Result{}, fmt.Errorf("get signer of %s: %w", req, err)
	}
	previous := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: crr.Namespace, Name: prevName}, previous)
	if apierrors.IsNotFound(err) {
		previous = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: crr.Namespace, Name: prevName}, Type: current.Type, Data: current.Data}
		if err := r.Client.Create(ctx, previous); err != nil {
			return bgRetry(fmt.Errorf("keep previous signer of %s: %w", req, err))
		}
	} else if err != nil {
		return reconcile.Result{}, fmt.Errorf("get previous signer of %s: %w", req, err)
	}
	if sameCert(current.Data[corev1.TLSCertKey], previous.Data[corev1.TLSCertKey]) {
		certPEM, keyPEM, err := newCA(crr.Spec.SignerClass+"."+crr.Namespace, now)
		if err != nil {
			return reconcile.Result{}, err
		}
		current.Data = map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}
		if err := r.Client.Update(ctx, current); err != nil { // conditional on the resourceVersion read
			return bgRetry(fmt.Errorf("rotate signer of %s: %w", req, err))
		}
		breakGlassEvents.WithLabelValues("rotated").Inc()
		log.Info("break-glass signer rotated", "namespace", crr.Namespace, "crr", crr.Name)
	}
	revokeAt := crr.Status.RevocationTimestamp.Add(r.Options.BreakGlass.RevokeDelay)
	trustPrevious := now.Before(revokeAt)
	// The bundle trusts every class's current signer, and this class's previous one until the
	// delay has passed. (A revocation of the other class that runs at the same time and ends
	// first drops this previous signer early: it errs towards revoking.)
	var bundle string
	for _, name := range classNames {
		if name == crr.Spec.SignerClass {
			bundle += string(current.Data[corev1.TLSCertKey])
			if trustPrevious {
				bundle += string(previous.Data[corev1.TLSCertKey])
			}
			continue
		}
		other := &corev1.Secret{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: crr.Namespace, Name: signerClasses[name].secret}, other); err != nil {
			return reconcile.Result{}, fmt.Errorf("get %s signer of %s: %w", name, req, err)
		}
		bundle += string(other.Data[corev1.TLSCertKey])
	}
	if err := r.setClientCABundle(ctx, crr.Namespace, bundle); err != nil {
		return bgRetry(err)
	}
	if r.hosted != nil {
		// Written here too, not only by the HostedCluster controller's watch, so the probe
		// below does not wait for a reconcile elsewhere.
		if _, err := r.hosted.syncClientCA(crr.Namespace, []byte(bundle)); err != nil {
			return reconcile.Result{}, fmt.Errorf("write the client CA of %s: %w", crr.Namespace, err)
		}
	}
	if !trustPrevious && r.hosted != nil {
		// Revoked means refused by the apiserver, not merely left out of the bundle: kube-apiserver
		// reloads its client CA file by itself, a little later.
		refused, running, err := r.hosted.refuses(ctx, crr.Namespace, previous.Data[corev1.TLSCertKey], previous.Data[corev1.TLSPrivateKeyKey], class.userPrefix+"revocation-probe")
		if running && !refused {
			if err != nil {
				log.V(1).Info("revocation probe", "err", err.Error())
			}
			trustPrevious = true
			revokeAt = now.Add(time.Second)
		}
	}
	crr.Status.PreviousSigner = &corev1.LocalObjectReference{Name: prevName}
	set(certificatesv1alpha1.RootCertificatesRegeneratedType, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Signer certificate regenerated.")
	set(certificatesv1alpha1.LeafCertificatesRegeneratedType, metav1.ConditionTrue, hyperv1.AsExpectedReason, "All leaf certificates are re-generated.")
	set(certificatesv1alpha1.NewCertificatesTrustedType, metav1.ConditionTrue, hyperv1.AsExpectedReason, "New signer certificate trusted.")
	if trustPrevious {
		set(certificatesv1alpha1.PreviousCertificatesRevokedType, metav1.ConditionFalse, hyperv1.WaitingForAvailableReason, "Previous signer certificate not yet revoked.")
	} else {
		set(certificatesv1alpha1.PreviousCertificatesRevokedType, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Previous signer certificate revoked.")
	}
	if err := writeStatus("progress"); err != nil {
		return bgRetry(err)
	}
	if trustPrevious {
		return requeueAfter(revokeAt.Sub(now)), nil
	}
	breakGlassEvents.WithLabelValues("revoked").Inc()
	log.Info("break-glass certificates revoked", "namespace", crr.Namespace, "crr", crr.Name)
	return reconcile.Result{}, nil
}

func (r *revocationReconciler) setClientCABundle(ctx context.Context, ns, bundle string) error {
	cm := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: ClientCABundleConfigMap}, cm); err != nil {
		return fmt.Errorf("get client CA bundle of %s: %w", ns, err)
	}
	if cm.Data[CABundleKey] == bundle {
		return nil
	}
	cm.Data = map[string]string{CABundleKey: bundle}
	if err := r.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("update client CA bundle of %s: %w", ns, err)
	}
	return nil
}

func bgRetry(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}
