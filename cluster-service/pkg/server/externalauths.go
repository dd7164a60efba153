package server

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// .../hcpOpenShiftClusters/{cluster}/externalAuths/{name}; the name pattern is the ARM
// specification's (1-15 characters).
var armExternalAuthRE = regexp.MustCompile(`(?i)^(/subscriptions/[0-9a-f-]{36}/resourcegroups/[-\w._()]{1,90}/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)/externalauths/([a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?)$`)

// externalAuths serves csv1.ExternalAuthsServer on the shared Server (store, config, drain).
type externalAuths struct {
	csv1.UnimplementedExternalAuthsServer
	*Server
}

// ExternalAuthsServer returns the ExternalAuths service of s.
func (s *Server) ExternalAuthsServer() csv1.ExternalAuthsServer { return externalAuths{Server: s} }

// CreateExternalAuth implements csv1.ExternalAuthsServer.
func (s externalAuths) CreateExternalAuth(ctx context.Context, req *csv1.CreateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	in := req.GetExternalAuth()
	var v violations
	if in == nil {
		v.add("external_auth", "is required")
		return nil, v.err()
	}
	validateClusterID(&v, "external_auth.id", in.GetId())
	validateClusterID(&v, "external_auth.cluster_id", in.GetClusterId())
	m := armExternalAuthRE.FindStringSubmatch(in.GetArmResourceId())
	if m == nil {
		v.add("external_auth.arm_resource_id", "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{cluster}/externalAuths/{name} with a name of 1-15 letters, digits or '-', starting with a letter, not %q", in.GetArmResourceId())
	}
	spec := model.ValidateExternalAuthSpec(v.model(), "external_auth.spec", in.GetSpec())
	if err := v.err(); err != nil {
		return nil, err
	}
	cl, err := s.st.GetCluster(ctx, in.GetClusterId())
	if errors.Is(err, store.ErrNotFound) {
		return nil, status.Errorf(codes.NotFound, "cluster %s not found", in.GetClusterId())
	}
	if err != nil {
		return nil, s.toStatus(ctx, "create external auth", err)
	}
	if !strings.EqualFold(m[1], cl.ARMResourceID) {
		v.add("external_auth.arm_resource_id", "belongs to cluster %s, not to cluster %s (%s)", m[1], cl.ID, cl.ARMResourceID)
		return nil, v.err()
	}
	ea, created, err := s.st.CreateExternalAuth(ctx, &store.ExternalAuth{ID: in.GetId(), ClusterID: cl.ID, ARMResourceID: in.GetArmResourceId(), Spec: spec})
	if errors.Is(err, store.ErrExternalAuthLimit) {
		return nil, limitError(cl.ID, err)
	}
	if err != nil {
		return nil, s.toStatus(ctx, "create external auth", err)
	}
	log := LoggerFrom(ctx).With("external_auth_id", ea.ID, "cluster_id", ea.ClusterID)
	if !created && ea.Deleting {
		return nil, status.Errorf(codes.FailedPrecondition, "the external auth %s for this ARM resource is being deleted; retry when it is gone", ea.ID)
	}
	if created {
		log.Info("external auth created", "arm_resource_id", ea.ARMResourceID, "revision", ea.Revision)
	} else {
		log.Info("external auth already exists for this ARM resource; returning it", "requested_id", in.GetId())
	}
	return store.ExternalAuthProto(ea), nil
}

// limitError is FailedPrecondition with a PreconditionFailure naming the rule: at most one
// external auth per cluster.
func limitError(clusterID string, err error) error {
	st := status.New(codes.FailedPrecondition, "cluster "+clusterID+" already has an external auth ("+strings.TrimPrefix(err.Error(), store.ErrExternalAuthLimit.Error()+": ")+"); a cluster has at most one")
	if d, derr := st.WithDetails(&errdetails.PreconditionFailure{Violations: []*errdetails.PreconditionFailure_Violation{{
		Type: "EXTERNAL_AUTH_LIMIT", Subject: "clusters/" + clusterID, Description: "a cluster has at most one external auth",
	}}}); derr == nil {
		st = d
	}
	return st.Err()
}

// GetExternalAuth implements csv1.ExternalAuthsServer.
func (s externalAuths) GetExternalAuth(ctx context.Context, req *csv1.GetExternalAuthRequest) (*csv1.ExternalAuth, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	ea, err := s.st.GetExternalAuth(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "get external auth", err)
	}
	return store.ExternalAuthProto(ea), nil
}

// ListExternalAuths implements csv1.ExternalAuthsServer.
func (s externalAuths) ListExternalAuths(ctx context.Context, req *csv1.ListExternalAuthsRequest) (*csv1.ListExternalAuthsResponse, error) {
	var v violations
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	if err := v.err(); err != nil {
		return nil, err
	}
	if _, err := s.st.GetCluster(ctx, req.GetClusterId()); err != nil {
		return nil, s.toStatus(ctx, "list external auths", err)
	}
	eas, err := s.st.ListExternalAuths(ctx, req.GetClusterId())
	if err != nil {
		return nil, s.toStatus(ctx, "list external auths", err)
	}
	resp := &csv1.ListExternalAuthsResponse{}
	for _, ea := range eas {
		resp.ExternalAuths = append(resp.ExternalAuths, store.ExternalAuthProto(ea))
	}
	return resp, nil
}

