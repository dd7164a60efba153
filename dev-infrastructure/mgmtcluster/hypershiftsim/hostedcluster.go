package hypershiftsim

import (
	"context"
	"fmt"
	"strconv"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Reasons and messages the sim uses where HyperShift's own are not determined by components the
// sim does not run. The others are HyperShift's, from its API package.
const (
	// ReasonSimulatedFailure marks a Degraded condition injected by FailAnnotation or
	// Options.FailClusters, so nobody mistakes it for a modelled failure.
	ReasonSimulatedFailure = "SimulatedFailure"
	reasonProgressing      = "Progressing"
	reasonActive           = hyperv1.AsExpectedReason
	msgCVONotFound         = "Condition not found in the CVO."
	maxHistory             = 100
)

// FailUpgradeAnnotation makes the HostedCluster's upgrades fail: once the rollout of a new
// release (not the first install) has run for its delay, the history entry stays Partial and the
// CVO reports Failing with the annotation's value as the message, as a real upgrade blocked by a
// degraded cluster operator does. The cluster stays Available on its previous version. Removing
// the annotation lets the upgrade complete.
const FailUpgradeAnnotation = "hypershift-sim.openhcp.io/fail-upgrade"

// FailReconcileAnnotation makes every reconcile of the HostedCluster end in an error, reported
// as HyperShift reports one: ReconciliationSucceeded=False, reason ReconciliationError, the
// annotation's value as the message, at the current generation. Nothing else changes, as a
// HyperShift that fails part way leaves the rest of the status as it was.
const FailReconcileAnnotation = "hypershift-sim.openhcp.io/fail-reconcile"

// HyperShift's ReconciliationSucceeded condition, as its hostedcluster controller writes it at
// the end of every reconcile (the reason's spelling is HyperShift's).
const (
	reasonReconciliationSucceeded = "ReconciliatonSucceeded"
	msgReconciliationSucceeded    = "Reconciliation completed successfully"
	reasonReconciliationError     = "ReconciliationError"
)

// HostedClusterReconciler plays the HyperShift operator's HostedCluster controller.
type HostedClusterReconciler struct {
	Client  client.Client
	Options Options
	// hosted runs the real hosted kube-apiservers; nil when disabled.
	hosted *hostedAPIServers
}

// Reconcile reads the HostedCluster, computes the status HyperShift would report at this moment
// and writes the difference. Every timed step is derived from a timestamp stored on the object
// (the version history's StartedTime, the deletionTimestamp), so the reconcile is idempotent and
// survives restarts; the controller requeues itself for the next step instead of sleeping.
func (r *HostedClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	hc := &hyperv1.HostedCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, hc); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Options.now()
	if hc.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, hc, now)
	}

	// HyperShift adds its finalizer before it creates anything for the cluster.
	if !controllerutil.ContainsFinalizer(hc, Finalizer) {
		patch := client.MergeFromWithOptions(hc.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(hc, Finalizer)
		if err := r.Client.Patch(ctx, hc, patch); err != nil {
			return retryOnConflict(fmt.Errorf("add finalizer to HostedCluster %s: %w", req, err))
		}
	}

	var cp controlPlane
	if r.hosted != nil {
		var err error
		if cp, err = r.observeControlPlane(ctx, hc); err != nil {
			return retryOnConflict(err)
		}
	}
	before := hc.Status.DeepCopy()
	next := computeStatus(hc, r.Options, now, &cp)
	if cp.served && cp.due && !cp.ready && !cp.started {
		// The rollout is due: start the kube-apiserver now and look again shortly.
		if err := r.startControlPlane(ctx, hc, &cp); err != nil {
			return reconcile.Result{}, err
		}
		next = computeStatus(hc, r.Options, now, &cp)
	}
	if cp.served && (cp.ready || cp.started) {
		// Available follows the apiserver's /readyz: look again soon while it is starting,
		// and at the health interval once it answers.
		every := r.hosted.o.HealthInterval
		if !cp.ready {
			every = time.Second
		}
		if next == 0 || next > every {
			next = every
		}
	}
	observeAuthentication(hc, before) // authentication.go
	if equality.Semantic.DeepEqual(before, &hc.Status) {
		return resultAfter(next), nil
	}
	if err := r.Client.Status().Update(ctx, hc); err != nil {
		return retryOnConflict(fmt.Errorf("update HostedCluster %s status: %w", req, err))
	}
	observeHostedClusterTransition(before, &hc.Status, hc.CreationTimestamp.Time, now)
	for _, t := range []hyperv1.ConditionType{hyperv1.HostedClusterAvailable, hyperv1.HostedClusterDegraded} {
		if was, is := conditionStatus(before.Conditions, t), conditionStatus(hc.Status.Conditions, t); was != is {
			log.Info("HostedCluster "+string(t)+" changed", "from", was, "to", is, "image", controlPlaneReleaseImage(hc))
		}
	}
	log.V(1).Info("status updated", "available", conditionStatus(hc.Status.Conditions, hyperv1.HostedClusterAvailable),
		"progressing", conditionStatus(hc.Status.Conditions, hyperv1.HostedClusterProgressing),
		"degraded", conditionStatus(hc.Status.Conditions, hyperv1.HostedClusterDegraded), "next", next)
	return resultAfter(next), nil
}

