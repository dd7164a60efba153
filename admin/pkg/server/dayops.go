package server

// Day-2 changes of a customer's cluster or node pool by an SRE: scale a node pool, upgrade a
// control plane or a node pool. Cluster Service validates them exactly as it validates the
// customer's (the admin API sends the same UpdateNodePool/UpdateCluster calls and re-implements
// no rule); the change is then written into the customer's ARM resource document, which is what
// the frontend renders on GET (docs/sre.md, "Day-2 changes and the customer's ARM resource").

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

const (
	clusterType  = "Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
	nodePoolType = clusterType + "/nodePools"
)

// decodeStrict decodes a mutating route's JSON body; unknown fields are refused, naming them.
func decodeStrict(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body", "decode the body: %v", err)
	}
	if dec.More() {
		return badRequest("body", "the body holds more than one JSON value")
	}
	return nil
}

// ifMatchRevision reads If-Match as a Cluster Service spec_revision, the number the etag of a
// cluster or node pool carries ("" → 0: not conditional).
func ifMatchRevision(r *http.Request) (int64, error) {
	v := strings.TrimSpace(r.Header.Get("If-Match"))
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.Trim(strings.TrimPrefix(v, "W/"), `"`), 10, 64)
	if err != nil || n <= 0 {
		return 0, badRequest("If-Match", "If-Match must be the etag of the cluster or node pool (its spec revision, e.g. \"42\"), got %s", v)
	}
	return n, nil
}

// armResourceID parses an ID with a "/" as an ARM resource ID of the given type; ok is false
// when id is no ARM resource ID (a Cluster Service ID).
func armResourceID(id string) (rid *arm.ResourceID, ok bool) {
	if !strings.Contains(id, "/") {
		return nil, false
	}
	if !strings.HasPrefix(id, "/") {
		id = "/" + id
	}
	rid, err := arm.ParseResourceID(id)
	if err != nil {
		return nil, true
	}
	return rid, true
}

// armDocument reads the ARM resource document of an ARM resource ID; nil when there is none.
func (s *Server) armDocument(ctx context.Context, armID string) (*docstore.Document, error) {
	rid, err := arm.ParseResourceID(armID)
	if err != nil {
		return nil, nil
	}
	doc, err := s.cfg.Store.Get(ctx, strings.ToLower(rid.SubscriptionID), rid.Lower())
	if errors.Is(err, docstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ARM document %s: %w", armID, err)
	}
	return doc, nil
}

// findNodePool resolves id (a Cluster Service ID or the ARM resource ID of a node pool) to
// Cluster Service's node pool and its ARM document (nil when it has none).
func (s *Server) findNodePool(ctx context.Context, id string) (*csv1.NodePool, *docstore.Document, error) {
	if id == "" {
		return nil, nil, badRequest("id", "a node pool ID (Cluster Service ID or ARM resource ID) is required")
	}
	if rid, isARM := armResourceID(id); isARM {
		if rid == nil || !strings.EqualFold(rid.ResourceType(), nodePoolType) {
			return nil, nil, badRequest("id", "%q is neither a Cluster Service ID nor the ARM resource ID of a node pool (…/hcpOpenShiftClusters/{cluster}/nodePools/{name})", id)
		}
		doc, err := s.armDocument(ctx, rid.String())
		if err != nil {
			return nil, nil, err
		}
		var rd armdoc.ResourceDocument
		if doc != nil {
			if err := json.Unmarshal(doc.Body, &rd); err != nil {
				return nil, nil, fmt.Errorf("decode ARM document %s: %w", id, err)
			}
		}
		if rd.InternalID == "" {
			return nil, nil, notFound(id, "no node pool %s in the ARM document store; use its Cluster Service ID (hcpctl cluster describe lists them)", id)
		}
		np, err := s.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: rd.InternalID})
		if err != nil {
			return nil, nil, upstream("get node pool from Cluster Service", id, err)
		}
		return np, doc, nil
	}
	np, err := s.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: id})
	if err != nil {
		return nil, nil, upstream("get node pool from Cluster Service", id, err)
	}
	doc, err := s.armDocument(ctx, np.GetArmResourceId())
	return np, doc, err
}

