package controller

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/metricstest"
)

func (h *harness) setSubscription(state armdoc.SubscriptionState) {
	h.t.Helper()
	part := strings.ToLower(h.sub)
	body, _ := json.Marshal(armdoc.SubscriptionDocument{ID: h.sub, State: state})
	id := "/subscriptions/" + part
	cur, err := h.docs.Get(t0(), part, id)
	switch {
	case errors.Is(err, docstore.ErrNotFound):
		_, err = h.docs.Create(t0(), &docstore.Document{PartitionKey: part, ID: id, Type: docstore.TypeSubscription, ResourceID: id, Body: body})
	case err == nil:
		next := *cur
		next.Body = body
		_, err = h.docs.Replace(t0(), &next, cur.ETag)
	}
	if err != nil {
		h.t.Fatalf("write subscription: %v", err)
	}
}

// removeFromClusterService does what Cluster Service's controller does once a deleted
// cluster's ManifestWork is gone.
func (h *harness) removeFromClusterService(csID string) {
	h.t.Helper()
	c, err := h.csDB.GetCluster(t0(), csID)
	if err != nil {
		h.t.Fatalf("get cluster %s: %v", csID, err)
	}
	if !c.Deleting {
		h.t.Fatalf("cluster %s is not being deleted in cluster service", csID)
	}
	if err := h.csDB.RemoveCluster(t0(), csID, c.Revision); err != nil {
		h.t.Fatalf("remove cluster %s: %v", csID, err)
	}
}

func TestDeletedSubscriptionDeletesEverythingItOwns(t *testing.T) {
	h := newHarness(t)
	reg := newRegistry()
	// The deletes of the two canceled creates wait the grace after their creates' start
	// (armdoc.AfterCreate): a short one keeps the test short.
	h.startWith(Config{ResyncPeriod: time.Minute, NotFoundGrace: 2 * time.Second}, metrics.New(reg))
	// A running cluster, one still being created, and one the frontend recorded but never got
	// to Cluster Service.
	readyID, readyOp := h.createCluster("ready", 0)
	h.feedback(readyID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(readyOp, armdoc.StateSucceeded, 10*time.Second)
	busyID, busyOp := h.createCluster("busy", 0)
	h.waitStatus(busyOp, armdoc.StateProvisioning, 10*time.Second)
	orphanOp := "00000000-0000-4000-8000-000000000001"
	h.writeOperation(h.resourceID("orphan"), "0123456789abcdefghijklmnopqrstuv", orphanOp, armdoc.OperationCreate, armdoc.StateAccepted, 0, true)
	h.setSubscription(armdoc.SubscriptionRegistered)

	h.setSubscription(armdoc.SubscriptionDeleted)

	// Each resource gets a Delete operation and Cluster Service is asked to delete it.
	deletes := map[string]string{}
	deadline := time.Now().Add(15 * time.Second)
	for _, name := range []string{"ready", "busy", "orphan"} {
		for {
			rd, err := h.resource(name)
			if errors.Is(err, docstore.ErrNotFound) && name == "orphan" {
				break // Cluster Service never knew it: its delete finished after the grace
			}
			if err != nil {
				t.Fatalf("resource %s: %v", name, err)
			}
			if rd.ActiveOperationID != "" {
				if op := h.operation(rd.ActiveOperationID); op.Request == armdoc.OperationDelete {
					deletes[name] = op.ID
					if rd.ProvisioningState != armdoc.StateDeleting {
						t.Errorf("resource %s is %s while deleted, want Deleting", name, rd.ProvisioningState)
					}
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("resource %s has no delete operation: %+v", name, rd)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if op := h.operation(busyOp); op.Status != armdoc.StateCanceled || op.Error == nil {
		t.Errorf("the create running when the subscription was deleted is %s (%+v), want Canceled with an error", op.Status, op.Error)
	}
	// The documents are recorded first, then Cluster Service is called.
	for _, id := range []string{readyID, busyID} {
		waitUntil(t, 5*time.Second, "cluster "+id+" deleting in cluster service", func() bool {
			c, err := h.csDB.GetCluster(t0(), id)
			return err == nil && c.Deleting
		})
	}
	h.removeFromClusterService(readyID)
	h.removeFromClusterService(busyID)
	for _, name := range []string{"ready", "busy"} {
		h.waitStatus(deletes[name], armdoc.StateSucceeded, 10*time.Second)
		if _, err := h.resource(name); !errors.Is(err, docstore.ErrNotFound) {
			t.Errorf("resource %s after its delete: %v, want not found", name, err)
		}
	}
	if id, ok := deletes["orphan"]; ok {
		h.waitStatus(id, armdoc.StateSucceeded, 10*time.Second)
	}
	if _, err := h.resource("orphan"); !errors.Is(err, docstore.ErrNotFound) {
		t.Errorf("orphan resource after the cascade: %v, want not found", err)
	}
	if got := metricstest.Sum(t, reg, "backend_subscription_cascade_deletes_total"); got != 3 {
		t.Errorf("cascade deletes = %v, want 3 (one per resource, none repeated)", got)
	}
}

func TestRegisteredSubscriptionIsLeftAlone(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Second})
	csID, opID := h.createCluster("c01", 0)
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)
	h.setSubscription(armdoc.SubscriptionSuspended)
	time.Sleep(3 * time.Second) // a few resyncs
	rd, err := h.resource("c01")
	if err != nil || rd.ActiveOperationID != "" || rd.ProvisioningState != armdoc.StateSucceeded {
		t.Fatalf("resource of a suspended subscription: %+v %v, want Succeeded with no operation", rd, err)
	}
}
