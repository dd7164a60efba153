package frontend

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	docs "github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/store"
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
	rd, doc, err := s.getResourceDoc(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	current := ""
	if doc != nil {
		current = doc.ETag
	}
	if err := checkPreconditions(r, current); err != nil {
		return err
	}
	if doc == nil {
		return notFound(id)
	}
	if err := checkClientProvisioningState(ri.body, rd.ProvisioningState); err != nil {
		return err
	}
	part := doc.PartitionKey
	if rd.ActiveOperationID != "" {
		op, _, err := s.getOperationDoc(ctx, part, rd.ActiveOperationID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err == nil && !op.Status.Terminal() {
			return cloudError(http.StatusConflict, arm.CodeConflict, "",
				"Cannot write resource '%s' while operation '%s' (%s) is in progress.", id, op.ID, op.Request)
		}
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
	if sd, err := arm.ParseSystemData(r.Header.Get(arm.HeaderSystemData)); err != nil {
		ri.log.Warn("ignoring invalid systemData header", "error", err)
	} else if sd != nil {
		var prev *arm.SystemData
		if len(rd.SystemData) > 0 {
			prev = &arm.SystemData{}
			json.Unmarshal(rd.SystemData, prev)
		}
		rd.SystemData, _ = json.Marshal(prev.Merge(sd))
	}
	resDoc, err := withBody(doc, rd)
	if err != nil {
		return err
	}
	op := s.newOperation(r, opID, docs.OperationUpdate, id.String(), rd.InternalID, now)
	op.Status, op.EndTime = docs.StateSucceeded, &now
	opDoc, err := newDoc(part, opID, store.TypeOperation, id.String(), op, s.cfg.OperationTTL)
	if err != nil {
		return err
	}
	if _, err := s.store.Transact(ctx, part, []store.TxOp{
		{Kind: store.TxReplace, Doc: resDoc, IfMatch: doc.ETag},
		{Kind: store.TxCreate, Doc: opDoc},
	}); err != nil {
		return err
	}
	ri.log.Info("cluster tags updated", "resourceID", id.String(), "operationID", opID)
	s.setAsyncHeaders(w, r, id.SubscriptionID, opID, true)
	w.WriteHeader(http.StatusAccepted)
	return nil
}
