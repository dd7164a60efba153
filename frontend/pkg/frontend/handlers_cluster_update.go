package frontend

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// csUpdatable are the cluster fields (internal model paths) a PUT or PATCH can change through
// Cluster Service's UpdateCluster: the arm_path of each ClusterUpdate field (an admin-only one,
// "-", aside), and the identity profiles, any change of which re-sends all seven control plane
// operator client IDs (workload identities; the rest of these profiles is stored by the
// frontend only). They are changed only where the request's api-version lets the field be
// updated.
func csUpdatable() []string {
	paths := []string{"identity", "properties.platform.operatorsAuthentication"}
	fields := (&csv1.ClusterUpdate{}).ProtoReflect().Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		if p := csv1.ARMPathOf(fields.Get(i)); p != "" && p != "-" {
			paths = append(paths, p)
		}
	}
	return paths
}

// updatableThroughCS reports whether path p is changed through UpdateCluster in version ver.
func updatableThroughCS(ver api.Version, p string) bool {
	known := false
	for _, k := range csUpdatable() {
		if p == k || strings.HasPrefix(p, k+".") || strings.HasPrefix(p, k+"[") {
			known = true
		}
	}
	if !known {
		return false
	}
	for _, u := range ver.UpdatableFields() {
		if p == u || strings.HasPrefix(p, u+".") {
			return true
		}
	}
	return false
}

// errIncompleteIdentities refuses an identity change that leaves a control plane operator
// without a client ID: Cluster Service replaces the workload identities all at once.
func errIncompleteIdentities(ver api.Version) *arm.CloudError {
	target := ver.ExternalPath("properties.platform.operatorsAuthentication.userAssignedIdentities.controlPlaneOperators")
	return cloudError(http.StatusBadRequest, "InvalidRequestContent", target,
		"An identity change must leave each control plane operator (%s) with a user-assigned identity in 'identity.userAssignedIdentities' whose client ID is known: the cluster's workload identities are replaced all at once.",
		strings.Join(controlPlaneOperators, ", "))
}

// identityChanged reports whether the cluster's identity or operator identities differ.
func identityChanged(stored, next *api.Cluster) bool {
	return !reflect.DeepEqual(stored.Identity, next.Identity) ||
		!reflect.DeepEqual(stored.OperatorIdentities, next.OperatorIdentities)
}

// clusterUpdate is the UpdateCluster change from stored to next (csv1.ClusterUpdateDiff of their
// specs, modelSpec), or nil when nothing Cluster Service holds changes.
func clusterUpdate(ver api.Version, stored, next *api.Cluster) *csv1.ClusterUpdate {
	return clusterUpdateFrom(ver, modelSpec(stored), modelSpec(next), stored, next)
}

// clusterUpdateFrom is the UpdateCluster change from the spec cur to want, the spec of next (over
// stored, the resource document's cluster), limited to what the request's api-version lets a
// write update; nil when it changes nothing.
func clusterUpdateFrom(ver api.Version, cur, want *csv1.ClusterSpec, stored, next *api.Cluster) *csv1.ClusterUpdate {
	u := csv1.ClusterUpdateDiff(cur, want)
	identities := u.WorkloadIdentities != nil // cur's workload identities are not next's
	m := u.ProtoReflect()
	var other []protoreflect.FieldDescriptor // what the request's api-version does not let a write update
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if !updatableThroughCS(ver, csv1.ARMPathOf(fd)) {
			other = append(other, fd)
		}
		return true
	})
	for _, fd := range other {
		m.Clear(fd)
	}
	if l := u.GetApiAuthorizedCidrs(); l != nil {
		l.Values = csCIDRs(l.GetValues()) // compared as given, sent in Cluster Service's form
	}
	// Workload identities: any identity change sends all seven client IDs, even when they stay
	// the same (a data plane identity changed, say), so every accepted identity change is an
	// Update operation that stores the new model. nil when incomplete: identityUpdateErrors
	// refuses that first.
	u.WorkloadIdentities = nil
	if (identities || identityChanged(stored, next)) && (updatableThroughCS(ver, "identity") || updatableThroughCS(ver, "properties.platform.operatorsAuthentication")) {
		u.WorkloadIdentities = workloadIdentities(next)
	}
	if proto.Equal(u, &csv1.ClusterUpdate{}) {
		return nil
	}
	return u
}