// UpdateExternalAuth implements csv1.ExternalAuthsServer: the partial update is applied to the
// stored spec under the write lock and the result validated by model.ValidateExternalAuthSpec, as a
// create's.
func (s externalAuths) UpdateExternalAuth(ctx context.Context, req *csv1.UpdateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if req.GetRevision() < 0 {
		v.add("revision", "must not be negative")
	}
	if req.GetSpecRevision() < 0 {
		v.add("spec_revision", "must not be negative")
	}
	if req.GetUpdate() == nil {
		v.add("update", "is required: set the parts to change (an empty update changes nothing)")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	cur, err := s.st.GetExternalAuth(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "update external auth", err)
	}
	cl, err := s.st.GetCluster(ctx, cur.ClusterID)
	if err != nil {
		return nil, s.toStatus(ctx, "update external auth", err)
	}
	if cur.Deleting || cl.Deleting {
		return nil, status.Errorf(codes.FailedPrecondition, "external auth %s is being deleted", cur.ID)
	}
	ea, err := s.st.UpdateExternalAuth(ctx, cur.ID, store.Precondition{Revision: req.GetRevision(), SpecRevision: req.GetSpecRevision()}, func(cur *store.ExternalAuth) (*csv1.ExternalAuthSpec, error) {
		// The update applied to the stored spec, validated whole as on create.
		var specV violations
		spec := model.ValidateExternalAuthSpec(specV.model(), "spec", csv1.ApplyExternalAuthUpdate(cur.Spec, req.GetUpdate()))
		return spec, updateViolations(specV, (&csv1.ExternalAuthUpdate{}).ProtoReflect().Descriptor()).err()
	})
	if _, ok := status.FromError(err); ok && err != nil {
		return nil, err // the update's violations, already a status
	}
	if err != nil {
		return nil, s.toStatus(ctx, "update external auth", err)
	}
	LoggerFrom(ctx).Info("external auth updated", "external_auth_id", ea.ID, "cluster_id", ea.ClusterID, "revision", ea.Revision)
	return store.ExternalAuthProto(ea), nil
}

// DeleteExternalAuth implements csv1.ExternalAuthsServer.
func (s externalAuths) DeleteExternalAuth(ctx context.Context, req *csv1.DeleteExternalAuthRequest) (*csv1.ExternalAuth, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if err := v.err(); err != nil {
		return nil, err
	}
	ea, err := s.st.MarkExternalAuthDeleting(ctx, req.GetId())
	if err != nil {
		return nil, s.toStatus(ctx, "delete external auth", err)
	}
	LoggerFrom(ctx).Info("external auth deletion requested", "external_auth_id", ea.ID, "cluster_id", ea.ClusterID, "revision", ea.Revision)
	return store.ExternalAuthProto(ea), nil
}

// WatchExternalAuths implements csv1.ExternalAuthsServer, exactly as WatchClusters does.
func (s externalAuths) WatchExternalAuths(req *csv1.WatchExternalAuthsRequest, stream grpc.ServerStreamingServer[csv1.ExternalAuthEvent]) error {
	return serveWatch(s.Server, req.GetSinceRevision(), stream, watchLog[*csv1.ExternalAuthEvent]{
		snapshot: func(ctx context.Context) ([]*csv1.ExternalAuthEvent, int64, error) {
			eas, rev, err := s.st.ExternalAuthSnapshot(ctx)
			return messages(eas, func(ea *store.ExternalAuth) *csv1.ExternalAuthEvent {
				return &csv1.ExternalAuthEvent{Type: csv1.EventType_EVENT_TYPE_UPSERTED, Revision: ea.Revision, ExternalAuth: store.ExternalAuthProto(ea)}
			}), rev, err
		},
		eventsAfter: func(ctx context.Context, after int64, limit int) ([]*csv1.ExternalAuthEvent, error) {
			evs, err := s.st.ExternalAuthEventsAfter(ctx, after, limit)
			return messages(evs, func(ev store.ExternalAuthEvent) *csv1.ExternalAuthEvent {
				return &csv1.ExternalAuthEvent{Type: ev.Type, Revision: ev.Revision, ExternalAuth: store.ExternalAuthProto(ev.ExternalAuth)}
			}), err
		},
		compacted: s.st.CompactedExternalAuthRevision,
		bookmark: func(rev int64) *csv1.ExternalAuthEvent {
			return &csv1.ExternalAuthEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: rev}
		},
		snapshotOp: "watch external auths snapshot", compactedOp: "watch external auths", eventsOp: "watch external auth events",
		history: "external auth event history",
	})
}
