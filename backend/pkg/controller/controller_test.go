package controller

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/server/servertest"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"

	"github.com/openhcp/openhcp/backend/pkg/metrics"
)

// harness runs the backend against real parts: the PostgreSQL document store, and Cluster
// Service's own gRPC server over its own PostgreSQL store. Cluster Service's Maestro controller
// is not run; the test plays the status feedback by writing cluster status through the Cluster
// Service store, which is what that controller does with Maestro's feedback.
type harness struct {
	t     *testing.T
	pg    *pgserver.Server
	dsn   string
	docs  docstore.Store
	cs    csv1.ClustersClient
	np    csv1.NodePoolsClient
	ea    csv1.ExternalAuthsClient
	csDB  *csstore.Store
	sub   string
	shard string
	// notifyURI, when set, goes into every operation written, as Azure-AsyncNotificationUri.
	notifyURI string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	pg := pgservertest.Start(t)
	dsn := pgservertest.NewDatabase(t, pg)
	docs, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("open document store: %v", err)
	}
	t.Cleanup(docs.Close)
	cs := servertest.Start(t, pg)
	csDB, conn := cs.Store, cs.Conn
	h := &harness{t: t, pg: pg, dsn: dsn, docs: docs, cs: csv1.NewClustersClient(conn), np: csv1.NewNodePoolsClient(conn), ea: csv1.NewExternalAuthsClient(conn), csDB: csDB, sub: uuid.NewString(), shard: "mgmt-1"}
	if _, err := csv1.NewProvisionShardsClient(conn).RegisterShard(ctx, &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
		Name: h.shard, Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: 10,
	}}); err != nil {
		t.Fatalf("register shard: %v", err)
	}
	return h
}

// start runs a backend controller until the test ends or stop is called.
func (h *harness) start(cfg Config) (stop func()) {
	return h.startWith(cfg, nil)
}

func (h *harness) startWith(cfg Config, m *metrics.Metrics) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	if cfg.NodePools == nil {
		cfg.NodePools = h.np
	}
	c := New(h.docs, h.cs, slog.New(slog.NewTextHandler(io.Discard, nil)), m, cfg)
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	stop = func() { cancel(); <-done }
	h.t.Cleanup(stop)
	return stop
}

func (h *harness) resourceID(name string) string {
	return "/subscriptions/" + h.sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
}

// createCluster does what the frontend does for a PUT: documents first, then Cluster Service.
func (h *harness) createCluster(name string, startedAgo time.Duration) (csID, opID string) {
	h.t.Helper()
	rid := h.resourceID(name)
	csID = strings.ReplaceAll(uuid.NewString(), "-", "")
	opID = uuid.NewString()
	h.writeOperation(rid, csID, opID, armdoc.OperationCreate, armdoc.StateAccepted, startedAgo, true)
	h.createInClusterService(rid, csID)
	return csID, opID
}

// createInClusterService makes the cluster csID of ARM resource rid in Cluster Service, as the
// frontend's create call does.
func (h *harness) createInClusterService(rid, csID string) {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.cs.CreateCluster(ctx, &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id: csID, ArmResourceId: rid,
		Spec: &csv1.ClusterSpec{VersionId: "4.19.17", ChannelGroup: "stable", Azure: &csv1.AzureSpec{
			SubscriptionId: h.sub, ResourceGroup: "rg", Location: "westus3",
			SubnetId:               "/subscriptions/" + h.sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
			NetworkSecurityGroupId: "/subscriptions/" + h.sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
		}},
	}}); err != nil {
		h.t.Fatalf("create cluster in cluster service: %v", err)
	}
}

func (h *harness) writeOperation(rid, csID, opID string, req armdoc.OperationRequest, resState armdoc.ProvisioningState, startedAgo time.Duration, createResource bool) {
	h.t.Helper()
	h.writeOperationWith(rid, csID, opID, req, resState, startedAgo, createResource, func(*armdoc.OperationDocument) {})
}

// writeOperationWith is writeOperation with edit applied to the operation before it is written.
func (h *harness) writeOperationWith(rid, csID, opID string, req armdoc.OperationRequest, resState armdoc.ProvisioningState, startedAgo time.Duration, createResource bool, edit func(*armdoc.OperationDocument)) {
	h.t.Helper()
	part := strings.ToLower(h.sub)
	start := time.Now().Add(-startedAgo)
	doc := armdoc.OperationDocument{ID: opID, Request: req, ExternalID: rid, InternalID: csID,
		Status: armdoc.StateAccepted, StartTime: start, LastTransitionTime: start, Location: "westus3", NotificationURI: h.notifyURI}
	edit(&doc)
	op, _ := json.Marshal(doc)
	ops := []docstore.TxOp{{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: part, ID: opID, Type: docstore.TypeOperation, ResourceID: strings.ToLower(rid), Body: op}}}
	rd := armdoc.ResourceDocument{ResourceID: rid, InternalID: csID, ProvisioningState: resState, ActiveOperationID: opID}
	body, _ := json.Marshal(rd)
	if createResource {
		ops = append(ops, docstore.TxOp{Kind: docstore.TxCreate, Doc: &docstore.Document{PartitionKey: part, ID: strings.ToLower(rid), Type: docstore.TypeResource, ResourceID: strings.ToLower(rid), Body: body}})
	} else {
		cur, err := h.docs.Get(context.Background(), part, strings.ToLower(rid))
		if err != nil {
			h.t.Fatalf("get resource: %v", err)
		}
		next := *cur
		next.Body = body
		ops = append(ops, docstore.TxOp{Kind: docstore.TxReplace, Doc: &next, IfMatch: cur.ETag})
	}
	if _, err := h.docs.Transact(context.Background(), part, ops); err != nil {
		h.t.Fatalf("write operation documents: %v", err)
	}
}

