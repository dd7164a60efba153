package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// nodePoolKeyPrefix marks node pools in the work queue; cluster IDs ([0-9a-v]{32}) never
// contain a "/".
const nodePoolKeyPrefix = "np/"

func nodePoolKey(id string) string { return nodePoolKeyPrefix + id }

func nodePoolIDFromKey(key string) (string, bool) { return strings.CutPrefix(key, nodePoolKeyPrefix) }

// followNodePools enqueues node pools changed in the store after rev, and the cluster of every
// deleted one (a deleting cluster waits for its pools), and returns the last revision seen.
func (c *Controller) followNodePools(ctx context.Context, rev int64) int64 {
	return followEvents(ctx, c.log, "node pool", rev, c.st.NodePools().EventsAfter, func(ev store.NodePoolEvent) int64 { return ev.Revision }, func(ev store.NodePoolEvent) {
		if ev.Type == csv1.EventType_EVENT_TYPE_DELETED {
			c.queue.Add(ev.Object.ClusterID)
			return
		}
		key := nodePoolKey(ev.Object.ID)
		c.mu.Lock()
		own := c.written[key] == ev.Revision
		c.mu.Unlock()
		if !own {
			c.queue.Add(key)
		}
	})
}

// enqueueNodePools enqueues every node pool of a cluster.
func (c *Controller) enqueueNodePools(ctx context.Context, clusterID string) ([]*store.NodePool, error) {
	pools, err := c.st.NodePools().List(ctx, clusterID, "", 0)
	if err != nil {
		return nil, fmt.Errorf("list node pools of cluster %s: %w", clusterID, err)
	}
	for _, np := range pools {
		c.queue.Add(nodePoolKey(np.ID))
	}
	return pools, nil
}

// ReconcileNodePool brings one node pool one step closer to its record: it waits for the
// cluster's work to be applied before sending the pool's own, applies it, and derives the
// status from its feedback; a deleting pool's work is deleted and the pool removed once it is gone.
func (c *Controller) ReconcileNodePool(ctx context.Context, id string) (time.Duration, error) {
	key := nodePoolKey(id)
	np, err := c.st.NodePools().Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("get node pool %s: %w", id, err)
	}
	cl, err := c.st.GetCluster(ctx, np.ClusterID)
	if err != nil {
		// The foreign key keeps the cluster while it has pools.
		return 0, fmt.Errorf("get cluster %s of node pool %s: %w", np.ClusterID, id, err)
	}
	log := c.log.With("nodePoolID", id, "clusterID", cl.ID, "shard", cl.Shard, "revision", np.Revision)
	if np.Deleting {
		return c.reconcileNodePoolDelete(ctx, log, np, cl)
	}
	// The stored spec has its version: model.DefaultNodePool gave it one before it was stored.
	wantVersion := np.Spec.GetVersionId()
	// The pool's NodePool goes into the namespace the cluster's work creates, next to its
	// HostedCluster: send it only once that work is applied. A pool already sent carries on
	// even if the cluster's Applied condition flickers.
	neverSent := np.Status.GetState() == csv1.NodePoolState_NODE_POOL_STATE_PENDING
	if neverSent && (cl.Shard == "" || !cl.Status.GetApplied() || cl.Deleting) {
		st := &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_PENDING,
			Message: "Waiting for the cluster's control plane manifests to be applied."}
		if _, err := c.writeNodePoolStatus(ctx, np, st); err != nil {
			return 0, err
		}
		// The cluster's reconcile enqueues its pools when it becomes applied; this is a fallback.
		return c.cfg.DeletePollPeriod, nil
	}

	work, steadyHash, err := c.withFeedbackMode(key, np.Status.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY,
		func(watch bool) (*workv1.ManifestWork, error) {
			return manifests.BuildNodePool(c.cfg.Manifests, manifests.NodePool{ID: np.ID, ARMResourceID: np.ARMResourceID, Spec: np.Spec,
				Cluster: manifests.Cluster{ID: cl.ID, ARMResourceID: cl.ARMResourceID, Spec: cl.Spec}, WatchStatus: watch})
		})
	if err != nil {
		st := &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_ERROR, ErrorCode: "InvalidNodePoolSpec", Message: err.Error()}
		_, werr := c.writeNodePoolStatus(ctx, np, st)
		log.Error("cannot build node pool manifests", "error", err)
		return 0, werr
	}
	hash := work.Annotations[manifests.AnnotationSpecHash]
	c.mu.Lock()
	sent := c.applied[key] == hash
	c.mu.Unlock()
	if !sent {
		refused, err := c.applyOrRefused(ctx, log, key, cl.Shard, hash, "node pool", "the node pool's labels and taints", work)
		if err != nil {
			return 0, fmt.Errorf("apply work of node pool %s to %s: %w", id, cl.Shard, err)
		}
		if refused != nil {
			return 0, c.writeNodePoolRefused(ctx, np, refused)
		}
		c.mu.Lock()
		c.applied[key], c.steady[key] = hash, steadyHash
		c.mu.Unlock()
		log.Info("node pool manifest work applied", "work", work.Name, "feedback", manifests.FeedbackMode(work))
	}
	got, err := c.readWork(ctx, cl.Shard, work.Name, hash)
	if apierrors.IsNotFound(err) {
		got = nil
		c.mu.Lock()
		delete(c.applied, key)
		c.mu.Unlock()
	} else if err != nil {
		return 0, fmt.Errorf("get work of node pool %s from %s: %w", id, cl.Shard, err)
	}
	specHash, err := manifests.NodePoolSpecHashOf(work)
	if err != nil {
		return 0, err
	}
	st, err := DeriveNodePoolStatus(got, np.Spec, wantVersion, specHash, false)
	if err != nil {
		return 0, err
	}
	if partialReport(got, np.Status.GetConditions(), st.GetConditions(), st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_INSTALLING) {
		log.Debug("work status without NodePool feedback; the stored status stands")
		st = proto.Clone(np.Status).(*csv1.NodePoolStatus)
	} else if _, err := c.writeNodePoolStatus(ctx, np, st); err != nil {
		return 0, err
	}
	if err := c.advanceNodePoolUpgrade(ctx, log, np.ID, st); err != nil {
		return 0, err
	}
	if got == nil {
		return c.cfg.DeletePollPeriod, nil
	}
	settled := st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY || st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_ERROR
	recheck, _, err := c.repairWork(ctx, log, "node_pool", key, cl.Shard, got, settled)
	if err != nil {
		return 0, err
	}
	return sooner(recheck, c.pollWhenSteady(st.GetState() == csv1.NodePoolState_NODE_POOL_STATE_READY, hash, steadyHash)), nil
}