// computeHostedClusterStatus updates hc.Status in place to what HyperShift would report now and
// returns when the next timed step is due (0: none), for a cluster without a hosted
// kube-apiserver.
func computeHostedClusterStatus(hc *hyperv1.HostedCluster, o Options, now time.Time) time.Duration {
	return computeStatus(hc, o, now, &controlPlane{})
}

// computeStatus is computeHostedClusterStatus with the cluster's hosted kube-apiserver as
// observed (cp): a served cluster's endpoint is its loopback port, its rollout completes and it
// is Available only while that apiserver answers /readyz. It sets cp.due when the apiserver
// should run (the rollout's delay has passed, or an earlier rollout completed).
func computeStatus(hc *hyperv1.HostedCluster, o Options, now time.Time, cp *controlPlane) time.Duration {
	st := &hc.Status
	ts := metav1.NewTime(now.Truncate(time.Second)) // what the apiserver would store anyway
	set := func(typ hyperv1.ConditionType, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: string(typ), Status: status, Reason: reason, Message: message,
			ObservedGeneration: hc.Generation, LastTransitionTime: ts,
		})
	}

	// A paused cluster is left alone apart from saying so, as HyperShift does.
	if paused, until := pausedUntil(hc.Spec.PausedUntil, now); paused {
		msg := "Reconciliation paused until field removed"
		if until > 0 {
			msg = "Reconciliation paused until: " + *hc.Spec.PausedUntil
		}
		set(hyperv1.ReconciliationActive, metav1.ConditionFalse, hyperv1.ReconciliationPausedConditionReason, msg)
		return until
	}
	set(hyperv1.ReconciliationActive, metav1.ConditionTrue, reasonActive, "Reconciliation active on resource")
	set(hyperv1.ValidHostedClusterConfiguration, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Configuration passes validation")
	set(hyperv1.SupportedHostedCluster, metav1.ConditionTrue, hyperv1.AsExpectedReason, "HostedCluster is supported by operator configuration")
	// ReconciliationSucceeded at this generation is how a client knows HyperShift has acted on
	// the spec it sees (autoscaling, allowed CIDRs, image content sources, KMS keys: changes
	// without a status of their own).
	if msg, ok := hc.Annotations[FailReconcileAnnotation]; ok {
		set(hyperv1.ReconciliationSucceeded, metav1.ConditionFalse, reasonReconciliationError, msg)
	} else {
		set(hyperv1.ReconciliationSucceeded, metav1.ConditionTrue, reasonReconciliationSucceeded, msgReconciliationSucceeded)
	}

	switch {
	case cp.served:
		st.ControlPlaneEndpoint = hyperv1.APIEndpoint{Host: cp.host, Port: int32(cp.port)}
	case st.ControlPlaneEndpoint.Host == "":
		st.ControlPlaneEndpoint = controlPlaneEndpoint(hc)
	}

	image := controlPlaneReleaseImage(hc)
	version, arch, verr := ReleaseVersion(image)
	if verr != nil {
		// No control plane can be deployed from an image HyperShift cannot resolve: Progressing
		// is Blocked and Available explains why, as in computeHostedClusterAvailability.
		set(hyperv1.ValidReleaseImage, metav1.ConditionFalse, hyperv1.InvalidImageReason, verr.Error())
		msg := "ValidReleaseImage condition is false: " + verr.Error()
		set(hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.BlockedReason, msg)
		set(hyperv1.HostedClusterAvailable, metav1.ConditionFalse, hyperv1.WaitingForAvailableReason, msg)
		set(hyperv1.HostedClusterDegraded, metav1.ConditionUnknown, hyperv1.StatusUnknownReason, "The hosted control plane is not found")
		setCVOUnknown(set)
		return 0
	}
	set(hyperv1.ValidReleaseImage, metav1.ConditionTrue, hyperv1.AsExpectedReason, "Release image is valid")
	st.PayloadArch = arch

	// Version status: a new rollout (first install or a changed release image) prepends a
	// Partial history entry; its StartedTime is the clock the rollout is measured against.
	if st.Version == nil || len(st.Version.History) == 0 {
		st.Version = &hyperv1.ClusterVersionStatus{}
	}
	if st.Version.Desired.Image != image || len(st.Version.History) == 0 {
		st.Version.Desired = configv1.Release{Image: image, Version: version}
		st.Version.History = append([]configv1.UpdateHistory{{
			State: configv1.PartialUpdate, Image: image, Version: version, StartedTime: ts,
		}}, st.Version.History...)
		// Like the CVO, keep only the most recent entries.
		if len(st.Version.History) > maxHistory {
			st.Version.History = st.Version.History[:maxHistory]
		}
	}
	st.Version.ObservedGeneration = hc.Generation
	current := &st.Version.History[0]

	failMsg, failing := failure(hc, o)
	stuck := o.NeverAvailable || hc.Annotations[StuckAnnotation] == "true"
	// An upgrade is a rollout after an earlier one completed; it takes UpgradeDelay when set.
	upgrading := lastCompleted(st.Version.History[1:]) != "" && current.State != configv1.CompletedUpdate
	delay := o.AvailableDelay
	if upgrading && o.UpgradeDelay > 0 {
		delay = o.UpgradeDelay
	}
	upgradeFailMsg, upgradeFailing := "", false
	var next time.Duration
	if current.State != configv1.CompletedUpdate && !failing && !stuck {
		if left := remaining(now, current.StartedTime.Time, delay); left > 0 {
			next = left
		} else if cp.served && !cp.ready {
			// The rollout completes when the hosted kube-apiserver answers, not on the timer.
			cp.due = true
		} else if msg, ok := hc.Annotations[FailUpgradeAnnotation]; ok && upgrading {
			// The CVO gives up on this payload; the entry stays Partial, as in a real cluster.
			upgradeFailMsg, upgradeFailing = msg, true
			if upgradeFailMsg == "" {
				upgradeFailMsg = "upgrade failure injected by annotation " + FailUpgradeAnnotation
			}
		} else {
			current.State = configv1.CompletedUpdate
			current.CompletionTime = &ts
		}
	}
	everCompleted := false
	for _, h := range st.Version.History {
		everCompleted = everCompleted || h.State == configv1.CompletedUpdate
	}
	if everCompleted {
		cp.due = true
	}
	setHostedAPIServerCondition(set, cp)

	switch {
	case failing:
		set(hyperv1.HostedClusterDegraded, metav1.ConditionTrue, ReasonSimulatedFailure, failMsg)
		set(hyperv1.HostedClusterAvailable, metav1.ConditionFalse, ReasonSimulatedFailure, failMsg)
		set(hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.BlockedReason, failMsg)
	default:
		set(hyperv1.HostedClusterDegraded, metav1.ConditionFalse, hyperv1.AsExpectedReason, "The hosted cluster is not degraded")
		hasAvailable := meta.FindStatusCondition(st.Conditions, string(hyperv1.HostedClusterAvailable)) != nil
		switch {
		case everCompleted && cp.served && !cp.ready && cp.starting && hasAvailable:
			// Its process is (re)starting with the sim, within startGrace: Available stays as
			// it was, as HyperShift's control plane keeps running while its operator restarts.
		case everCompleted && cp.served && !cp.ready:
			// HyperShift's Available follows the hosted kube-apiserver's health.
			set(hyperv1.HostedClusterAvailable, metav1.ConditionFalse, hyperv1.WaitingForAvailableReason, "Waiting for hosted control plane to be healthy: kube-apiserver not ready")
		case everCompleted:
			// HyperShift keeps a cluster Available while its control plane upgrades.
			set(hyperv1.HostedClusterAvailable, metav1.ConditionTrue, hyperv1.AsExpectedReason, "The hosted control plane is available")
		default:
			set(hyperv1.HostedClusterAvailable, metav1.ConditionFalse, hyperv1.WaitingForAvailableReason, "Waiting for hosted control plane to be healthy")
		}
		if current.State == configv1.CompletedUpdate {
			set(hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.AsExpectedReason, "HostedCluster is at expected version")
		} else if upgradeFailing {
			set(hyperv1.HostedClusterProgressing, metav1.ConditionFalse, hyperv1.BlockedReason, "Unable to apply "+version+": "+upgradeFailMsg)
		} else {
			set(hyperv1.HostedClusterProgressing, metav1.ConditionTrue, reasonProgressing, "HostedCluster is deploying, upgrading, or reconfiguring")
		}
	}

	// The ClusterVersion* conditions bubble up from the hosted cluster's CVO, which exists only
	// once a control plane has come up.
	if !everCompleted {
		setCVOUnknown(set)
		return next
	}
	const fromCV = hyperv1.FromClusterVersionReason
	if upgradeFailing {
		set(hyperv1.ClusterVersionSucceeding, metav1.ConditionFalse, ReasonSimulatedFailure, upgradeFailMsg)
		set(hyperv1.ClusterVersionFailing, metav1.ConditionTrue, ReasonSimulatedFailure, upgradeFailMsg)
	} else {
		set(hyperv1.ClusterVersionSucceeding, metav1.ConditionTrue, fromCV, "")
		set(hyperv1.ClusterVersionFailing, metav1.ConditionFalse, fromCV, "")
	}
	set(hyperv1.ClusterVersionUpgradeable, metav1.ConditionTrue, fromCV, "")
	set(hyperv1.ClusterVersionReleaseAccepted, metav1.ConditionTrue, fromCV,
		fmt.Sprintf("Payload loaded version=%q image=%q architecture=%q", version, image, arch))
	if current.State == configv1.CompletedUpdate {
		set(hyperv1.ClusterVersionAvailable, metav1.ConditionTrue, fromCV, "Done applying "+version)
		set(hyperv1.ClusterVersionProgressing, metav1.ConditionFalse, fromCV, "Cluster version is "+version)
	} else {
		set(hyperv1.ClusterVersionAvailable, metav1.ConditionTrue, fromCV, "Done applying "+lastCompleted(st.Version.History))
		if upgradeFailing {
			set(hyperv1.ClusterVersionProgressing, metav1.ConditionTrue, fromCV, "Unable to apply "+version+": "+upgradeFailMsg)
		} else {
			set(hyperv1.ClusterVersionProgressing, metav1.ConditionTrue, fromCV, "Working towards "+version)
		}
	}
	return next
}

