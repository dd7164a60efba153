package hypershiftsim

import (
	"context"
	"fmt"
	"time"

	hyperv1 "github.com/openshift/hypershift/api/hypershift/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// NodePoolReconciler plays HyperShift's NodePool controller and, behind it, Cluster API: machines
// appear (or go) and the pool reports them.
type NodePoolReconciler struct {
	Client  client.Client
	Options Options
}

// Reasons for a pool whose machines are not all there yet; HyperShift copies them from the
// MachineDeployment and Machines, so these follow Cluster API's wording.
const (
	reasonWaitingForAvailableMachines = "WaitingForAvailableMachines"
	reasonWaitingForControlPlane      = "WaitingForControlPlane"
)

// Reconcile computes the pool's status from its spec, its HostedCluster and the time a rollout
// started, and writes the difference. The rollout clock is the lastTransitionTime of the Ready
// condition turning False, or the HostedCluster becoming Available if that is later: machines
// cannot fetch their ignition before the control plane is up.
func (r *NodePoolReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	np := &hyperv1.NodePool{}
	if err := r.Client.Get(ctx, req.NamespacedName, np); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Options.now()
	if np.DeletionTimestamp != nil {
		return r.reconcileDelete(ctx, np, now)
	}
	if !controllerutil.ContainsFinalizer(np, Finalizer) {
		patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(np, Finalizer)
		if err := r.Client.Patch(ctx, np, patch); err != nil {
			return retryOnConflict(fmt.Errorf("add finalizer to NodePool %s: %w", req, err))
		}
	}

	hc := &hyperv1.HostedCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: np.Namespace, Name: np.Spec.ClusterName}, hc); err != nil {
		if apierrors.IsNotFound(err) {
			// HyperShift cannot reconcile a pool without its cluster either; the HostedCluster
			// watch brings us back when it appears.
			ctrl.LoggerFrom(ctx).V(1).Info("HostedCluster of NodePool not found", "cluster", np.Spec.ClusterName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}

	before := np.Status.DeepCopy()
	stepBefore := np.Annotations[LastNodeStepAnnotation]
	next := computeNodePoolStatus(np, hc, r.Options, now)
	if step := np.Annotations[LastNodeStepAnnotation]; step != stepBefore {
		// The step's time goes in first: if the status write then fails, the next pass waits
		// one more delay rather than taking two steps at once.
		if err := r.recordNodeStep(ctx, np, stepBefore); err != nil {
			return retryOnConflict(fmt.Errorf("record node step of NodePool %s: %w", req, err))
		}
	}
	if equality.Semantic.DeepEqual(before, &np.Status) {
		return resultAfter(next), nil
	}
	if err := r.Client.Status().Update(ctx, np); err != nil {
		return retryOnConflict(fmt.Errorf("update NodePool %s status: %w", req, err))
	}
	if c := findNodePoolCondition(np.Status.Conditions, hyperv1.NodePoolReadyConditionType); c != nil && c.Status == corev1.ConditionTrue {
		if old := findNodePoolCondition(before.Conditions, hyperv1.NodePoolReadyConditionType); old == nil || old.Status != corev1.ConditionTrue {
			nodePoolTransitions.WithLabelValues("ready").Inc()
		}
	}
	return resultAfter(next), nil
}

// LastNodeStepAnnotation records when the sim last added or removed one machine of a pool.
// Scaling moves one node per NodePoolReadyDelay, as Cluster API brings machines up (or drains
// them) one after the other, and the NodePool's status has no field for the time of the last
// step. The sim owns this metadata; Cluster Service's server-side apply leaves it alone.
const LastNodeStepAnnotation = "hypershift-sim.openhcp.io/last-node-step"

// lastNodeStep is the time of the pool's last node step, if any.
func lastNodeStep(np *hyperv1.NodePool) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, np.Annotations[LastNodeStepAnnotation])
	return t, err == nil
}

// recordNodeStep writes the step annotation computeNodePoolStatus set on np (old was its value
// before), conditionally on np's resourceVersion, and carries the new resourceVersion over to
// np for its status write.
func (r *NodePoolReconciler) recordNodeStep(ctx context.Context, np *hyperv1.NodePool, old string) error {
	obj := &hyperv1.NodePool{ObjectMeta: *np.ObjectMeta.DeepCopy()}
	base := obj.DeepCopy()
	if old == "" {
		delete(base.Annotations, LastNodeStepAnnotation)
	} else {
		base.Annotations[LastNodeStepAnnotation] = old
	}
	if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	np.ResourceVersion = obj.ResourceVersion
	return nil
}

