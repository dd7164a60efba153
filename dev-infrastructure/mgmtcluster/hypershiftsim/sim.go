// Package hypershiftsim plays the HyperShift operator against a real management kube-apiserver:
// it moves HostedCluster and NodePool finalizers, conditions, version history and replicas the
// way HyperShift does, with configurable delays and injected faults. What it models and what it
// does not is listed in docs/hypershift-sim.md.
package hypershiftsim

import (
	"context"
	"fmt"
	"strings"
	"time"

	certificatesv1alpha1 "github.com/openshift/hypershift/api/certificates/v1alpha1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/openhcp/openhcp/internal/secretseal"
)

// Finalizer is the finalizer HyperShift puts on HostedClusters and NodePools.
const Finalizer = "hypershift.openshift.io/finalizer"

// Annotations that inject faults into one HostedCluster.
const (
	// FailAnnotation makes the cluster end Degraded with the annotation's value as the message.
	FailAnnotation = "hypershift-sim.openhcp.io/fail"
	// StuckAnnotation set to "true" keeps the cluster Progressing for ever.
	StuckAnnotation = "hypershift-sim.openhcp.io/stuck"
)

// Options tunes the simulation. The zero value makes every transition immediate.
type Options struct {
	// AvailableDelay is how long a HostedCluster stays Progressing before it becomes Available,
	// counted from the start of its rollout (the StartedTime of its newest version history entry).
	// An upgrade (a new spec.release.image) takes the same time again.
	AvailableDelay time.Duration
	// UpgradeDelay is how long the rollout of a new release image takes once the cluster has
	// completed an earlier one (an upgrade); 0 means AvailableDelay.
	UpgradeDelay time.Duration
	// DeleteDelay is how long a deleted HostedCluster or NodePool keeps its finalizer, counted from
	// its deletionTimestamp.
	DeleteDelay time.Duration
	// NodePoolReadyDelay is how long a NodePool takes to reach spec.replicas and the target
	// version, counted from when its HostedCluster is Available or the pool's spec changed,
	// whichever is later.
	NodePoolReadyDelay time.Duration
	// FailClusters are HostedClusters (namespace/name) that end Degraded, as if annotated with
	// FailAnnotation.
	FailClusters map[types.NamespacedName]bool
	// NeverAvailable keeps every HostedCluster Progressing, as if annotated with StuckAnnotation.
	NeverAvailable bool
	// BreakGlass tunes the break-glass signer (breakglass.go).
	BreakGlass BreakGlassOptions
	// HostedAPI runs real hosted kube-apiservers (hostedapi.go); the zero value runs none.
	HostedAPI HostedAPIOptions
	// UnsealKey, when set, is this management cluster's private sealing key: the sim then
	// writes each sealed Secret a ManifestWork brings into the Secret it names (unseal.go).
	UnsealKey *secretseal.PrivateKey
	// Now is the clock; nil means time.Now. Delays are measured against timestamps stored on the
	// objects, so a restarted sim carries on where the last one stopped.
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// ParseClusterList parses a comma-separated list of namespace/name.
func ParseClusterList(s string) (map[types.NamespacedName]bool, error) {
	out := map[types.NamespacedName]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		ns, name, ok := strings.Cut(item, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%q is not namespace/name", item)
		}
		out[types.NamespacedName{Namespace: ns, Name: name}] = true
	}
	return out, nil
}

// NewScheme returns a scheme with the built-in types, HyperShift's v1beta1 API and its
// certificates v1alpha1 API (break-glass approvals and revocations).
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := hyperv1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := certificatesv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// workers per controller. A reconcile is a couple of API round trips, so a few workers keep up
// with Maestro's peak apply rate (about 60 works/s) without a queue building up.
const workers = 4

// Setup registers the HostedCluster and NodePool controllers with mgr.
func Setup(mgr ctrl.Manager, o Options) error {
	var hosted *hostedAPIServers
	if o.HostedAPI.Max > 0 {
		if err := o.HostedAPI.Validate(); err != nil {
			return err
		}
		sweepSocketDirs(mgr.GetLogger().WithName("hypershift-sim"), o.HostedAPI)
		hosted = newHostedAPIServers(o.HostedAPI)
		// Stops every hosted kube-apiserver when the manager stops.
		if err := mgr.Add(hosted); err != nil {
			return fmt.Errorf("add hosted kube-apiservers: %w", err)
		}
	}
	hc := &HostedClusterReconciler{Client: mgr.GetClient(), Options: o, hosted: hosted}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("hostedcluster").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&hyperv1.HostedCluster{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{},
			deletionPredicate()))).
		// A deleting HostedCluster waits for its NodePools to be gone.
		Watches(&hyperv1.NodePool{}, handler.EnqueueRequestsFromMapFunc(clusterOfPool),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			}))
	if hosted != nil {
		// A changed client CA bundle is written to the hosted kube-apiserver's file at once.
		b = b.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(hc.clusterOfClientCABundle))
	}
	if err := b.Complete(hc); err != nil {
		return fmt.Errorf("set up HostedCluster controller: %w", err)
	}
	np := &NodePoolReconciler{Client: mgr.GetClient(), Options: o}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named("nodepool").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&hyperv1.NodePool{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, deletionPredicate()))).
		// A pool's rollout waits for its HostedCluster to be Available.
		Watches(&hyperv1.HostedCluster{}, handler.EnqueueRequestsFromMapFunc(np.poolsOfCluster)).
		Complete(np); err != nil {
		return fmt.Errorf("set up NodePool controller: %w", err)
	}
	if o.UnsealKey != nil {
		if err := (&SecretUnsealer{Client: mgr.GetClient(), Key: o.UnsealKey}).setup(mgr); err != nil {
			return err
		}
	}
	return setupBreakGlass(mgr, o, hosted)
}

// deletionPredicate passes updates that set a deletionTimestamp. Our own status writes do not
// pass the other predicates, so they do not wake the controller again; timed steps are driven by
// RequeueAfter instead.
func deletionPredicate() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectNew.GetDeletionTimestamp() != nil && e.ObjectOld.GetDeletionTimestamp() == nil
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// remaining is how long until start+delay, or zero once it has passed.
func remaining(now, start time.Time, delay time.Duration) time.Duration {
	if d := start.Add(delay).Sub(now); d > 0 {
		return d
	}
	return 0
}

// requeueAfter asks for a reconcile once d has passed. A little slack makes sure the deadline
// has passed when the reconcile runs, so it is not woken a second time for a few microseconds.
func requeueAfter(d time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: d + 10*time.Millisecond}
}

func clusterOfPool(_ context.Context, o client.Object) []reconcile.Request {
	np, ok := o.(*hyperv1.NodePool)
	if !ok || np.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName}}}
}