func setCVOUnknown(set func(hyperv1.ConditionType, metav1.ConditionStatus, string, string)) {
	for _, t := range []hyperv1.ConditionType{
		hyperv1.ClusterVersionSucceeding, hyperv1.ClusterVersionUpgradeable, hyperv1.ClusterVersionReleaseAccepted,
		hyperv1.ClusterVersionAvailable, hyperv1.ClusterVersionProgressing, hyperv1.ClusterVersionFailing,
	} {
		set(t, metav1.ConditionUnknown, hyperv1.StatusUnknownReason, msgCVONotFound)
	}
}

func lastCompleted(h []configv1.UpdateHistory) string {
	for _, e := range h {
		if e.State == configv1.CompletedUpdate {
			return e.Version
		}
	}
	return ""
}

// failure reports whether a fault is injected into hc, and its message.
func failure(hc *hyperv1.HostedCluster, o Options) (string, bool) {
	if msg, ok := hc.Annotations[FailAnnotation]; ok {
		if msg == "" {
			msg = "failure injected by annotation " + FailAnnotation
		}
		return msg, true
	}
	if o.FailClusters[client.ObjectKeyFromObject(hc)] {
		return "failure injected by hypershift-sim --fail-clusters", true
	}
	return "", false
}

// controlPlaneReleaseImage is the image the control plane runs: spec.controlPlaneRelease when
// set, as in HyperShift, else spec.release.
func controlPlaneReleaseImage(hc *hyperv1.HostedCluster) string {
	if hc.Spec.ControlPlaneRelease != nil && hc.Spec.ControlPlaneRelease.Image != "" {
		return hc.Spec.ControlPlaneRelease.Image
	}
	return hc.Spec.Release.Image
}

