package controller

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/metricstest"
)

// readyCluster creates cluster name and waits for its create to succeed; it returns the
// cluster's Cluster Service ID.
func (h *harness) readyCluster(name string) string {
	h.t.Helper()
	csID, op := h.createCluster(name, 0)
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(op, armdoc.StateSucceeded, 10*time.Second)
	return csID
}

// readyNodePool creates node pool name of cluster (Cluster Service ID clusterID) and waits for
// its create to succeed; it returns the pool's Cluster Service ID.
func (h *harness) readyNodePool(clusterID, cluster, name string) string {
	h.t.Helper()
	poolID, op := h.createNodePool(clusterID, cluster, name)
	h.poolFeedback(poolID, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: 2, CurrentVersion: "4.19.17"})
	h.waitStatus(op, armdoc.StateSucceeded, 10*time.Second)
	return poolID
}

// TestClusterDeleteRemovesMoreChildrenThanOneTransactionHolds: a cluster's node pools have no
// limit in number, and a store's transaction holds at most docstore.MaxTransactSteps steps, so
// the finished delete of a cluster with more children than that removes them in several
// transactions and still ends Succeeded with nothing left.
func TestClusterDeleteRemovesMoreChildrenThanOneTransactionHolds(t *testing.T) {
	for _, children := range []int{docstore.MaxTransactSteps - 2, docstore.MaxTransactSteps - 1, 2*docstore.MaxTransactSteps + 5} {
		t.Run(fmt.Sprintf("%d_children", children), func(t *testing.T) {
			h := newHarness(t)
			h.start(Config{ResyncPeriod: time.Minute})
			clusterID := h.readyCluster("c01")
			// The children's documents, as finished creates leave them (Cluster Service's
			// own pools do not matter here: it removes them with the cluster).
			part := strings.ToLower(h.sub)
			var docs []docstore.TxOp
			for i := range children {
				rid := h.poolResourceID("c01", fmt.Sprintf("np%03d", i))
				body, _ := json.Marshal(armdoc.ResourceDocument{ResourceID: rid, InternalID: fmt.Sprintf("pool%03d", i), ProvisioningState: armdoc.StateSucceeded})
				docs = append(docs, docstore.TxOp{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: part, ID: strings.ToLower(rid), Type: docstore.TypeResource, ResourceID: strings.ToLower(rid), Body: body}})
			}
			for len(docs) > 0 {
				n := min(len(docs), docstore.MaxTransactSteps)
				if _, err := h.docs.Transact(t0(), part, docs[:n]); err != nil {
					t.Fatalf("write child documents: %v", err)
				}
				docs = docs[n:]
			}

			delOp := uuid.NewString()
			h.writeOperation(h.resourceID("c01"), clusterID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
			if _, err := h.cs.DeleteCluster(t0(), &csv1.DeleteClusterRequest{Id: clusterID}); err != nil {
				t.Fatalf("delete cluster: %v", err)
			}
			h.removeFromClusterService(clusterID)
			h.waitStatus(delOp, armdoc.StateSucceeded, 30*time.Second)
			if _, err := h.resource("c01"); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("cluster document after its delete finished: %v, want not found", err)
			}
			page, err := h.docs.Query(t0(), docstore.Query{Partition: part, Type: docstore.TypeResource,
				ResourceIDPrefix: strings.ToLower(h.resourceID("c01")) + "/"})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Documents) != 0 {
				t.Fatalf("%d child documents left after their cluster's delete finished (first %s)", len(page.Documents), page.Documents[0].ID)
			}
		})
	}
}