// armIdle refuses a change while a customer's operation runs on the resource: the two would
// race on the same spec, and the customer's operation would end on a spec it did not ask for.
func armIdle(doc *docstore.Document, id string) error {
	if doc == nil {
		return nil
	}
	var rd armdoc.ResourceDocument
	if err := json.Unmarshal(doc.Body, &rd); err != nil {
		return fmt.Errorf("decode ARM document %s: %w", doc.ID, err)
	}
	if rd.ProvisioningState != "" && !rd.ProvisioningState.Terminal() {
		return errorf(http.StatusConflict, adminapi.CodeBusy, id, "%s is %s (operation %s); retry once the customer's operation has ended (hcpctl operation list)",
			id, rd.ProvisioningState, rd.ActiveOperationID)
	}
	return nil
}

// changeSpecRevision is the Cluster Service spec_revision a change is conditional on: If-Match's,
// or 0 (unconditional) without If-Match. The condition is on the spec revision, not the
// revision, because Cluster Service's controller moves the revision with every status write:
// only another spec change since the caller's read is a conflict. Without If-Match nothing needs
// to hold: the update names only the fields it changes, and Cluster Service merges it under the
// row lock. It refuses the change while a customer's operation runs on the resource.
func changeSpecRevision(r *http.Request, doc *docstore.Document, id string) (specRev int64, conditional bool, err error) {
	if err := armIdle(doc, id); err != nil {
		return 0, false, err
	}
	specRev, err = ifMatchRevision(r)
	return specRev, err == nil && specRev != 0, err
}

// refused turns Cluster Service's answer to a change into the admin API's: a validation error
// names the body field at fault, a stale spec revision is 412 on If-Match (conditional; an
// unconditional change sends none, so Aborted there is unexpected and a plain 409), a refused
// state (an upgrade already running) is 409.
func refused(what, id string, conditional bool, err error) error {
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.InvalidArgument:
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				fv := br.GetFieldViolations()[0]
				return badRequest(bodyField(fv.GetField()), "%s: %s", what, fv.GetDescription())
			}
		}
		return badRequest("", "%s: %s", what, st.Message())
	case codes.Aborted:
		if conditional {
			return errorf(http.StatusPreconditionFailed, adminapi.CodeConflict, "If-Match",
				"%s: %s changed since the etag you sent; read it again (a cluster's etag is in hcpctl cluster describe; a node pool's specRevision in its -o yaml) and retry with the new etag", what, id)
		}
		return errorf(http.StatusConflict, adminapi.CodeBusy, id, "%s: %s changed at the same time; retry", what, id)
	case codes.FailedPrecondition:
		return errorf(http.StatusConflict, adminapi.CodeBusy, id, "%s: %s", what, st.Message())
	}
	return upstream(what, id, err)
}

// bodyField names the admin body field a Cluster Service field violation is about
// ("spec.autoscaling.max" → "autoscaling.max", "update.version_id" → "version").
func bodyField(csField string) string {
	f := csField
	for _, p := range []string{"node_pool.", "spec.", "update."} {
		f = strings.TrimPrefix(f, p)
	}
	switch {
	case f == "version_id":
		return "version"
	case f == "paused_until":
		return "until"
	case f == "replicas", strings.HasPrefix(f, "autoscaling"):
		return f
	}
	return csField
}

// armPath is the path of a Cluster Service field in the ARM model (its arm_path option, the one
// owner of that mapping).
func armPath(m proto.Message, field protoreflect.Name) string {
	return csv1.ARMPathOf(m.ProtoReflect().Descriptor().Fields().ByName(field))
}

