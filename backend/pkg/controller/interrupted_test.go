package controller

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// TestUnknownChildAfterGraceEndsByWhatTheDocumentsShow: a cluster's child (node pool, external
// auth) that Cluster Service does not know once the grace has passed either never reached it
// (the frontend stopped before its call: Failed) or was removed by a delete the backend did not
// see under way (it was paused or restarting across the child's READY and the delete): its
// cluster's document being deleted or gone, or its own delete under way, ends the create or
// update Canceled. A delete of an unknown child still ends Succeeded.
func TestUnknownChildAfterGraceEndsByWhatTheDocumentsShow(t *testing.T) {
	type clusterDoc int
	const (
		clusterPresent clusterDoc = iota
		clusterDeleting
		clusterGone
	)
	for _, tc := range []struct {
		name     string
		child    string // "nodePools" or "externalAuths"
		request  armdoc.OperationRequest
		revision int64
		cluster  clusterDoc
		// ownDelete: the child's own delete is under way (its document Deleting under another
		// operation).
		ownDelete bool
		// childGone: the child's document is removed, as a finished cluster delete does (the
		// cluster's document may be there again: a new cluster of the same name).
		childGone bool
		want      armdoc.ProvisioningState
		wantCode  string
		wantInMsg string
	}{
		{"pool_create_cluster_gone_is_canceled", "nodePools", armdoc.OperationCreate, 0, clusterGone, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_create_cluster_deleting_is_canceled", "nodePools", armdoc.OperationCreate, 0, clusterDeleting, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_create_never_reached_cluster_service_fails", "nodePools", armdoc.OperationCreate, 0, clusterPresent, false, false, armdoc.StateFailed, "InternalServerError", "no longer known"},
		{"pool_create_own_delete_under_way_is_canceled", "nodePools", armdoc.OperationCreate, 0, clusterPresent, true, false, armdoc.StateCanceled, "Canceled", "node pool was deleted"},
		{"pool_update_cluster_deleting_is_canceled", "nodePools", armdoc.OperationUpdate, 4, clusterDeleting, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_update_cluster_gone_is_canceled", "nodePools", armdoc.OperationUpdate, 4, clusterGone, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_update_cluster_present_fails", "nodePools", armdoc.OperationUpdate, 4, clusterPresent, false, false, armdoc.StateFailed, "InternalServerError", "no longer known"},
		{"pool_create_document_gone_with_cluster_created_again_is_canceled", "nodePools", armdoc.OperationCreate, 0, clusterPresent, false, true, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_update_document_gone_is_canceled", "nodePools", armdoc.OperationUpdate, 4, clusterGone, false, true, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"pool_delete_unknown_succeeds", "nodePools", armdoc.OperationDelete, 0, clusterDeleting, false, false, armdoc.StateSucceeded, "", ""},
		{"external_auth_create_cluster_gone_is_canceled", "externalAuths", armdoc.OperationCreate, 0, clusterGone, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
		{"external_auth_create_never_reached_cluster_service_fails", "externalAuths", armdoc.OperationCreate, 0, clusterPresent, false, false, armdoc.StateFailed, "InternalServerError", "no longer known"},
		{"external_auth_update_cluster_deleting_is_canceled", "externalAuths", armdoc.OperationUpdate, 2, clusterDeleting, false, false, armdoc.StateCanceled, "Canceled", "cluster was deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			// Not run: each case reconciles its operation once, past the grace.
			c := New(h.docs, h.cs, slog.New(slog.NewTextHandler(io.Discard, nil)), nil,
				Config{NotFoundGrace: time.Minute, NodePools: h.np, ExternalAuths: h.ea})
			c.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
			part := strings.ToLower(h.sub)

			// The cluster's documents as its create left them; Cluster Service knows no child.
			clusterCS := strings.ReplaceAll(uuid.NewString(), "-", "")
			h.writeOperation(h.resourceID("c01"), clusterCS, uuid.NewString(), armdoc.OperationCreate, armdoc.StateSucceeded, 0, true)
			rid := h.resourceID("c01") + "/" + tc.child + "/child1"
			childCS := strings.ReplaceAll(uuid.NewString(), "-", "")
			if tc.request != armdoc.OperationCreate {
				h.writePoolOperation(rid, childCS, uuid.NewString(), armdoc.OperationCreate, armdoc.StateSucceeded, 0, true)
			}
			opID := uuid.NewString()
			resState := map[armdoc.OperationRequest]armdoc.ProvisioningState{armdoc.OperationCreate: armdoc.StateAccepted,
				armdoc.OperationUpdate: armdoc.StateUpdating, armdoc.OperationDelete: armdoc.StateDeleting}[tc.request]
			h.writePoolOperation(rid, childCS, opID, tc.request, resState, tc.revision, tc.request == armdoc.OperationCreate)
			if tc.ownDelete {
				h.writePoolOperation(rid, childCS, uuid.NewString(), armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
			}
			if tc.childGone {
				d, err := h.docs.Get(t0(), part, strings.ToLower(rid))
				if err != nil {
					t.Fatalf("get child document: %v", err)
				}
				if _, err := h.docs.Transact(t0(), part, []docstore.TxOp{{Kind: docstore.TxDelete, Doc: d, IfMatch: d.ETag}}); err != nil {
					t.Fatalf("delete child document: %v", err)
				}
			}
			switch tc.cluster {
			case clusterDeleting:
				h.writeOperation(h.resourceID("c01"), clusterCS, uuid.NewString(), armdoc.OperationDelete, armdoc.StateDeleting, 0, false)
			case clusterGone:
				d, err := h.docs.Get(t0(), part, strings.ToLower(h.resourceID("c01")))
				if err != nil {
					t.Fatalf("get cluster document: %v", err)
				}
				if _, err := h.docs.Transact(t0(), part, []docstore.TxOp{{Kind: docstore.TxDelete, Doc: d, IfMatch: d.ETag}}); err != nil {
					t.Fatalf("delete cluster document: %v", err)
				}
			}

			if _, err := c.Reconcile(t0(), part, opID); err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			op := h.operation(opID)
			if op.Status != tc.want {
				t.Fatalf("operation is %s (error %+v), want %s", op.Status, op.Error, tc.want)
			}
			if tc.wantCode == "" {
				if op.Error != nil {
					t.Fatalf("operation error %+v, want none", op.Error)
				}
			} else if op.Error == nil || op.Error.Code != tc.wantCode || !strings.Contains(op.Error.Message, tc.wantInMsg) {
				t.Fatalf("operation error %+v, want code %s and a message with %q", op.Error, tc.wantCode, tc.wantInMsg)
			}
			// The child's document: a delete removes it; its own delete keeps it Deleting; any
			// other outcome frees it in the operation's end state.
			child, err := h.childResource(rid)
			switch {
			case tc.request == armdoc.OperationDelete || tc.childGone:
				if !errors.Is(err, docstore.ErrNotFound) {
					t.Fatalf("child document: %+v, %v; want it gone", child, err)
				}
			case err != nil:
				t.Fatalf("get child document: %v", err)
			case tc.ownDelete && child.ProvisioningState != armdoc.StateDeleting:
				t.Fatalf("child document %+v: want it left Deleting to its own delete", child)
			case !tc.ownDelete && (child.ProvisioningState != tc.want || child.ActiveOperationID != ""):
				t.Fatalf("child document %+v: want %s and no active operation", child, tc.want)
			}
		})
	}
}