// TestDeleteClusterServiceNeverReceivedIsSentAgain: the frontend records a delete (the resource
// Deleting, its operation) and then calls Cluster Service; if it stops in between, or its call
// ends without an answer, Cluster Service keeps the object as it was. The backend sends the
// delete itself once the frontend's grace has passed, and not before; the operation then ends
// as any delete does.
func TestDeleteClusterServiceNeverReceivedIsSentAgain(t *testing.T) {
	const grace = 3 * time.Second
	for _, tc := range []struct {
		name string
		// setup makes the object and returns the ARM resource ID, Cluster Service ID, and
		// reads of whether Cluster Service is deleting it and of removing it once deleting.
		setup func(h *harness) (rid, csID string, deleting func() bool, remove func())
	}{
		{"cluster", func(h *harness) (string, string, func() bool, func()) {
			csID := h.readyCluster("c01")
			return h.resourceID("c01"), csID, func() bool {
				c, err := h.csDB.GetCluster(t0(), csID)
				if err != nil {
					h.t.Fatalf("get cluster: %v", err)
				}
				return c.Deleting
			}, func() { h.removeFromClusterService(csID) }
		}},
		{"node_pool", func(h *harness) (string, string, func() bool, func()) {
			poolID := h.readyNodePool(h.readyCluster("c01"), "c01", "np1")
			return h.poolResourceID("c01", "np1"), poolID, func() bool {
				np, err := h.csDB.GetNodePool(t0(), poolID)
				if err != nil {
					h.t.Fatalf("get node pool: %v", err)
				}
				return np.Deleting
			}, func() { h.removePool(poolID) }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			reg := newRegistry()
			h.startWith(Config{ResyncPeriod: 500 * time.Millisecond, NotFoundGrace: grace}, metrics.New(reg))
			rid, csID, deleting, remove := tc.setup(h)

			// What the frontend wrote before it stopped: no Cluster Service call follows.
			delOp := uuid.NewString()
			written := time.Now()
			h.writePoolOperation(rid, csID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
			h.waitStatus(delOp, armdoc.StateDeleting, 10*time.Second)
			if deleting() && time.Since(written) < grace {
				t.Fatalf("the delete was sent within the frontend's grace (%s after the operation was written)", time.Since(written))
			}
			waitUntil(t, 30*time.Second, "cluster service deleting the object", deleting)
			// Counted once the call has returned, which may be after Cluster Service's write shows.
			waitUntil(t, 10*time.Second, "backend_delete_resends_total counting the delete sent again", func() bool {
				return metricstest.Sum(t, reg, "backend_delete_resends_total") >= 1
			})
			remove()
			h.waitStatus(delOp, armdoc.StateSucceeded, 30*time.Second)
			if _, err := h.childResource(rid); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("resource document after its delete finished: %v, want not found", err)
			}
		})
	}
}

// TestDeleteOfARunningCreateWaitsForTheCreatesCall: a DELETE that cancels a create whose
// Cluster Service call is still on its way finds nothing in Cluster Service. Finished then, it
// would remove the documents, and the create landing after would leave a cluster no document
// names. A delete recording the create's start (AfterCreate) waits NotFoundGrace after it: a
// create that lands meanwhile is deleted, and one that never does ends the delete after the
// wait.
func TestDeleteOfARunningCreateWaitsForTheCreatesCall(t *testing.T) {
	for _, tc := range []struct {
		name        string
		createLands bool
		// grace is the backend's: the create must land within it, after the delete's first
		// reconcile, which a busy machine can delay by seconds.
		grace time.Duration
	}{
		{"create_lands_after_the_delete", true, 20 * time.Second},
		{"create_never_lands", false, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			grace := tc.grace
			h := newHarness(t)
			h.start(Config{ResyncPeriod: 500 * time.Millisecond, NotFoundGrace: grace})
			rid := h.resourceID("c01")
			csID := strings.ReplaceAll(uuid.NewString(), "-", "")
			// The documents of the create and of the DELETE that canceled it, as the frontend
			// writes them; the create's Cluster Service call has not landed.
			createStart, delOp := h.writeCanceledCreate(rid, csID, 0)

			if tc.createLands {
				waitUntil(t, 10*time.Second, "the delete's first reconcile", func() bool { return h.operation(delOp).Status == armdoc.StateDeleting })
				h.createInClusterService(rid, csID)
				if since := time.Since(createStart); since >= grace {
					t.Fatalf("the create landed %s after it started, past the grace (%s) the test gives it", since, grace)
				}
				if st := h.operation(delOp).Status; st.Terminal() {
					t.Fatalf("delete ended %s before the create it canceled could land", st)
				}
				waitUntil(t, 30*time.Second, "cluster service deleting the cluster that landed", func() bool {
					c, err := h.csDB.GetCluster(t0(), csID)
					return err == nil && c.Deleting
				})
				h.removeFromClusterService(csID)
			}
			op := h.waitStatus(delOp, armdoc.StateSucceeded, grace+30*time.Second)
			if ended := op.EndTime.Sub(createStart); ended < grace {
				t.Fatalf("delete ended %s after the create started, within the create's grace (%s)", ended, grace)
			}
			if _, err := h.resource("c01"); !errors.Is(err, docstore.ErrNotFound) {
				t.Fatalf("resource document after its delete finished: %v, want not found", err)
			}
		})
	}
}