// recordInARM writes fields (ARM model path → value; nil removes the field) into the ARM
// resource document, conditionally on its etag, re-reading it when someone wrote it meanwhile
// (the backend moving its provisioning state). Cluster Service already holds the change; if
// this write does not happen (the admin service stopped between the two), the same admin call
// again finds the change already in Cluster Service, sends nothing to it, and writes the document.
func (s *Server) recordInARM(ctx context.Context, doc *docstore.Document, fields map[string]any) (string, error) {
	if doc == nil {
		return adminapi.ARMNone, nil
	}
	for range 5 {
		var rd armdoc.ResourceDocument
		if err := json.Unmarshal(doc.Body, &rd); err != nil {
			return "", fmt.Errorf("decode ARM document %s: %w", doc.ID, err)
		}
		props := map[string]any{}
		if len(rd.Properties) > 0 {
			if err := json.Unmarshal(rd.Properties, &props); err != nil {
				return "", fmt.Errorf("decode the properties of ARM document %s: %w", doc.ID, err)
			}
		}
		for path, v := range fields {
			setPath(props, strings.Split(path, "."), v)
		}
		var err error
		if rd.Properties, err = json.Marshal(props); err != nil {
			return "", err
		}
		next := *doc
		if next.Body, err = json.Marshal(rd); err != nil {
			return "", err
		}
		_, err = s.cfg.Store.Replace(ctx, &next, doc.ETag)
		if err == nil {
			return adminapi.ARMUpdated, nil
		}
		if !errors.Is(err, docstore.ErrPreconditionFailed) {
			return "", fmt.Errorf("write ARM document %s: %w", doc.ID, err)
		}
		if doc, err = s.cfg.Store.Get(ctx, doc.PartitionKey, doc.ID); err != nil {
			return "", fmt.Errorf("read ARM document %s again: %w", doc.ID, err)
		}
	}
	return "", fmt.Errorf("write ARM document %s: changed by others 5 times in a row; the change is in Cluster Service, repeat the call to record it", doc.ID)
}

// setPath sets (or, for nil, removes) m[path[0]]…[path[n]], making the objects on the way.
func setPath(m map[string]any, path []string, v any) {
	if len(path) == 1 {
		if v == nil {
			delete(m, path[0])
		} else {
			m[path[0]] = v
		}
		return
	}
	child, ok := m[path[0]].(map[string]any)
	if !ok {
		child = map[string]any{}
		m[path[0]] = child
	}
	setPath(child, path[1:], v)
}

// nodePoolARMFields are the node pool's replicas, autoscaling and version as its ARM resource
// shows them, from Cluster Service's spec.
func nodePoolARMFields(spec *csv1.NodePoolSpec) map[string]any {
	fields := map[string]any{
		armPath(spec, "replicas"):    spec.GetReplicas(),
		armPath(spec, "autoscaling"): nil,
	}
	if a := spec.GetAutoscaling(); a != nil {
		fields[armPath(spec, "autoscaling")] = map[string]any{armPath(a, "min"): a.GetMin(), armPath(a, "max"): a.GetMax()}
	}
	if v := spec.GetVersionId(); v != "" {
		fields[armPath(spec, "version_id")] = v
	}
	return fields
}

func nodePoolChange(np *csv1.NodePool, armDoc string) adminapi.Change {
	c := adminapi.Change{Kind: adminapi.KindNodePool, ID: np.GetId(), ARMResourceID: np.GetArmResourceId(),
		State: stateName(np.GetStatus().GetState().String()), Revision: np.GetRevision(), ETag: revisionETag(np.GetSpecRevision()),
		Replicas: np.GetSpec().GetReplicas(), Version: np.GetSpec().GetVersionId(), CurrentVersion: np.GetStatus().GetCurrentVersion(), ARMDocument: armDoc}
	if a := np.GetSpec().GetAutoscaling(); a != nil {
		c.Autoscaling = &adminapi.NodePoolAutoscaling{Min: a.GetMin(), Max: a.GetMax()}
	}
	return c
}

