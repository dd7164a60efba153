package hypershiftsim

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// observeControlPlane decides (once) whether hc is served, and for a served cluster whose
// kube-apiserver this sim has started, keeps it running, its client CA current, and reports
// whether it answers.
func (r *HostedClusterReconciler) observeControlPlane(ctx context.Context, hc *hyperv1.HostedCluster) (controlPlane, error) {
	cp, err := r.hosted.assign(ctx, r.Client, hc)
	if err != nil || !cp.served {
		return cp, err
	}
	hcpNS := ControlPlaneNamespace(client.ObjectKeyFromObject(hc))
	if s := r.hosted.lookup(hcpNS); s == nil || !s.hasProcessOrFailure() {
		cp.starting = true
		return cp, nil // not started in this run: computeStatus says whether it is due
	}
	return cp, r.ensureControlPlane(ctx, hc, hcpNS, &cp)
}

// startControlPlane starts a served cluster's kube-apiserver once its rollout is due.
func (r *HostedClusterReconciler) startControlPlane(ctx context.Context, hc *hyperv1.HostedCluster, cp *controlPlane) error {
	return r.ensureControlPlane(ctx, hc, ControlPlaneNamespace(client.ObjectKeyFromObject(hc)), cp)
}

func (r *HostedClusterReconciler) ensureControlPlane(ctx context.Context, hc *hyperv1.HostedCluster, hcpNS string, cp *controlPlane) error {
	cp.started = true
	p, ok, err := readHostedPKI(ctx, r.Client, hcpNS)
	if err != nil {
		return fmt.Errorf("read the control-plane PKI of %s: %w", hcpNS, err)
	}
	if !ok {
		cp.detail, cp.starting = "waiting for the control-plane PKI", true
		return nil
	}
	p.oidc, err = r.oidcProviderOf(ctx, hc)
	if err != nil {
		return err
	}
	st, err := r.hosted.ensure(ctx, hcpNS, cp.port, p)
	if err != nil {
		return fmt.Errorf("hosted kube-apiserver of %s: %w", hcpNS, err)
	}
	cp.ready, cp.starting, cp.failed, cp.detail = st.ready, st.starting, st.failed, st.detail
	if !st.ready {
		ctrl.LoggerFrom(ctx).V(1).Info("hosted kube-apiserver not ready", "detail", st.detail)
	}
	return nil
}

// oidcProviderOf is the OIDC provider the cluster's kube-apiserver should honour: the
// HostedCluster's, when its authentication configuration is valid (observeAuthentication
// reports it otherwise), with the issuer's CA bundle from the ConfigMap it names in the
// HostedCluster's namespace. A provider whose CA ConfigMap is missing is not honoured yet (the
// next reconcile looks again).
func (r *HostedClusterReconciler) oidcProviderOf(ctx context.Context, hc *hyperv1.HostedCluster) (hostedOIDC, error) {
	var o hostedOIDC
	var auth *configv1.AuthenticationSpec
	if hc.Spec.Configuration != nil {
		auth = hc.Spec.Configuration.Authentication
	}
	if validateAuthentication(auth) != nil {
		return o, nil
	}
	p := oidcProviderOf(auth)
	if p == nil {
		return o, nil
	}
	if name := p.Issuer.CertificateAuthority.Name; name != "" {
		cm := &corev1.ConfigMap{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: hc.Namespace, Name: name}, cm); err != nil {
			if apierrors.IsNotFound(err) {
				ctrl.LoggerFrom(ctx).Info("external auth issuer's CA ConfigMap not found; the hosted kube-apiserver does not honour the issuer yet", "configMap", name)
				return o, nil
			}
			return o, fmt.Errorf("read the issuer CA ConfigMap %s/%s: %w", hc.Namespace, name, err)
		}
		o.caPEM = []byte(cm.Data[issuerCAKey])
	}
	o.provider = p
	return o, nil
}

// issuerCAKey is the key of an OIDC issuer's CA bundle in the ConfigMap the provider names.
const issuerCAKey = "ca-bundle.crt"

// hasProcessOrFailure reports whether this sim started the apiserver, or tried and failed.
func (s *hostedAPIServer) hasProcessOrFailure() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil || s.failure != ""
}

// setHostedAPIServerCondition reports whether the cluster's kube-apiserver is real. Messages
// carry no probe error text, so a status is not rewritten for every failed probe (the log has
// it); a failed start is the exception: its message says how it failed, and changes at most
// once per retry (startRetryAfter).
func setHostedAPIServerCondition(set func(hyperv1.ConditionType, metav1.ConditionStatus, string, string), cp *controlPlane) {
	switch {
	case cp.capped:
		set(HostedAPIServerCondition, metav1.ConditionFalse, ReasonHostedAPIServerCapReached, fmt.Sprintf(
			"hypershift-sim serves at most %d hosted kube-apiservers (--hosted-apiservers); this cluster's status is simulated and its endpoint does not answer", cp.max))
	case !cp.served:
	case cp.ready:
		set(HostedAPIServerCondition, metav1.ConditionTrue, ReasonHostedAPIServerRunning,
			fmt.Sprintf("kube-apiserver answers /readyz at https://%s", net.JoinHostPort(cp.host, strconv.Itoa(cp.port))))
	case cp.failed:
		set(HostedAPIServerCondition, metav1.ConditionFalse, ReasonHostedAPIServerStartFailed,
			fmt.Sprintf("kube-apiserver on %s failed to start (retrying with backoff): %s", net.JoinHostPort(cp.host, strconv.Itoa(cp.port)), cp.detail))
	case !cp.due:
		set(HostedAPIServerCondition, metav1.ConditionFalse, ReasonHostedAPIServerWaiting,
			"kube-apiserver starts when the rollout's delay has passed")
	default:
		set(HostedAPIServerCondition, metav1.ConditionFalse, ReasonHostedAPIServerNotReady,
			fmt.Sprintf("kube-apiserver on %s does not answer /readyz yet", net.JoinHostPort(cp.host, strconv.Itoa(cp.port))))
	}
}

// servedByAnnotation reports whether hc was given a hosted kube-apiserver.
func servedByAnnotation(hc *hyperv1.HostedCluster) bool {
	v, ok := hc.Annotations[HostedAPIServerAnnotation]
	return ok && v != cappedValue
}

// clusterOfClientCABundle maps a control-plane namespace's total-client-ca ConfigMap to its
// HostedCluster (named by the namespace's annotation).
func (r *HostedClusterReconciler) clusterOfClientCABundle(ctx context.Context, o client.Object) []reconcile.Request {
	if o.GetName() != ClientCABundleConfigMap {
		return nil
	}
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: o.GetNamespace()}, ns); err != nil {
		return nil
	}
	hcNS, hcName, ok := strings.Cut(ns.Annotations[hostedClusterAnnotation], "/")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: hcNS, Name: hcName}}}
}
