package frontend

import (
	"context"
	"net/http"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/model"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// External auths: hcpOpenShiftClusters/{cluster}/externalAuths/{name}, at most one per cluster,
// served by the child-resource handlers (handlers_child.go). Cluster Service's ExternalAuths
// service does the work (the OIDC provider goes into the cluster's HostedCluster). Every
// property may change; a GET shows Cluster Service's state as a condition.

var externalAuthResource = &childResource[*api.ExternalAuth, *csv1.ExternalAuthSpec, *csv1.ExternalAuthUpdate, api.ExternalAuthVersion]{
	typeName: "externalAuths", noun: "external auth",
	served: func(s *Server) bool { return s.cfg.ExternalAuths != nil },
	meta: func(ea *api.ExternalAuth) childMeta {
		return childMeta{ID: &ea.ID, SystemData: &ea.SystemData, ProvisioningState: &ea.ProvisioningState}
	},
	newModel: func() *api.ExternalAuth { return &api.ExternalAuth{Spec: &csv1.ExternalAuthSpec{}} },
	lookup:   api.LookupExternalAuth,
	decode: func(v api.ExternalAuthVersion, body []byte, _ *api.ExternalAuth) (*api.ExternalAuth, error) {
		return v.DecodeExternalAuth(body)
	},
	patch:  api.PatchExternalAuth,
	render: api.ExternalAuthVersion.RenderExternalAuth,
	// The frontend has no external auth defaults of its own: what the caller left out is
	// filled by Cluster Service's model (DefaultExternalAuth) before the first write of a
	// create, and before a replace or a patch is compared and sent, so the document holds what
	// Cluster Service holds.
	carry: func(_ api.ExternalAuthVersion, _, next *api.ExternalAuth) { withExternalAuthDefaults(next) },
	prepareCreate: func(_ *Server, _ *http.Request, _ *armdoc.ResourceDocument, ea *api.ExternalAuth) error {
		withExternalAuthDefaults(ea)
		return nil
	},
	decorate:   (*Server).addExternalAuthCondition,
	spec:       func(ea *api.ExternalAuth) *csv1.ExternalAuthSpec { return ea.Spec },
	fullUpdate: csv1.FullExternalAuthUpdate, diffUpdate: csv1.ExternalAuthUpdateDiff,
	cs: func(s *Server) childCalls {
		c := s.cfg.ExternalAuths
		return childCalls{create: rpc(c.CreateExternalAuth), get: rpc(c.GetExternalAuth), update: rpc(c.UpdateExternalAuth), delete: rpc(c.DeleteExternalAuth)}
	},
}

// withExternalAuthDefaults fills what ea leaves empty with Cluster Service's defaults
// (model.DefaultExternalAuth, the one place they are written).
func withExternalAuthDefaults(ea *api.ExternalAuth) {
	ea.Spec = model.DefaultExternalAuth(ea.Spec)
}

// addExternalAuthCondition shows Cluster Service's state as the specification's condition
// (READY → Available, ERROR → Degraded, installing or updating → Progressing). Best effort: a
// GET still answers from the store without Cluster Service.
func (s *Server) addExternalAuthCondition(r *http.Request, ea *api.ExternalAuth, csID string) {
	if csID == "" {
		return
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	ctx, cancel2 := context.WithTimeout(ctx, 2*time.Second)
	defer cancel2()
	got, err := s.cfg.ExternalAuths.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: csID})
	if err != nil {
		info(r).logger().Debug("external auth status unavailable", "externalAuthID", csID, "error", err)
		return
	}
	st := got.GetStatus()
	c := &api.Condition{Status: "True", Reason: "AsExpected", Message: st.GetMessage(), LastTransitionTime: got.GetUpdateTime().AsTime()}
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY:
		c.Type = "Available"
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR:
		c.Type, c.Reason = "Degraded", st.GetErrorCode()
		if !conditionReasonRE.MatchString(c.Reason) {
			c.Reason = "Unknown"
		}
	default:
		c.Type, c.Reason = "Progressing", "Progressing"
	}
	ea.Condition = c
}
