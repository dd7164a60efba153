package controller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

func (h *harness) poolResourceID(cluster, name string) string {
	return h.resourceID(cluster) + "/nodePools/" + name
}

// createNodePool does what the frontend does for a node pool PUT: documents, then Cluster
// Service.
func (h *harness) createNodePool(clusterCSID, cluster, name string) (poolID, opID string) {
	h.t.Helper()
	rid := h.poolResourceID(cluster, name)
	poolID = strings.ReplaceAll(uuid.NewString(), "-", "")
	opID = uuid.NewString()
	h.writePoolOperation(rid, poolID, opID, armdoc.OperationCreate, armdoc.StateAccepted, 0, true)
	if _, err := h.np.CreateNodePool(t0(), &csv1.CreateNodePoolRequest{NodePool: &csv1.NodePool{
		Id: poolID, ClusterId: clusterCSID, ArmResourceId: rid,
		Spec: &csv1.NodePoolSpec{Replicas: 2, Platform: &csv1.NodePoolPlatform{VmSize: "Standard_D8s_v3"}},
	}}); err != nil {
		h.t.Fatalf("create node pool in cluster service: %v", err)
	}
	return poolID, opID
}

func (h *harness) writePoolOperation(rid, csID, opID string, req armdoc.OperationRequest, resState armdoc.ProvisioningState, revision int64, create bool) {
	h.t.Helper()
	part := strings.ToLower(h.sub)
	now := time.Now()
	op, _ := json.Marshal(armdoc.OperationDocument{ID: opID, Request: req, ExternalID: rid, InternalID: csID, InternalRevision: revision,
		Status: armdoc.StateAccepted, StartTime: now, LastTransitionTime: now, Location: "westus3"})
	ops := []docstore.TxOp{{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: part, ID: opID, Type: docstore.TypeOperation, ResourceID: strings.ToLower(rid), Body: op}}}
	body, _ := json.Marshal(armdoc.ResourceDocument{ResourceID: rid, InternalID: csID, ProvisioningState: resState, ActiveOperationID: opID})
	if create {
		ops = append(ops, docstore.TxOp{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: part, ID: strings.ToLower(rid), Type: docstore.TypeResource, ResourceID: strings.ToLower(rid), Body: body}})
	} else {
		cur, err := h.docs.Get(t0(), part, strings.ToLower(rid))
		if err != nil {
			h.t.Fatalf("get resource: %v", err)
		}
		next := *cur
		next.Body = body
		ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: &next, IfMatch: cur.ETag})
	}
	if _, err := h.docs.Transact(t0(), part, ops); err != nil {
		h.t.Fatalf("write operation documents: %v", err)
	}
}

// poolFeedback sets the pool's status in Cluster Service, as its controller does from Maestro.
func (h *harness) poolFeedback(poolID string, st *csv1.NodePoolStatus) {
	h.t.Helper()
	for i := 0; i < 10; i++ {
		np, err := h.csDB.GetNodePool(t0(), poolID)
		if err != nil {
			h.t.Fatalf("get node pool %s: %v", poolID, err)
		}
		if _, err = h.csDB.UpdateNodePoolStatus(t0(), poolID, np.Revision, st); err == nil {
			return
		} else if !errors.Is(err, csstore.ErrConflict) {
			h.t.Fatalf("update status of node pool %s: %v", poolID, err)
		}
	}
	h.t.Fatalf("update status of node pool %s: conflicts kept happening", poolID)
}

func (h *harness) removePool(poolID string) {
	h.t.Helper()
	np, err := h.csDB.GetNodePool(t0(), poolID)
	if err != nil {
		h.t.Fatalf("get node pool %s: %v", poolID, err)
	}
	if err := h.csDB.RemoveNodePool(t0(), poolID, np.Revision); err != nil {
		h.t.Fatalf("remove node pool %s: %v", poolID, err)
	}
}

func (h *harness) poolResource(cluster, name string) (*armdoc.ResourceDocument, error) {
	return h.childResource(h.poolResourceID(cluster, name))
}

// childResource reads the resource document of a cluster's child by its ARM ID.
func (h *harness) childResource(rid string) (*armdoc.ResourceDocument, error) {
	d, err := h.docs.Get(t0(), strings.ToLower(h.sub), strings.ToLower(rid))
	if err != nil {
		return nil, err
	}
	var rd armdoc.ResourceDocument
	return &rd, json.Unmarshal(d.Body, &rd)
}