// syncedClusterUpdate is the UpdateCluster change a write of next makes: from the resource
// document's cluster (stored), or, after an update that ended UpdateNotRecorded (lost, its
// recorded update: unconfirmedUpdate), from the spec Cluster Service holds (GetCluster), which
// that document may not match, in the fields lost or this request names (sendOnlyWhatWasAsked).
// After such an update it is never nil (an empty update when Cluster Service holds it all: the
// operation then ends at once), and cl is Cluster Service's cluster. A version change while
// Cluster Service still runs an upgrade is a 409: the upgrade the lost update asked for may be
// it, and reporting the request done before it ends would be wrong.
func (s *Server) syncedClusterUpdate(r *http.Request, rd *armdoc.ResourceDocument, stored, next *api.Cluster, lost json.RawMessage) (u *csv1.ClusterUpdate, cl *csv1.Cluster, err error) {
	ri := info(r)
	own := clusterUpdate(ri.version, stored, next)
	if lost == nil {
		return own, nil, nil
	}
	cctx, cancel := s.csContext(r.Context(), ri)
	defer cancel()
	if cl, err = s.cs.GetCluster(cctx, &csv1.GetClusterRequest{Id: rd.InternalID}); err != nil {
		return nil, nil, fmt.Errorf("read cluster %s in cluster service to send what it lacks: %w", rd.ResourceID, err)
	}
	// clusterSpec is the spec in Cluster Service's own form, the form GetCluster answers in.
	if u = clusterUpdateFrom(ri.version, cl.GetSpec(), clusterSpec(next, cl.GetSpec().GetAzure().GetTenantId()), stored, next); u == nil {
		u = &csv1.ClusterUpdate{}
	}
	var ownMsg proto.Message
	if own != nil {
		ownMsg = own
	}
	if err := sendOnlyWhatWasAsked(u, lost, ownMsg); err != nil {
		return nil, nil, fmt.Errorf("update of %s after an unconfirmed one: %w", rd.ResourceID, err)
	}
	if p := cl.GetStatus().GetUpgrade(); u.GetVersionId() != "" && p != nil &&
		p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_COMPLETED && p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
		return nil, nil, cloudError(http.StatusConflict, arm.CodeConflict, "properties.version.id",
			"An upgrade of cluster '%s' to %s is in progress; send the request again once it has ended.", rd.ResourceID, p.GetToVersion())
	}
	ri.logger().Info("cluster update after an unconfirmed one: compared with Cluster Service's spec", "resourceID", rd.ResourceID,
		"clusterID", rd.InternalID, "lastUpdateOperationID", rd.UpdateOperationID, "nothingToSend", proto.Equal(u, &csv1.ClusterUpdate{}))
	return u, cl, nil
}

// identityUpdateErrors refuses an identity change Cluster Service cannot carry out.
func identityUpdateErrors(ver api.Version, stored, next *api.Cluster) []*arm.CloudError {
	if identityChanged(stored, next) && workloadIdentities(next) == nil {
		return []*arm.CloudError{errIncompleteIdentities(ver)}
	}
	return nil
}

// configUpdate reports whether u changes the cluster's configuration (anything but version and
// channel group): the operation then ends when Cluster Service reports the cluster READY at or
// after the update's revision.
func configUpdate(u *csv1.ClusterUpdate) bool {
	return csv1.ClusterUpdateChangesConfiguration(u)
}

