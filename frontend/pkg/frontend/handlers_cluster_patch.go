package frontend

import (
	"net/http"
	"time"

	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// patchCluster merges the body into the cluster as the request's api-version shows it (JSON
// merge patch over the version's update schema). Cluster Service has no update call yet, so
// only tags can change; a change to anything else is a 400 naming the field. The answer is
// 202 with Location and Azure-AsyncOperation, like every PATCH; the operation is recorded
// already Succeeded because nothing is left to do.
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
	rd, doc, err := s.readForPatch(r, id, notFound)
	if err != nil {
		return err
	}
	part := doc.PartitionKey
	if _, err := s.pendingCreate(r, part, rd, id, false); err != nil {
		return err
	}
	stored, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	next, err := ri.version.PatchCluster(stored, ri.body)
	if err != nil {
		return err
	}
	next.ID = id
	same, err := sameModel(stored, next)
	if err != nil {
		return err
	}
	if !same {
		if errs := changedFields(ri.version, stored, next); len(errs) > 0 {
			return arm.Multiple(errs)
		}
		if u := clusterUpdate(ri.version, stored, next); u != nil {
			return s.startClusterUpdate(w, r, next, rd, doc, u, true) // handlers_cluster_update.go
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
	ri.log.Info("cluster tags updated", "resourceID", id.String(), "operationID", opID)
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}