// revisionETag is the etag of a cluster or node pool: its spec_revision, which status writes
// do not move, so a controller's status write never makes an If-Match stale.
func revisionETag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// changeNodePool sends a node pool's partial update to Cluster Service (only the fields the
// day-2 call changes: it never reads, modifies and writes back the pool's whole spec),
// conditionally on the spec revision the caller sent (If-Match), else unconditionally, and
// records the result in the ARM document.
func (s *Server) changeNodePool(ctx context.Context, r *http.Request, what, id string, u *csv1.NodePoolUpdate) (adminapi.Change, error) {
	np, doc, err := s.findNodePool(ctx, id)
	if err != nil {
		return adminapi.Change{}, err
	}
	specRev, conditional, err := changeSpecRevision(r, doc, id)
	if err != nil {
		return adminapi.Change{}, err
	}
	// The same change again (a retry after the ARM write failed) changes nothing in Cluster
	// Service and keeps its revision; it only records the change in ARM.
	updated, err := s.cfg.NodePools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.GetId(), Update: u, SpecRevision: specRev})
	if err != nil {
		return adminapi.Change{}, refused(what, id, conditional, err)
	}
	armDoc, err := s.recordInARM(ctx, doc, nodePoolARMFields(updated.GetSpec()))
	if err != nil {
		return adminapi.Change{}, err
	}
	return nodePoolChange(updated, armDoc), nil
}

// parseScale reads a scale body: either replicas or autoscaling. The values themselves are
// Cluster Service's to judge.
func parseScale(r *http.Request) (adminapi.NodePoolScale, error) {
	var body adminapi.NodePoolScale
	if err := decodeStrict(r, &body); err != nil {
		return body, err
	}
	if (body.Replicas == nil) == (body.Autoscaling == nil) {
		return body, badRequest("replicas", "send either \"replicas\" (a fixed node count) or \"autoscaling\" ({\"min\",\"max\"}), not both and not neither")
	}
	return body, nil
}

// parseUpgrade reads an upgrade body; the version is Cluster Service's to judge.
func parseUpgrade(r *http.Request) (adminapi.Upgrade, error) {
	var body adminapi.Upgrade
	if err := decodeStrict(r, &body); err != nil {
		return body, err
	}
	if strings.TrimSpace(body.Version) == "" {
		return body, badRequest("version", "\"version\" is required: the OpenShift version to upgrade to (\"4.20\" or \"4.20.3\")")
	}
	return body, nil
}

// scaleNodePool serves POST /admin/v1/scale/{id...}: a node pool's replicas, or its
// autoscaling range.
func (s *Server) scaleNodePool(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	body, err := parseScale(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	u := &csv1.NodePoolUpdate{}
	if body.Replicas != nil {
		u.Replicas = proto.Int32(*body.Replicas)
	} else {
		u.Autoscaling = &csv1.NodePoolAutoscaling{Min: body.Autoscaling.Min, Max: body.Autoscaling.Max}
	}
	out, err := s.changeNodePool(ctx, r, "scale node pool", r.PathValue("id"), u)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// upgrade serves POST /admin/v1/upgrade/{id...}: a control-plane upgrade when id names a
// cluster, a node-pool upgrade when it names a node pool.
func (s *Server) upgrade(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	body, err := parseUpgrade(r)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	isNodePool, err := s.isNodePool(ctx, id)
	if err != nil {
		return err
	}
	var out adminapi.Change
	if isNodePool {
		out, err = s.changeNodePool(ctx, r, "upgrade node pool", id, &csv1.NodePoolUpdate{VersionId: body.Version})
	} else {
		out, err = s.upgradeCluster(ctx, r, id, body.Version)
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// isNodePool says whether id names a node pool rather than a cluster: by its ARM resource type,
// or, for a Cluster Service ID, by which of the two Cluster Service knows.
func (s *Server) isNodePool(ctx context.Context, id string) (bool, error) {
	if rid, isARM := armResourceID(id); isARM {
		return rid != nil && strings.EqualFold(rid.ResourceType(), nodePoolType), nil
	}
	_, err := s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
	if status.Code(err) != codes.NotFound {
		return false, nil // a cluster, or an error findCluster reports again
	}
	_, err = s.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: id})
	if status.Code(err) == codes.NotFound {
		return false, notFound(id, "no cluster or node pool %s in Cluster Service; hcpctl cluster list and hcpctl cluster describe show the IDs", id)
	}
	return true, nil
}

// upgradeCluster starts a control-plane upgrade through UpdateCluster, as the customer's PATCH
// of properties.version.id does: Cluster Service checks the version's upgrade edge. An upgrade
// starts an upgrade policy, which is status: it does not move the spec revision, so an If-Match
// read before another SRE's upgrade still holds; that second upgrade is refused by Cluster
// Service's one-active-policy rule instead (FailedPrecondition → 409), unless it is the same
// version, which is the running upgrade and only recorded in ARM.
func (s *Server) upgradeCluster(ctx context.Context, r *http.Request, id, version string) (adminapi.Change, error) {
	c, doc, err := s.findCluster(ctx, id)
	if err != nil {
		return adminapi.Change{}, err
	}
	specRev, conditional, err := changeSpecRevision(r, doc, id)
	if err != nil {
		return adminapi.Change{}, err
	}
	upd := &csv1.ClusterUpdate{VersionId: version}
	updated := c
	// The same upgrade again (a retry after the ARM write failed) only records it in ARM; with a
	// stale If-Match it goes to Cluster Service, which answers 412.
	if !upgradeUnderway(c, version) || (conditional && specRev != c.GetSpecRevision()) {
		if updated, err = s.cfg.Clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: c.GetId(), Update: upd, SpecRevision: specRev}); err != nil {
			return adminapi.Change{}, refused("upgrade cluster", id, conditional, err)
		}
	}
	armDoc, err := s.recordInARM(ctx, doc, map[string]any{armPath(upd, "version_id"): version})
	if err != nil {
		return adminapi.Change{}, err
	}
	return clusterChange(updated, armDoc), nil
}