// startClusterUpdate sends an accepted cluster change through the one update protocol
// (startUpdate): a configuration change is followed to READY at its spec revision, a version
// change by the upgrade policy that carries the operation ID, and anything else (a channel group
// change, or a version that resolves to the one running) ends at once. PUT answers 200 and PATCH
// 202, both with Azure-AsyncOperation. u is recorded in the operation, for a retry of the request
// to send it again (joinClusterUpdate). cl, when known (syncedClusterUpdate read it), is the
// cluster a PUT's answer shows Cluster Service's status from if no call is needed.
func (s *Server) startClusterUpdate(w http.ResponseWriter, r *http.Request, next *api.Cluster, rd *armdoc.ResourceDocument,
	doc *docstore.Document, u *csv1.ClusterUpdate, cl *csv1.Cluster, patch bool) error {
	props, err := storedModel(next)
	if err != nil {
		return err
	}
	sent, err := protojson.Marshal(u)
	if err != nil {
		return fmt.Errorf("encode the update of cluster %s: %w", rd.ResourceID, err)
	}
	nrd := *rd
	nrd.Properties = props
	nrd.Tags = next.Tags
	mergeSystemData(&nrd, requestSystemData(r))
	call := s.clusterUpdateCall(r, rd, u, &cl)
	return s.startUpdate(w, r, &clusters, next.ID, &nrd, doc, patch, sent, call, func(etag string) error {
		return s.respondUpdatedCluster(w, r, &nrd, cl, etag)
	})
}

// joinClusterUpdate answers, through joinUpdate, a PUT or PATCH that leaves the cluster as it is
// (rd holds what it asks for) while an update the same caller started runs: the retry of a
// request answered 503 when Cluster Service's answer was lost. The update is sent again as the
// operation recorded it (SentUpdate). joined is false when there is no such update to join: the
// request then meets the 409 of any write during an operation.
func (s *Server) joinClusterUpdate(w http.ResponseWriter, r *http.Request, id *arm.ResourceID, rd *armdoc.ResourceDocument,
	doc *docstore.Document, patch bool) (joined bool, err error) {
	op, opDoc, err := s.activeOperation(r.Context(), doc.PartitionKey, rd)
	if err != nil || op == nil || op.Request != armdoc.OperationUpdate || !startedBy(r, op) {
		return false, err
	}
	u := &csv1.ClusterUpdate{}
	if op.InternalRevision == 0 {
		if len(op.SentUpdate) == 0 {
			return false, nil // written before updates were recorded: nothing to send again
		}
		if err := protojson.Unmarshal(op.SentUpdate, u); err != nil {
			return false, fmt.Errorf("decode the update recorded in operation %s: %w", op.ID, err)
		}
	}
	var cl *csv1.Cluster
	return true, s.joinUpdate(w, r, id, rd, doc, op, opDoc, patch, s.clusterUpdateCall(r, rd, u, &cl), func(etag string) error {
		return s.respondUpdatedCluster(w, r, rd, cl, etag)
	})
}

// respondUpdatedCluster answers a cluster PUT that updated rd: 200 with the cluster as stored,
// and Cluster Service's status from cl, UpdateCluster's answer (what a GET would add), else as
// a GET shows it.
func (s *Server) respondUpdatedCluster(w http.ResponseWriter, r *http.Request, rd *armdoc.ResourceDocument, cl *csv1.Cluster, etag string) error {
	out, err := clusterFromDoc(rd)
	if err != nil {
		return err
	}
	out.ProvisioningState = rd.ProvisioningState
	if cl != nil {
		setClusterStatus(out, cl)
	} else {
		s.addClusterStatus(r, out, rd)
	}
	return s.respondCluster(w, r, http.StatusOK, out, etag)
}