// controlPlaneEndpoint is where the hosted kube-apiserver would be published. HyperShift learns it
// from the load balancer or route it creates; the sim uses the hostname the publishing strategy
// asks for, or makes up api.<name>.<baseDomain> (HyperShift's naming for the KAS route), with
// port 443 for a Route and 6443 for a LoadBalancer.
func controlPlaneEndpoint(hc *hyperv1.HostedCluster) hyperv1.APIEndpoint {
	ep := hyperv1.APIEndpoint{Port: 6443}
	for _, s := range hc.Spec.Services {
		if s.Service != hyperv1.APIServer {
			continue
		}
		switch s.Type {
		case hyperv1.Route:
			ep.Port = 443
			if s.Route != nil {
				ep.Host = s.Route.Hostname
			}
		case hyperv1.LoadBalancer:
			if s.LoadBalancer != nil {
				ep.Host = s.LoadBalancer.Hostname
			}
		}
	}
	if ep.Host == "" {
		domain := hc.Spec.DNS.BaseDomain
		if domain == "" {
			domain = hc.Namespace + ".hypershift.local"
		}
		ep.Host = "api." + hc.Name + "." + domain
	}
	return ep
}

// pausedUntil interprets spec.pausedUntil like HyperShift: "true" pauses until removed, an
// RFC3339 time pauses until then (the returned duration is the time left), anything else does
// not pause.
func pausedUntil(v *string, now time.Time) (bool, time.Duration) {
	if v == nil {
		return false, 0
	}
	if b, err := strconv.ParseBool(*v); err == nil {
		return b, 0
	}
	if t, err := time.Parse(time.RFC3339, *v); err == nil && now.Before(t) {
		return true, t.Sub(now)
	}
	return false, 0
}