func clusterChange(c *csv1.Cluster, armDoc string) adminapi.Change {
	out := adminapi.Change{Kind: adminapi.KindCluster, ID: c.GetId(), ARMResourceID: c.GetArmResourceId(),
		State: stateName(c.GetStatus().GetState().String()), Revision: c.GetRevision(), ETag: revisionETag(c.GetSpecRevision()),
		Version: c.GetSpec().GetVersionId(), CurrentVersion: c.GetStatus().GetCurrentVersion(), PausedUntil: c.GetSpec().GetPausedUntil(), ARMDocument: armDoc}
	if u := c.GetStatus().GetUpgrade(); u != nil {
		out.Upgrade = &adminapi.UpgradeState{ID: u.GetId(), State: stateName(u.GetState().String()), FromVersion: u.GetFromVersion(),
			ToVersion: u.GetToVersion(), Message: u.GetMessage()}
	}
	return out
}

// parsePause reads a pause or resume body: the value of HyperShift's spec.pausedUntil to set
// ("true" without until, "" to resume). Whether until is a valid time is Cluster Service's to
// judge.
func parsePause(r *http.Request, resume bool) (adminapi.Pause, string, error) {
	var body adminapi.Pause
	if err := decodeStrict(r, &body); err != nil {
		return body, "", err
	}
	switch {
	case resume && body.Until != "":
		return body, "", badRequest("until", "resume takes no \"until\"")
	case resume:
		return body, "", nil
	case body.Until == "":
		return body, "true", nil
	}
	return body, body.Until, nil
}

// pauseCluster serves POST /admin/v1/pause/{id...} and POST /admin/v1/resume/{id...}: HyperShift
// stops (or resumes) reconciling the cluster and its node pools, through UpdateCluster's
// paused_until. A pause is allowed while a customer's operation runs (that is when an SRE may
// need it); it is not part of the customer's ARM resource.
func (s *Server) pauseCluster(resume bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := knownParams(r); err != nil {
			return err
		}
		_, until, err := parsePause(r, resume)
		if err != nil {
			return err
		}
		id := r.PathValue("id")
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		what := "pause cluster"
		if resume {
			what = "resume cluster"
		}
		c, _, err := s.findCluster(ctx, id)
		if err != nil {
			return err
		}
		// No ARM document: a pause is not refused during a customer's operation.
		specRev, conditional, err := changeSpecRevision(r, nil, id)
		if err != nil {
			return err
		}
		updated, err := s.cfg.Clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: c.GetId(), Update: &csv1.ClusterUpdate{PausedUntil: &until}, SpecRevision: specRev})
		if err != nil {
			return refused(what, id, conditional, err)
		}
		writeJSON(w, http.StatusOK, clusterChange(updated, adminapi.ARMUnchanged))
		return nil
	}
}