// clusterUpdateCall is the Cluster Service call of the cluster update u of rd, for startUpdate
// and joinUpdate: it stores UpdateCluster's answer in *cl and reports what the backend follows.
// An empty u (a write after an unconfirmed update, of what Cluster Service holds already: *cl is
// the cluster syncedClusterUpdate read) needs no call, and nothing new is rolled out: the
// operation ends at once when *cl is READY at its spec's revision, and is otherwise followed to
// that revision like any configuration change (so an unfinished or failed rollout of what the
// lost call had sent is not reported Succeeded). A retry joining such an operation (*cl nil)
// reads the cluster first. Without a revision to wait for (none recorded) it ends at once.
func (s *Server) clusterUpdateCall(r *http.Request, rd *armdoc.ResourceDocument, u *csv1.ClusterUpdate, cl **csv1.Cluster) func(opID string) (updateStarted, error) {
	ri := info(r)
	return func(opID string) (updateStarted, error) {
		if proto.Equal(u, &csv1.ClusterUpdate{}) {
			if *cl == nil {
				// A retry joining such an operation whose revision was never recorded: what it
				// waits for is what Cluster Service holds now.
				cctx, cancel := s.csContext(r.Context(), ri)
				got, err := s.cs.GetCluster(cctx, &csv1.GetClusterRequest{Id: rd.InternalID})
				cancel()
				if err != nil {
					return updateStarted{}, fmt.Errorf("read cluster %s in cluster service: %w", rd.ResourceID, err)
				}
				*cl = got
			}
			st, rev := (*cl).GetStatus(), (*cl).GetSpecRevision()
			if rev == 0 || (st.GetState() == csv1.ClusterState_CLUSTER_STATE_READY && st.GetObservedRevision() >= rev) {
				return updateStarted{done: true}, nil
			}
			ri.logger().Info("nothing to send; following the cluster to the revision that holds it", "resourceID", rd.ResourceID,
				"specRevision", rev, "state", st.GetState().String(), "operationID", opID)
			return updateStarted{revision: rev}, nil
		}
		ri.logger().Info("cluster update sent to Cluster Service", "resourceID", rd.ResourceID, "clusterID", rd.InternalID, "operationID", opID,
			"version", u.GetVersionId(), "channelGroup", u.GetChannelGroup(), "configuration", configUpdate(u))
		cctx, cancel := s.csContext(r.Context(), ri)
		defer cancel()
		req := &csv1.UpdateClusterRequest{Id: rd.InternalID, Update: u, OperationId: opID}
		got, err := s.cs.UpdateCluster(cctx, req)
		if err != nil {
			return updateStarted{}, fmt.Errorf("update cluster %s in cluster service: %w", rd.ResourceID, fieldViolations(ri.version, req, err))
		}
		*cl = got
		if configUpdate(u) {
			// The backend ends the operation once Cluster Service reports the cluster READY at or
			// after the spec revision that holds the new spec.
			ri.logger().Info("cluster configuration update started", "resourceID", rd.ResourceID, "specRevision", got.GetSpecRevision(),
				"state", got.GetStatus().GetState().String(), "operationID", opID)
			return updateStarted{revision: got.GetSpecRevision()}, nil
		}
		if p := got.GetStatus().GetUpgrade(); p.GetOperationId() == opID {
			ri.logger().Info("control plane upgrade started", "resourceID", rd.ResourceID, "upgradePolicyID", p.GetId(),
				"from", p.GetFromVersion(), "to", p.GetToVersion(), "operationID", opID)
			return updateStarted{}, nil
		}
		return updateStarted{done: true}, nil
	}
}

// errOperationEnded: the operation ended (the backend failed it, a DELETE canceled it) before
// what Cluster Service answered could be recorded in it.
var errOperationEnded = errors.New("the operation ended before its update was recorded")