// reconcileDelete deletes the cluster's NodePools, waits for them to go and for DeleteDelay to
// pass since the deletionTimestamp, then removes the finalizer so the apiserver can drop it.
func (r *HostedClusterReconciler) reconcileDelete(ctx context.Context, hc *hyperv1.HostedCluster, now time.Time) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(hc, Finalizer) {
		return reconcile.Result{}, nil
	}
	key := client.ObjectKeyFromObject(hc)
	pools := &hyperv1.NodePoolList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(hc.Namespace)); err != nil {
		return reconcile.Result{}, fmt.Errorf("list NodePools of HostedCluster %s/%s: %w", hc.Namespace, hc.Name, err)
	}
	waiting := 0
	for i := range pools.Items {
		np := &pools.Items[i]
		if np.Spec.ClusterName != hc.Name {
			continue
		}
		waiting++
		if np.DeletionTimestamp == nil {
			if err := r.Client.Delete(ctx, np, client.Preconditions{UID: &np.UID}); err != nil && !apierrors.IsNotFound(err) {
				return reconcile.Result{}, fmt.Errorf("delete NodePool %s/%s: %w", np.Namespace, np.Name, err)
			}
		}
	}
	left := remaining(now, hc.DeletionTimestamp.Time, r.Options.DeleteDelay)
	if waiting > 0 {
		// The NodePool watch wakes us when one goes; the requeue is a safety net.
		return requeueAfter(max(left, time.Second)), nil
	}
	if left > 0 {
		return requeueAfter(left), nil
	}
	// The hosted kube-apiserver stops and its data goes before the finalizer does.
	if r.hosted != nil && servedByAnnotation(hc) {
		if err := r.hosted.remove(ControlPlaneNamespace(key)); err != nil {
			return reconcile.Result{}, err
		}
	}
	patch := client.MergeFromWithOptions(hc.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(hc, Finalizer)
	if err := r.Client.Patch(ctx, hc, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return retryOnConflict(fmt.Errorf("remove finalizer from HostedCluster %s/%s: %w", hc.Namespace, hc.Name, err))
	}
	if r.hosted != nil {
		r.hosted.release(key)
	}
	hostedClusterTransitions.WithLabelValues("deleted").Inc()
	ctrl.LoggerFrom(ctx).Info("HostedCluster deleted", "after", now.Sub(hc.DeletionTimestamp.Time).Round(time.Millisecond))
	return reconcile.Result{}, nil
}

func conditionStatus(conds []metav1.Condition, t hyperv1.ConditionType) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(conds, string(t)); c != nil {
		return c.Status
	}
	return ""
}

// retryOnConflict turns a write conflict (someone else, e.g. the Maestro agent, wrote first)
// into a quick requeue against the fresh object instead of an error with backoff.
func retryOnConflict(err error) (reconcile.Result, error) {
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: 100 * time.Millisecond}, nil
	}
	return reconcile.Result{}, err
}

func resultAfter(d time.Duration) reconcile.Result {
	if d > 0 {
		return requeueAfter(d)
	}
	return reconcile.Result{}
}