func (c *Controller) reconcileNodePoolDelete(ctx context.Context, log *slog.Logger, np *store.NodePool, cl *store.Cluster) (time.Duration, error) {
	if cl.Shard != "" {
		name := manifests.NodePoolWorkName(np.ID)
		if err := c.works.Delete(ctx, cl.Shard, name); err != nil {
			return 0, fmt.Errorf("delete work of node pool %s on %s: %w", np.ID, cl.Shard, err)
		}
		got, err := c.works.Get(ctx, cl.Shard, name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, fmt.Errorf("get work of deleting node pool %s: %w", np.ID, err)
		default:
			st, err := DeriveNodePoolStatus(got, np.Spec, np.Spec.GetVersionId(), "", true)
			if err != nil {
				return 0, err
			}
			if _, err := c.writeNodePoolStatus(ctx, np, st); err != nil {
				return 0, err
			}
			return c.cfg.DeletePollPeriod, nil
		}
	}
	err := c.st.NodePools().Remove(ctx, np.ID, np.Revision)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	if err != nil {
		return 0, fmt.Errorf("remove node pool %s: %w", np.ID, err)
	}
	log.Info("node pool deleted")
	c.forget(nodePoolKey(np.ID))
	c.queue.Add(cl.ID) // a deleting cluster waits for its pools
	return 0, nil
}

func (c *Controller) writeNodePoolStatus(ctx context.Context, np *store.NodePool, st *csv1.NodePoolStatus) (*store.NodePool, error) {
	if np.StatusUnchanged(st) {
		return np, nil
	}
	out, err := c.st.NodePools().UpdateStatus(ctx, np.ID, np.Revision, st)
	if err != nil {
		return nil, fmt.Errorf("write status of node pool %s: %w", np.ID, err)
	}
	c.mu.Lock()
	c.written[nodePoolKey(np.ID)] = out.Revision
	c.mu.Unlock()
	c.log.Info("node pool status changed", "nodePoolID", np.ID, "clusterID", np.ClusterID, "state", st.State.String(),
		"from", np.Status.GetState().String(), "replicas", st.Replicas, "version", st.CurrentVersion, "revision", out.Revision)
	return out, nil
}