// upgradeUnderway says whether the cluster's newest control-plane upgrade is to exactly this
// version and not finished.
func upgradeUnderway(c *csv1.Cluster, version string) bool {
	u := c.GetStatus().GetUpgrade()
	switch u.GetState() {
	case csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_PENDING, csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_SCHEDULED,
		csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED:
		return u.GetToVersion() == version
	}
	return false
}

// cancelUpgrade serves POST /admin/v1/cancel-upgrade/{id...}: the cluster's control-plane
// upgrade, if it has not started, ends canceled (Cluster Service's CancelUpgradePolicy decides
// whether it may), and the customer's ARM resource shows the version the cluster keeps. A
// repeat after the ARM write failed finds the upgrade ended and only writes the document.
func (s *Server) cancelUpgrade(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	var body struct {
		Reason string `json:"reason"`
	}
	if err := decodeStrict(r, &body); err != nil {
		return err
	}
	if s.cfg.UpgradePolicies == nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "this admin API has no Cluster Service upgrade policies client")
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	if np, err := s.isNodePool(ctx, id); err != nil {
		return err
	} else if np {
		return s.nodePoolUpgradeNotCancelable(ctx, id)
	}
	c, doc, err := s.findCluster(ctx, id)
	if err != nil {
		return err
	}
	if err := armIdle(doc, id); err != nil {
		return err
	}
	u := c.GetStatus().GetUpgrade()
	if u == nil {
		return errorf(http.StatusConflict, adminapi.CodeBusy, id, "cluster %s has no upgrade to cancel", id)
	}
	if u.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_FAILED {
		if _, err := s.cfg.UpgradePolicies.CancelUpgradePolicy(ctx, &csv1.CancelUpgradePolicyRequest{Id: u.GetId(), Reason: auditReason(r)}); err != nil {
			return cancelRefused(id, err)
		}
		if c, err = s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: c.GetId()}); err != nil {
			return upstream("get cluster from Cluster Service", id, err)
		}
	}
	armDoc, err := s.recordInARM(ctx, doc, map[string]any{armPath(&csv1.ClusterUpdate{}, "version_id"): c.GetSpec().GetVersionId()})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, clusterChange(c, armDoc))
	return nil
}

// drainStatus serves GET /admin/v1/shards/{name}/drain-status: the clusters that remain on a
// shard, their states, and the ARM operations active on them or their node pools.
func (s *Server) drainStatus(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	name := r.PathValue("name")
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	all, err := s.shards(ctx)
	if err != nil {
		return err
	}
	out := adminapi.DrainStatus{Clusters: []adminapi.DrainCluster{}}
	found := false
	for _, sh := range all.Shards {
		if sh.Name == name {
			out.Shard, found = sh, true
		}
	}
	if !found {
		return notFound(name, "no provision shard %s; hcpctl shard list shows them", name)
	}
	for token := ""; ; {
		resp, err := s.cfg.Clusters.ListClusters(ctx, &csv1.ListClustersRequest{PageSize: 1000, PageToken: token})
		if err != nil {
			return upstream("list clusters in Cluster Service", "", err)
		}
		for _, c := range resp.GetClusters() {
			if c.GetShard() == name {
				out.Clusters = append(out.Clusters, adminapi.DrainCluster{ClusterSummary: summarize(c), ActiveOperations: []adminapi.Operation{}})
			}
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
	}
	if len(out.Clusters) > 0 {
		for token := ""; ; {
			page, err := s.operations(ctx, false, 1000, token)
			if err != nil {
				return err
			}
			for _, op := range page.Operations {
				for i := range out.Clusters {
					c := &out.Clusters[i]
					lower, armID := strings.ToLower(op.ResourceID), strings.ToLower(c.ARMResourceID)
					if op.InternalID == c.ID || (armID != "" && (lower == armID || strings.HasPrefix(lower, armID+"/"))) {
						c.ActiveOperations = append(c.ActiveOperations, op)
					}
				}
			}
			if token = page.NextPageToken; token == "" {
				break
			}
		}
	}
	out.Drained = len(out.Clusters) == 0
	writeJSON(w, http.StatusOK, out)
	return nil
}