// feedback sets the cluster's state in Cluster Service, as its controller does from Maestro.
func (h *harness) feedback(csID string, st *csv1.ClusterStatus) {
	h.t.Helper()
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		c, err := h.csDB.GetCluster(ctx, csID)
		if err != nil {
			h.t.Fatalf("get cluster %s: %v", csID, err)
		}
		if _, err = h.csDB.UpdateStatus(ctx, csID, c.Revision, st); err == nil {
			return
		} else if !errors.Is(err, csstore.ErrConflict) {
			h.t.Fatalf("update status of %s: %v", csID, err)
		}
	}
	h.t.Fatalf("update status of %s: conflicts kept happening", csID)
}

func (h *harness) operation(opID string) armdoc.OperationDocument {
	h.t.Helper()
	d, err := h.docs.Get(context.Background(), strings.ToLower(h.sub), opID)
	if err != nil {
		h.t.Fatalf("get operation %s: %v", opID, err)
	}
	var op armdoc.OperationDocument
	if err := json.Unmarshal(d.Body, &op); err != nil {
		h.t.Fatal(err)
	}
	return op
}

func (h *harness) resource(name string) (*armdoc.ResourceDocument, error) {
	d, err := h.docs.Get(context.Background(), strings.ToLower(h.sub), strings.ToLower(h.resourceID(name)))
	if err != nil {
		return nil, err
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(d.Body, &rd); err != nil {
		return nil, err
	}
	return &rd, nil
}

func (h *harness) waitStatus(opID string, want armdoc.ProvisioningState, timeout time.Duration) armdoc.OperationDocument {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		op := h.operation(opID)
		if op.Status == want {
			return op
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("operation %s is %s after %s, want %s (error %+v)", opID, op.Status, timeout, want, op.Error)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOperationsFollowClusterService(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    *csv1.ClusterStatus
		want      armdoc.ProvisioningState
		wantCode  string
		wantInMsg string
	}{
		{
			name:   "ready_cluster_completes_create",
			status: &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, Message: "Available"},
			want:   armdoc.StateSucceeded,
		},
		{
			name:      "failed_cluster_fails_create_with_cluster_service_reason",
			status:    &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCode: "InvalidReleaseImage", Message: "release image 4.19.17 cannot be pulled"},
			want:      armdoc.StateFailed,
			wantCode:  "InvalidReleaseImage",
			wantInMsg: "cannot be pulled",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.start(Config{ResyncPeriod: time.Minute})
			csID, opID := h.createCluster("c01", 0)
			h.waitStatus(opID, armdoc.StateProvisioning, 10*time.Second)
			h.feedback(csID, tc.status)
			op := h.waitStatus(opID, tc.want, 10*time.Second)
			if op.EndTime == nil {
				t.Errorf("terminal operation has no endTime")
			}
			if tc.wantCode != "" {
				if op.Error == nil || op.Error.Code != tc.wantCode || !strings.Contains(op.Error.Message, tc.wantInMsg) {
					t.Errorf("operation error = %+v, want code %s with %q", op.Error, tc.wantCode, tc.wantInMsg)
				}
			}
			rd, err := h.resource("c01")
			if err != nil {
				t.Fatalf("get resource: %v", err)
			}
			if rd.ProvisioningState != tc.want || rd.ActiveOperationID != "" {
				t.Errorf("resource state %s, active operation %q; want %s and none", rd.ProvisioningState, rd.ActiveOperationID, tc.want)
			}
			// The state is stored with the revision it was read at, so that a reader showing
			// Cluster Service's status beside it (the frontend's status cache) shows none older.
			c, err := h.csDB.GetCluster(context.Background(), csID)
			if err != nil {
				t.Fatal(err)
			}
			if rd.InternalRevision != c.Revision {
				t.Errorf("resource internalRevision %d, want the revision observed, %d", rd.InternalRevision, c.Revision)
			}
		})
	}
}

