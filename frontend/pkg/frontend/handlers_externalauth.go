package frontend

import (
	"context"
	"net/http"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
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
	newModel: func() *api.ExternalAuth { return &api.ExternalAuth{} },
	lookup:   api.LookupExternalAuth,
	decode: func(v api.ExternalAuthVersion, body []byte, _ *api.ExternalAuth) (*api.ExternalAuth, error) {
		return v.DecodeExternalAuth(body)
	},
	patch:    api.PatchExternalAuth,
	render:   api.ExternalAuthVersion.RenderExternalAuth,
	decorate: (*Server).addExternalAuthCondition,
	spec:     externalAuthSpec, fullUpdate: csv1.FullExternalAuthUpdate, diffUpdate: csv1.ExternalAuthUpdateDiff,
	cs: func(s *Server) childCalls {
		c := s.cfg.ExternalAuths
		return childCalls{create: rpc(c.CreateExternalAuth), get: rpc(c.GetExternalAuth), update: rpc(c.UpdateExternalAuth), delete: rpc(c.DeleteExternalAuth)}
	},
}

// externalAuthSpec is the Cluster Service spec of an external auth.
func externalAuthSpec(ea *api.ExternalAuth) *csv1.ExternalAuthSpec {
	p := ea.Properties
	spec := &csv1.ExternalAuthSpec{
		Issuer: &csv1.TokenIssuer{Url: p.Issuer.URL, Audiences: p.Issuer.Audiences, Ca: p.Issuer.CA},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{
			Claim: p.Claim.Mappings.Username.Claim, Prefix: p.Claim.Mappings.Username.Prefix, PrefixPolicy: p.Claim.Mappings.Username.PrefixPolicy,
		}},
	}
	if g := p.Claim.Mappings.Groups; g != nil {
		spec.ClaimMappings.Groups = &csv1.GroupsClaimMapping{Claim: g.Claim, Prefix: g.Prefix}
	}
	for _, c := range p.Clients {
		spec.Clients = append(spec.Clients, &csv1.ExternalAuthClient{ComponentName: c.Component.Name, ComponentNamespace: c.Component.AuthClientNamespace,
			ClientId: c.ClientID, ExtraScopes: c.ExtraScopes, Type: c.Type})
	}
	for _, r := range p.Claim.ValidationRules {
		spec.ValidationRules = append(spec.ValidationRules, &csv1.TokenClaimValidationRule{Type: r.Type, RequiredClaim: r.RequiredClaim.Claim, RequiredValue: r.RequiredClaim.RequiredValue})
	}
	return spec
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
		info(r).log.Debug("external auth status unavailable", "externalAuthID", csID, "error", err)
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