// recordUpdateRevision stores the Cluster Service revision of an accepted update in its
// operation (InternalRevision). The backend may write the operation meanwhile (it follows it
// from the moment it exists, and leaves it running while InternalRevision is unset), so each
// attempt re-reads it and writes conditionally on what it read. An operation that has ended
// meanwhile is left as it is: errOperationEnded.
func (s *Server) recordUpdateRevision(r *http.Request, opDoc *docstore.Document, op *armdoc.OperationDocument, revision int64) error {
	ctx := r.Context()
	cur, doc := op, opDoc
	for attempt := 0; ; attempt++ {
		cur.InternalRevision = revision
		d, err := withBody(doc, cur)
		if err != nil {
			return err
		}
		_, err = s.store.Replace(ctx, d, doc.ETag)
		if err == nil {
			return nil
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) || attempt == 4 {
			return fmt.Errorf("record revision %d on operation %s: %w", revision, op.ID, err)
		}
		if cur, doc, err = s.getOperationDoc(ctx, opDoc.PartitionKey, op.ID); err != nil {
			return fmt.Errorf("re-read operation %s to record revision %d: %w", op.ID, revision, err)
		}
		if cur.Status.Terminal() {
			return fmt.Errorf("record revision %d on operation %s (%s): %w", revision, op.ID, cur.Status, errOperationEnded)
		}
	}
}

// finishUpdateNow marks the update operation and its resource Succeeded. The backend may write
// either document between the update's write and this one (it takes up a new operation and marks
// it Updating), so a write that loses to it reads both again and tries again, as
// recordUpdateRevision does: the change was accepted, and answering the caller 409 for the
// backend's own write would leave the operation to fail UpdateNotRecorded. An operation that
// ended meanwhile (a DELETE canceled it, the backend failed it), or a resource that no longer
// names it as its operation, is left as it is: errOperationEnded. On success *ended is the
// resource as written, for the answer to show it Succeeded.
func (s *Server) finishUpdateNow(r *http.Request, written []*docstore.Document, ended *armdoc.ResourceDocument, op *armdoc.OperationDocument) (string, error) {
	ctx := r.Context()
	resDoc, opDoc, rd := written[0], written[1], *ended
	for attempt := 0; ; attempt++ {
		now := time.Now().UTC()
		rd.ProvisioningState, rd.ActiveOperationID = armdoc.StateSucceeded, ""
		op.Status, op.LastTransitionTime, op.EndTime = armdoc.StateSucceeded, now, &now
		res, err := withBody(resDoc, rd)
		if err != nil {
			return "", err
		}
		opd, err := withBody(opDoc, op)
		if err != nil {
			return "", err
		}
		out, err := s.store.Transact(ctx, resDoc.PartitionKey, []docstore.TxOp{
			{Kind: docstore.TxReplace, Doc: res, IfMatch: resDoc.ETag},
			{Kind: docstore.TxReplace, Doc: opd, IfMatch: opDoc.ETag},
		})
		if err == nil {
			*ended = rd
			return out[0].ETag, nil
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) || attempt == 4 {
			return "", fmt.Errorf("finish update of %s: %w", rd.ResourceID, err)
		}
		cur, curDoc, err := s.getOperationDoc(ctx, opDoc.PartitionKey, op.ID)
		if err != nil {
			return "", fmt.Errorf("re-read operation %s to finish it: %w", op.ID, err)
		}
		if cur.Status.Terminal() {
			return "", fmt.Errorf("finish update of %s: operation %s is %s: %w", rd.ResourceID, op.ID, cur.Status, errOperationEnded)
		}
		d, err := s.store.Get(ctx, resDoc.PartitionKey, resDoc.ID)
		if err != nil {
			return "", fmt.Errorf("re-read %s to finish its update: %w", rd.ResourceID, err)
		}
		var stored armdoc.ResourceDocument
		if err := json.Unmarshal(d.Body, &stored); err != nil {
			return "", fmt.Errorf("decode %s: %w", rd.ResourceID, err)
		}
		if stored.ActiveOperationID != op.ID {
			return "", fmt.Errorf("finish update of %s: its operation is now %q, not %s: %w", rd.ResourceID, stored.ActiveOperationID, op.ID, errOperationEnded)
		}
		rd, resDoc, op, opDoc = stored, d, cur, curDoc
	}
}

// sentence capitalises the first letter and ends with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