// desiredReplicas is spec.replicas, or for an autoscaled pool the current count clamped into
// [min, max] (the sim has no workload to drive the autoscaler).
func desiredReplicas(np *hyperv1.NodePool) int32 {
	if as := np.Spec.AutoScaling; as != nil {
		return min(max(np.Status.Replicas, as.Min), as.Max)
	}
	if np.Spec.Replicas != nil {
		return *np.Spec.Replicas
	}
	return 0
}

// computeNodePoolStatus updates np.Status in place and returns when the next timed step is due.
func computeNodePoolStatus(np *hyperv1.NodePool, hc *hyperv1.HostedCluster, o Options, now time.Time) time.Duration {
	st := &np.Status
	ts := metav1.NewTime(now.Truncate(time.Second))
	set := func(typ string, status corev1.ConditionStatus, reason, message string) {
		setNodePoolCondition(&st.Conditions, hyperv1.NodePoolCondition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: np.Generation, LastTransitionTime: ts,
		})
	}

	if paused, until := pausedUntil(np.Spec.PausedUntil, now); paused {
		set(hyperv1.NodePoolReconciliationActiveConditionType, corev1.ConditionFalse, hyperv1.ReconciliationPausedConditionReason, "Reconciliation paused")
		return until
	}
	set(hyperv1.NodePoolReconciliationActiveConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason, "Reconciliation active on resource")
	set(hyperv1.NodePoolUpdateManagementEnabledConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason, "")
	set(hyperv1.NodePoolUpdatingConfigConditionType, corev1.ConditionFalse, hyperv1.AsExpectedReason, "")
	if as := np.Spec.AutoScaling; as != nil {
		set(hyperv1.NodePoolAutoscalingEnabledConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason,
			fmt.Sprintf("Maximum nodes: %d, Minimum nodes: %d", as.Max, as.Min))
	} else {
		set(hyperv1.NodePoolAutoscalingEnabledConditionType, corev1.ConditionFalse, hyperv1.AsExpectedReason, "")
	}
	if np.Spec.Management.AutoRepair {
		set(hyperv1.NodePoolAutorepairEnabledConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason, "")
	} else {
		set(hyperv1.NodePoolAutorepairEnabledConditionType, corev1.ConditionFalse, hyperv1.AsExpectedReason, "")
	}

	version, _, verr := ReleaseVersion(np.Spec.Release.Image)
	if verr != nil {
		set(hyperv1.NodePoolValidReleaseImageConditionType, corev1.ConditionFalse, hyperv1.NodePoolValidationFailedReason,
			"Failed to get release image: "+verr.Error())
		return 0
	}
	set(hyperv1.NodePoolValidReleaseImageConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason,
		"Using release image: "+np.Spec.Release.Image)

	hcAvailable := meta.FindStatusCondition(hc.Status.Conditions, string(hyperv1.HostedClusterAvailable))
	controlPlaneUp := hcAvailable != nil && hcAvailable.Status == metav1.ConditionTrue
	if controlPlaneUp {
		set(hyperv1.NodePoolReachedIgnitionEndpoint, corev1.ConditionTrue, hyperv1.AsExpectedReason, "")
	} else if st.Version == "" {
		set(hyperv1.NodePoolReachedIgnitionEndpoint, corev1.ConditionFalse, hyperv1.IgnitionNotReached, "")
	}

	desired := desiredReplicas(np)
	var next time.Duration
	if st.Replicas != desired || st.Version != version {
		// A rollout is under way. Its clock starts when Ready turned False (set just below on
		// the first pass), or when the control plane came up, whichever is later.
		ready := findNodePoolCondition(st.Conditions, hyperv1.NodePoolReadyConditionType)
		start := ts.Time
		if ready != nil && ready.Status == corev1.ConditionFalse {
			start = ready.LastTransitionTime.Time
		}
		switch {
		case !controlPlaneUp:
			next = 0 // the HostedCluster watch wakes us when it becomes Available
		case hcAvailable.LastTransitionTime.After(start):
			start = hcAvailable.LastTransitionTime.Time
			fallthrough
		default:
			// One machine per NodePoolReadyDelay, counted from the rollout's start or the last
			// step, whichever is later; status.replicas reports each machine as it becomes
			// available (or is gone), as HyperShift does. The version is reached with the last
			// machine (a version-only rollout takes one step).
			stepStart := start
			if t, ok := lastNodeStep(np); ok && t.After(stepStart) {
				stepStart = t
			}
			if left := remaining(now, stepStart, o.NodePoolReadyDelay); left > 0 {
				next = left
			} else {
				switch {
				case o.NodePoolReadyDelay <= 0:
					st.Replicas = desired // no time per node to model
				case st.Replicas < desired:
					st.Replicas++
				case st.Replicas > desired:
					st.Replicas--
				}
				if st.Replicas == desired {
					st.Version = version
				}
				if np.Annotations == nil {
					np.Annotations = map[string]string{}
				}
				np.Annotations[LastNodeStepAnnotation] = now.UTC().Format(time.RFC3339Nano)
				if st.Replicas != desired || st.Version != version {
					next = o.NodePoolReadyDelay
				}
			}
		}
	}

	if st.Version != version {
		set(hyperv1.NodePoolUpdatingVersionConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason,
			"Updating version in progress. Target version: "+version)
	} else {
		set(hyperv1.NodePoolUpdatingVersionConditionType, corev1.ConditionFalse, hyperv1.AsExpectedReason, "")
	}

	switch {
	case st.Replicas == desired && st.Version == version:
		msg, machinesStatus := hyperv1.AllIsWellMessage, corev1.ConditionTrue
		if desired == 0 {
			// HyperShift reports an empty pool as not-ready machines, as expected.
			msg, machinesStatus = "NodePool set to no replicas", corev1.ConditionFalse
		}
		set(hyperv1.NodePoolAllMachinesReadyConditionType, machinesStatus, hyperv1.AsExpectedReason, msg)
		set(hyperv1.NodePoolAllNodesHealthyConditionType, machinesStatus, hyperv1.AsExpectedReason, msg)
		set(hyperv1.NodePoolReadyConditionType, corev1.ConditionTrue, hyperv1.AsExpectedReason, "")
	case !controlPlaneUp:
		msg := fmt.Sprintf("Waiting for HostedCluster %s to be Available before machines can join", np.Spec.ClusterName)
		set(hyperv1.NodePoolAllMachinesReadyConditionType, corev1.ConditionFalse, reasonWaitingForControlPlane, msg)
		set(hyperv1.NodePoolAllNodesHealthyConditionType, corev1.ConditionFalse, reasonWaitingForControlPlane, msg)
		set(hyperv1.NodePoolReadyConditionType, corev1.ConditionFalse, reasonWaitingForAvailableMachines, msg)
	default:
		msg := fmt.Sprintf("Minimum availability requires %d replicas, current %d available", desired, st.Replicas)
		set(hyperv1.NodePoolAllMachinesReadyConditionType, corev1.ConditionFalse, reasonWaitingForAvailableMachines, msg)
		set(hyperv1.NodePoolAllNodesHealthyConditionType, corev1.ConditionFalse, reasonWaitingForAvailableMachines, msg)
		set(hyperv1.NodePoolReadyConditionType, corev1.ConditionFalse, reasonWaitingForAvailableMachines, msg)
	}
	return next
}