func TestDeleteCompletesWhenClusterServiceForgetsTheCluster(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute})
	csID, opID := h.createCluster("c01", 0)
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)

	delOp := uuid.NewString()
	h.writeOperation(h.resourceID("c01"), csID, delOp, armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
	ctx := context.Background()
	if _, err := h.cs.DeleteCluster(ctx, &csv1.DeleteClusterRequest{Id: csID}); err != nil {
		t.Fatalf("delete in cluster service: %v", err)
	}
	h.waitStatus(delOp, armdoc.StateDeleting, 10*time.Second)
	if _, err := h.resource("c01"); err != nil {
		t.Fatalf("resource gone before cluster service finished: %v", err)
	}
	c, err := h.csDB.GetCluster(ctx, csID)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.csDB.RemoveCluster(ctx, csID, c.Revision); err != nil {
		t.Fatalf("remove cluster: %v", err)
	}
	h.waitStatus(delOp, armdoc.StateSucceeded, 10*time.Second)
	if _, err := h.resource("c01"); !errors.Is(err, docstore.ErrNotFound) {
		t.Fatalf("resource document after delete: err %v, want not found", err)
	}
}

func TestOperationCompletesAfterBackendRestart(t *testing.T) {
	h := newHarness(t)
	stop := h.start(Config{ResyncPeriod: time.Minute})
	csID, opID := h.createCluster("c01", 0)
	h.waitStatus(opID, armdoc.StateProvisioning, 10*time.Second)
	stop()
	// The cluster becomes ready while no backend runs: the next one must still notice.
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	time.Sleep(200 * time.Millisecond)
	if got := h.operation(opID).Status; got != armdoc.StateProvisioning {
		t.Fatalf("operation changed to %s with no backend running", got)
	}
	h.start(Config{ResyncPeriod: time.Minute})
	h.waitStatus(opID, armdoc.StateSucceeded, 10*time.Second)
}

func TestStuckOperationFailsAtDeadline(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute, CreateDeadline: 2 * time.Second})
	_, opID := h.createCluster("c01", 0)
	h.waitStatus(opID, armdoc.StateProvisioning, 10*time.Second)
	op := h.waitStatus(opID, armdoc.StateFailed, 10*time.Second)
	if op.Error == nil || op.Error.Code != "OperationTimedOut" {
		t.Fatalf("operation error = %+v, want OperationTimedOut", op.Error)
	}
	if rd, err := h.resource("c01"); err != nil || rd.ProvisioningState != armdoc.StateFailed {
		t.Fatalf("resource after deadline: %+v, %v; want Failed", rd, err)
	}
}

func TestCreateWhoseClusterNeverReachedClusterServiceFailsAfterGrace(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute, NotFoundGrace: time.Second})
	// The frontend wrote the documents and crashed before calling Cluster Service.
	opID := uuid.NewString()
	h.writeOperation(h.resourceID("orphan"), "0123456789abcdefghijklmnopqrstuv", opID, armdoc.OperationCreate, armdoc.StateAccepted, 0, true)
	time.Sleep(300 * time.Millisecond)
	if got := h.operation(opID).Status; got.Terminal() {
		t.Fatalf("operation ended %s inside the grace period", got)
	}
	op := h.waitStatus(opID, armdoc.StateFailed, 10*time.Second)
	if op.Error == nil || op.Error.Message == "" {
		t.Fatalf("failed operation without an error message: %+v", op)
	}
}

func t0() context.Context { return context.Background() }

func TestUpdateWhoseCallWasNeverRecordedFailsAfterGrace(t *testing.T) {
	h := newHarness(t)
	h.start(Config{ResyncPeriod: time.Minute, NotFoundGrace: time.Second})
	csID, createID := h.createCluster("c01", 0)
	h.feedback(csID, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY})
	h.waitStatus(createID, armdoc.StateSucceeded, 10*time.Second)
	// The frontend wrote an update and stopped before recording Cluster Service's answer
	// (startUpdate): the operation has no InternalRevision. The cluster's READY is from before.
	opID := uuid.NewString()
	h.writeOperation(h.resourceID("c01"), csID, opID, armdoc.OperationUpdate, armdoc.StateUpdating, 0, false)
	time.Sleep(300 * time.Millisecond)
	if got := h.operation(opID).Status; got.Terminal() {
		t.Fatalf("operation ended %s inside the grace period, on a READY from before the update", got)
	}
	op := h.waitStatus(opID, armdoc.StateFailed, 10*time.Second)
	if op.Error == nil || op.Error.Code != UpdateNotRecordedCode {
		t.Fatalf("operation error = %+v, want %s", op.Error, UpdateNotRecordedCode)
	}
	if rd, err := h.resource("c01"); err != nil || rd.ProvisioningState != armdoc.StateFailed || rd.ActiveOperationID != "" {
		t.Fatalf("resource after the grace: %+v, %v; want Failed and free for the next request", rd, err)
	}
}
