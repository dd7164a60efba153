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
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
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

// externalAuthService is the external auth kind of the child RPCs.
func (s *Server) externalAuthService() *childService[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus, *csv1.ExternalAuth, *csv1.ExternalAuthUpdate, *csv1.ExternalAuthEvent] {
	return &childService[*csv1.ExternalAuthSpec, *csv1.ExternalAuthStatus, *csv1.ExternalAuth, *csv1.ExternalAuthUpdate, *csv1.ExternalAuthEvent]{
		what: "external auth", field: "external_auth", logKey: logattr.KeyExternalAuthID, armRE: armExternalAuthRE,
		armHint: "must be /subscriptions/{uuid}/resourceGroups/{rg}/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/{cluster}/externalAuths/{name} with a name of 1-15 letters, digits or '-', starting with a letter, not %q",
		validate: func(v *violations, in *csv1.ExternalAuthSpec, cl *store.Cluster) *csv1.ExternalAuthSpec {
			spec := model.ValidateExternalAuthSpec(v.model(), "external_auth.spec", in)
			if len(*v) == 0 {
				// The external auth travels in its cluster's work. Its name is not the hook's: a
				// stand-in of the longest (15 characters) builds the same size.
				s.clusterWorkFits(v, "external_auth.spec", spec, cl, cl.Spec,
					&manifests.ExternalAuth{ARMResourceID: cl.ARMResourceID + "/externalAuths/" + strings.Repeat("e", 15), Spec: spec}, nil)
			}
			return spec
		},
		decide: func(v *violations, cl *store.Cluster, cur *store.ExternalAuth, u *csv1.ExternalAuthUpdate) (*csv1.ExternalAuthSpec, *csv1.UpgradePolicy) {
			spec := model.ValidateExternalAuthSpec(v.model(), "spec", csv1.ApplyExternalAuthUpdate(cur.Spec, u))
			if len(*v) == 0 {
				s.clusterWorkFits(v, "spec", spec, cl, cl.Spec, &manifests.ExternalAuth{ARMResourceID: cur.ARMResourceID, Spec: spec},
					&storedClusterWork{spec: cl.Spec, ea: &manifests.ExternalAuth{ARMResourceID: cur.ARMResourceID, Spec: cur.Spec}})
			}
			return spec, nil
		},
		createError: func(clusterID string, err error) error {
			if errors.Is(err, store.ErrExternalAuthLimit) {
				return limitError(clusterID, err)
			}
			return nil
		},
		store: s.st.ExternalAuths(), toProto: store.ExternalAuthProto,
	}
}

// CreateExternalAuth implements csv1.ExternalAuthsServer.
func (s externalAuths) CreateExternalAuth(ctx context.Context, req *csv1.CreateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	return s.externalAuthService().create(ctx, s.Server, req.GetExternalAuth())
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
	return s.externalAuthService().get(ctx, s.Server, req.GetId())
}

// ListExternalAuths implements csv1.ExternalAuthsServer.
func (s externalAuths) ListExternalAuths(ctx context.Context, req *csv1.ListExternalAuthsRequest) (*csv1.ListExternalAuthsResponse, error) {
	eas, err := s.externalAuthService().list(ctx, s.Server, req.GetClusterId())
	if err != nil {
		return nil, err
	}
	return &csv1.ListExternalAuthsResponse{ExternalAuths: eas}, nil
}

// UpdateExternalAuth implements csv1.ExternalAuthsServer (childService.update).
func (s externalAuths) UpdateExternalAuth(ctx context.Context, req *csv1.UpdateExternalAuthRequest) (*csv1.ExternalAuth, error) {
	return s.externalAuthService().update(ctx, s.Server, req)
}

// DeleteExternalAuth implements csv1.ExternalAuthsServer.
func (s externalAuths) DeleteExternalAuth(ctx context.Context, req *csv1.DeleteExternalAuthRequest) (*csv1.ExternalAuth, error) {
	return s.externalAuthService().delete(ctx, s.Server, req.GetId())
}

// WatchExternalAuths implements csv1.ExternalAuthsServer, exactly as WatchClusters does.
func (s externalAuths) WatchExternalAuths(req *csv1.WatchExternalAuthsRequest, stream grpc.ServerStreamingServer[csv1.ExternalAuthEvent]) error {
	return s.externalAuthService().watch(s.Server, req.GetSinceRevision(), stream)
}