// TestDeleteWaitsForACreateRetriedLate: a client's retry of a create PUT calls Cluster
// Service's create again while the create runs, so a create that started long before the
// DELETE may have a call on its way that started just before it. The delete waits
// NotFoundGrace after its own start too, not only after the create's: finished earlier, the
// retried call landing after it would leave a cluster no document names.
func TestDeleteWaitsForACreateRetriedLate(t *testing.T) {
	const grace = 3 * time.Second
	h := newHarness(t)
	h.start(Config{ResyncPeriod: 500 * time.Millisecond, NotFoundGrace: grace})
	rid := h.resourceID("c01")
	csID := strings.ReplaceAll(uuid.NewString(), "-", "")
	// The create started almost a grace ago; its retry's call started just now.
	_, delOp := h.writeCanceledCreate(rid, csID, -grace+500*time.Millisecond)
	op := h.waitStatus(delOp, armdoc.StateSucceeded, 30*time.Second)
	if ended := op.EndTime.Sub(op.StartTime); ended < grace {
		t.Fatalf("delete ended %s after its own start, within the grace (%s) of a create call retried just before it", ended, grace)
	}
}

// TestDeleteOfACreateTheBackendSawEndsWithoutWaiting: once the backend has seen the create's
// object in Cluster Service (the resource records the revision it read), the create has landed,
// and its delete ends as soon as Cluster Service has removed it, not a grace later.
func TestDeleteOfACreateTheBackendSawEndsWithoutWaiting(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: 500 * time.Millisecond, NotFoundGrace: time.Hour})
	csID, createOp := h.createCluster("c01", 0)
	created := h.waitStatus(createOp, armdoc.StateProvisioning, 10*time.Second)
	delOp := uuid.NewString()
	h.writeOperationWith(h.resourceID("c01"), csID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false,
		func(op *armdoc.OperationDocument) { op.AfterCreate = &created.StartTime })
	h.keepRevision("c01", csID)
	if _, err := h.cs.DeleteCluster(t0(), &csv1.DeleteClusterRequest{Id: csID}); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	h.removeFromClusterService(csID)
	h.waitStatus(delOp, armdoc.StateSucceeded, 15*time.Second)
}

// keepRevision writes back on resource name's document the revision Cluster Service holds for
// csID, as the backend had recorded it before writeOperation replaced the document.
func (h *harness) keepRevision(name, csID string) {
	h.t.Helper()
	c, err := h.csDB.GetCluster(t0(), csID)
	if err != nil {
		h.t.Fatal(err)
	}
	part := strings.ToLower(h.sub)
	d, err := h.docs.Get(t0(), part, strings.ToLower(h.resourceID(name)))
	if err != nil {
		h.t.Fatal(err)
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		h.t.Fatal(err)
	}
	rd.InternalRevision = c.Revision
	next := *d
	next.Body, _ = json.Marshal(rd)
	if _, err := h.docs.Replace(t0(), &next, d.ETag); err != nil {
		h.t.Fatalf("record the revision on the resource: %v", err)
	}
}

// TestDeleteBeforeTheBackendSawTheCreateEndsWithoutWaiting: a DELETE right after a create's
// Cluster Service call landed, before the backend recorded anything of it, cancels the create
// with the resource showing no revision. The delete's first look at the object records one, so
// once Cluster Service has removed the object the delete ends at once, not a grace after the
// create.
func TestDeleteBeforeTheBackendSawTheCreateEndsWithoutWaiting(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: 500 * time.Millisecond, NotFoundGrace: time.Hour})
	rid := h.resourceID("c01")
	csID := strings.ReplaceAll(uuid.NewString(), "-", "")
	// The backend has not seen the create (its documents are written only now, with the
	// delete's): the resource holds no revision.
	h.createInClusterService(rid, csID)
	_, delOp := h.writeCanceledCreate(rid, csID, 0)
	if _, err := h.cs.DeleteCluster(t0(), &csv1.DeleteClusterRequest{Id: csID}); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	waitUntil(t, 10*time.Second, "the delete recording the revision it saw", func() bool {
		rd, err := h.resource("c01")
		return err == nil && rd.InternalRevision > 0
	})
	h.removeFromClusterService(csID)
	h.waitStatus(delOp, armdoc.StateSucceeded, 15*time.Second)
}

// writeCanceledCreate writes, as the frontend does, the documents of a create of rid (Cluster
// Service ID csID) and of the DELETE that canceled it, whose afterCreate is the create's start
// moved by shift; it returns that start and the delete's operation ID.
func (h *harness) writeCanceledCreate(rid, csID string, shift time.Duration) (time.Time, string) {
	createOp := uuid.NewString()
	h.writeOperation(rid, csID, createOp, armdoc.OperationCreate, armdoc.StateAccepted, 0, true)
	createStart := h.operation(createOp).StartTime.Add(shift)
	delOp := uuid.NewString()
	h.writeOperationWith(rid, csID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false,
		func(op *armdoc.OperationDocument) { op.AfterCreate = &createStart })
	return createStart, delOp
}