// TestNodePoolOperationsFollowClusterService drives a node pool's create, scale and delete
// operations against the real Cluster Service API in both status modes.
func TestNodePoolOperationsFollowClusterService(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"watch_mode", Config{ResyncPeriod: time.Minute}},
		// No feed, no watch, no resync: only the poll sees the pool change.
		{"poll_mode", Config{StatusMode: ModePoll, PollInterval: 300 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start(tc.cfg)
			clusterID, clusterOp := h.createCluster("c01", 0)
			h.feedback(clusterID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
			h.waitStatus(clusterOp, armdoc.StateSucceeded, 10*time.Second)

			poolID, createOp := h.createNodePool(clusterID, "c01", "np1")
			h.poolFeedback(poolID, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_INSTALLING, Replicas: 1})
			h.waitStatus(createOp, armdoc.StateProvisioning, 10*time.Second)
			h.poolFeedback(poolID, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2, CurrentVersion: "4.19.17"})
			h.waitStatus(createOp, armdoc.StateSucceeded, 10*time.Second)
			if rd, err := h.poolResource("c01", "np1"); err != nil || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
				t.Fatalf("pool resource after create: %+v, %v", rd, err)
			}

			// Scale to 3: the pool stays READY with 2 nodes until Cluster Service sees 3.
			cur, err := h.np.GetNodePool(t0(), &csv1.GetNodePoolRequest{Id: poolID})
			if err != nil {
				t.Fatal(err)
			}
			spec := cur.GetSpec()
			spec.Replicas = 3
			updated, err := h.np.UpdateNodePool(t0(), &csv1.UpdateNodePoolRequest{Id: poolID, Update: csv1.FullNodePoolUpdate(spec), Revision: cur.GetRevision()})
			if err != nil {
				t.Fatalf("update node pool: %v", err)
			}
			scaleOp := uuid.NewString()
			h.writePoolOperation(h.poolResourceID("c01", "np1"), poolID, scaleOp, armdoc.OperationUpdate, armdoc.StateUpdating, updated.GetSpecRevision(), false)
			h.waitStatus(scaleOp, armdoc.StateUpdating, 10*time.Second)
			time.Sleep(2 * tc.cfg.PollInterval)
			if got := h.operation(scaleOp).Status; got != armdoc.StateUpdating {
				t.Fatalf("scale operation is %s while the pool still has 2 of 3 nodes", got)
			}
			h.poolFeedback(poolID, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 3, CurrentVersion: "4.19.17"})
			h.waitStatus(scaleOp, armdoc.StateSucceeded, 10*time.Second)

			delOp := uuid.NewString()
			h.writePoolOperation(h.poolResourceID("c01", "np1"), poolID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
			if _, err := h.np.DeleteNodePool(t0(), &csv1.DeleteNodePoolRequest{Id: poolID}); err != nil {
				t.Fatalf("delete node pool: %v", err)
			}
			h.waitStatus(delOp, armdoc.StateDeleting, 10*time.Second)
			if _, err := h.poolResource("c01", "np1"); err != nil {
				t.Fatalf("pool document gone before Cluster Service removed the pool: %v", err)
			}
			h.removePool(poolID)
			h.waitStatus(delOp, armdoc.StateSucceeded, 10*time.Second)
			if _, err := h.poolResource("c01", "np1"); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("pool document after delete: %v, want not found", err)
			}
			if _, err := h.resource("c01"); err != nil {
				t.Fatalf("the cluster document went with its pool: %v", err)
			}
		})
	}
}

// TestClusterDeleteRemovesItsNodePools: Cluster Service deletes a cluster's pools with it, so
// the finished cluster delete takes the pool documents along, and a create still running on a
// pool ends Canceled.
func TestClusterDeleteRemovesItsNodePools(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute})
	clusterID := h.readyCluster("c01")
	poolA := h.readyNodePool(clusterID, "c01", "npa")
	poolB, opB := h.createNodePool(clusterID, "c01", "npb")

	delOp := uuid.NewString()
	h.writeOperation(h.resourceID("c01"), clusterID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
	if _, err := h.cs.DeleteCluster(t0(), &csv1.DeleteClusterRequest{Id: clusterID}); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	if op := h.waitStatus(opB, armdoc.StateCanceled, 10*time.Second); op.Error == nil {
		t.Fatalf("canceled pool create without an error")
	}
	h.removePool(poolA)
	h.removePool(poolB)
	h.removeFromClusterService(clusterID)
	h.waitStatus(delOp, armdoc.StateSucceeded, 10*time.Second)
	for _, name := range []string{"npa", "npb"} {
		if _, err := h.poolResource("c01", name); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("pool %s document after its cluster was deleted: %v, want not found", name, err)
		}
	}
}

// TestDeletedSubscriptionRemovesNodePools: the cascade deletes the cluster, which takes its
// pools; a pool document whose cluster document is already gone is removed directly.
func TestDeletedSubscriptionRemovesNodePools(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: 500 * time.Millisecond})
	clusterID, clusterOp := h.createCluster("c01", 0)
	h.feedback(clusterID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(clusterOp, armdoc.StateSucceeded, 10*time.Second)
	poolID, opID := h.createNodePool(clusterID, "c01", "np1")
	h.poolFeedback(poolID, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2, CurrentVersion: "4.19.17"})
	h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)
	// An orphan: a pool document of a cluster whose document is gone.
	orphan := uuid.NewString()
	h.writePoolOperation(h.poolResourceID("gone", "np9"), strings.ReplaceAll(uuid.NewString(), "-", ""), orphan, armdoc.OperationCreate, armdoc.StateSucceeded, 0, true)

	h.setSubscription(armdoc.SubscriptionDeleted)
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := h.csDB.GetCluster(t0(), clusterID)
		if err == nil && c.Deleting {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cascade did not delete the cluster in Cluster Service: %+v %v", c, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	np, err := h.csDB.GetNodePool(t0(), poolID)
	if err != nil || !np.Deleting {
		t.Fatalf("the pool is not being deleted with its cluster: %+v %v", np, err)
	}
	h.removePool(poolID)
	h.removeFromClusterService(clusterID)
	for {
		_, errPool := h.poolResource("c01", "np1")
		_, errOrphan := h.poolResource("gone", "np9")
		_, errCluster := h.resource("c01")
		if errors.Is(errPool, docstore.ErrNotFound) && errors.Is(errOrphan, docstore.ErrNotFound) && errors.Is(errCluster, docstore.ErrNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("documents left after the cascade: pool %v, orphan %v, cluster %v", errPool, errOrphan, errCluster)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
