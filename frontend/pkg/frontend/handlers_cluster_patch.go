package frontend

import (
	"net/http"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// patchCluster merges the body into the cluster as the request's api-version shows it (JSON
// merge patch over the version's update schema). A change of what Cluster Service holds is an
// update (startClusterUpdate), a change of a field that cannot change a 400 naming it, and a
// change of tags alone an operation recorded already Succeeded. A patch that changes nothing
// while the caller's update runs is that update's retry and joins it (joinClusterUpdate); after
// an update that ended UpdateNotRecorded, a patch is compared with what Cluster Service holds
// (syncedClusterUpdate) and is an update even if it changes nothing in the document. The
// answer is 202 with Location and Azure-AsyncOperation, like every PATCH.
func (s *Server) patchCluster(w http.ResponseWriter, r *http.Request) error {
	ri := info(r)
	ctx := r.Context()
	id, err := clusterID(r)
	if err != nil {
		return err
	}
	if len(ri.body) == 0 {
		return cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "The request content is empty.")
	}
	rd, doc, pre, err := s.readForPatch(r, id, notFound)
	if err != nil {
		return err
	}
	part := doc.PartitionKey
	stored, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	next, patchErr := ri.version.PatchCluster(stored, ri.body)
	same := false
	if patchErr == nil {
		next.ID = id
		// A property the patch removes (null) takes Cluster Service's default, as a PUT that
		// leaves it out does.
		withClusterServiceDefaults(next)
		if same, err = sameModel(stored, next); err != nil {
			return err
		}
	}
	if pre != nil && (!same || !s.conditionalRetry(r, part, rd)) {
		return pre // a failed If-Match or If-None-Match, unless this is a retry (readForPatch)
	}
	if same {
		// The caller's retry of an update answered 503 joins it (handlers_cluster_update.go).
		if joined, err := s.joinClusterUpdate(w, r, id, rd, doc, true); joined || err != nil {
			return err
		}
	}
	if pre != nil {
		return pre
	}
	// Any other write during an operation is a 409, before what is wrong with the body.
	if _, err := s.pendingCreate(r, part, rd, id, false); err != nil {
		return err
	}
	if patchErr != nil {
		return patchErr
	}
	// After an update that ended UpdateNotRecorded even a patch that changes nothing is compared
	// with what Cluster Service holds (unconfirmedUpdate).
	lost, err := s.unconfirmedUpdate(ctx, part, rd)
	if err != nil {
		return err
	}
	if !same || lost != nil {
		if errs := changedFields(ri.version, stored, next); len(errs) > 0 {
			return arm.Multiple(errs)
		}
		u, cl, err := s.syncedClusterUpdate(r, rd, stored, next, lost)
		if err != nil {
			return err
		}
		if u != nil {
			return s.startClusterUpdate(w, r, next, rd, doc, u, cl, true) // handlers_cluster_update.go
		}
	}

	opID := newUUID()
	now := time.Now().UTC()
	rd.Tags = next.Tags
	rd.ActiveOperationID = ""
	mergeSystemData(rd, requestSystemData(r))
	resDoc, err := withBody(doc, rd)
	if err != nil {
		return err
	}
	op := s.newOperation(r, opID, armdoc.OperationUpdate, id.String(), rd.InternalID, now)
	op.Status, op.EndTime = armdoc.StateSucceeded, &now
	opDoc, err := newDoc(part, opID, docstore.TypeOperation, id.String(), op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	if _, err := s.store.Transact(ctx, part, []docstore.TxOp{
		{Kind: docstore.TxReplace, Doc: resDoc, IfMatch: doc.ETag},
		{Kind: docstore.TxCreate, Doc: opDoc},
	}); err != nil {
		return err
	}
	ri.logger().Info("cluster tags updated", "resourceID", id.String(), "operationID", opID)
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}