// reconcileDelete removes the finalizer once DeleteDelay has passed since the deletionTimestamp,
// standing in for HyperShift draining and deleting the pool's machines.
func (r *NodePoolReconciler) reconcileDelete(ctx context.Context, np *hyperv1.NodePool, now time.Time) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(np, Finalizer) {
		return reconcile.Result{}, nil
	}
	if left := remaining(now, np.DeletionTimestamp.Time, r.Options.DeleteDelay); left > 0 {
		return requeueAfter(left), nil
	}
	patch := client.MergeFromWithOptions(np.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(np, Finalizer)
	if err := r.Client.Patch(ctx, np, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return retryOnConflict(fmt.Errorf("remove finalizer from NodePool %s/%s: %w", np.Namespace, np.Name, err))
	}
	nodePoolTransitions.WithLabelValues("deleted").Inc()
	return reconcile.Result{}, nil
}

// poolsOfCluster maps a HostedCluster event to its NodePools.
func (r *NodePoolReconciler) poolsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	pools := &hyperv1.NodePoolList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list NodePools", "namespace", o.GetNamespace())
		return nil
	}
	var reqs []reconcile.Request
	for _, np := range pools.Items {
		if np.Spec.ClusterName == o.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&np)})
		}
	}
	return reqs
}

func findNodePoolCondition(conds []hyperv1.NodePoolCondition, t string) *hyperv1.NodePoolCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// setNodePoolCondition is meta.SetStatusCondition for HyperShift's NodePoolCondition type: the
// lastTransitionTime only moves when the status changes.
func setNodePoolCondition(conds *[]hyperv1.NodePoolCondition, c hyperv1.NodePoolCondition) {
	existing := findNodePoolCondition(*conds, c.Type)
	if existing == nil {
		*conds = append(*conds, c)
		return
	}
	if existing.Status != c.Status {
		existing.Status = c.Status
		existing.LastTransitionTime = c.LastTransitionTime
	}
	existing.Reason, existing.Message, existing.ObservedGeneration = c.Reason, c.Message, c.ObservedGeneration
}
