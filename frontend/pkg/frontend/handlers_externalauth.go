package frontend

import (
	"context"
	"net/http"
	"regexp"
	"time"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// External auths: hcpOpenShiftClusters/{cluster}/externalAuths/{name}, at most one per cluster,
// served by the child-resource handlers (handlers_child.go). Cluster Service's ExternalAuths
// service does the work (the OIDC provider goes into the cluster's HostedCluster). Every
// property may change; a GET shows Cluster Service's state as a condition.

const externalAuthsPath = "/externalauths"

// externalAuthNameRE is the name pattern from the specification.
var externalAuthNameRE = regexp.MustCompile(`^[a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?$`)

var externalAuthResource = &childResource[*api.ExternalAuth, *csv1.ExternalAuthSpec, *csv1.ExternalAuthUpdate]{
	typeName: "externalAuths", path: externalAuthsPath, param: "externalAuthName", nameRE: externalAuthNameRE, noun: "external auth",
	served: func(s *Server) bool { return s.cfg.ExternalAuths != nil },
	meta: func(ea *api.ExternalAuth) childMeta {
		return childMeta{ID: &ea.ID, SystemData: &ea.SystemData, ProvisioningState: &ea.ProvisioningState}
	},
	newModel: func() *api.ExternalAuth { return &api.ExternalAuth{} },
	servedIn: func(v string) bool { _, ok := api.LookupExternalAuth(v); return ok },
	decode: func(r *http.Request, body []byte, _ *api.ExternalAuth) (*api.ExternalAuth, error) {
		return externalAuthVersion(r).DecodeExternalAuth(body)
	},
	patch: func(r *http.Request, stored *api.ExternalAuth, body []byte) (*api.ExternalAuth, error) {
		return api.PatchExternalAuth(externalAuthVersion(r), stored, body)
	},
	render:   func(r *http.Request, ea *api.ExternalAuth) any { return externalAuthVersion(r).RenderExternalAuth(ea) },
	decorate: (*Server).addExternalAuthCondition,
	spec:     externalAuthSpec, fullUpdate: csv1.FullExternalAuthUpdate, diffUpdate: csv1.ExternalAuthUpdateDiff,
	csCreate: func(ctx context.Context, s *Server, csID, clusterCSID, armID string, spec *csv1.ExternalAuthSpec) (proto.Message, string, error) {
		req := &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{Id: csID, ClusterId: clusterCSID, ArmResourceId: armID, Spec: spec}}
		got, err := s.cfg.ExternalAuths.CreateExternalAuth(ctx, req)
		return req, got.GetId(), err
	},
	csUpdate: func(ctx context.Context, s *Server, csID string, u *csv1.ExternalAuthUpdate) (proto.Message, int64, error) {
		req := &csv1.UpdateExternalAuthRequest{Id: csID, Update: u}
		got, err := s.cfg.ExternalAuths.UpdateExternalAuth(ctx, req)
		return req, got.GetSpecRevision(), err
	},
	csDelete: func(ctx context.Context, s *Server, csID string) error {
		_, err := s.cfg.ExternalAuths.DeleteExternalAuth(ctx, &csv1.DeleteExternalAuthRequest{Id: csID})
		return err
	},
}

// externalAuthRoutes registers the external auth paths.
func (s *Server) externalAuthRoutes() { externalAuthResource.routes(s) }

// externalAuthVersion is the request's api-version's external auth schema (one that serves
// external auths: the handlers check it first).
func externalAuthVersion(r *http.Request) api.ExternalAuthVersion {
	v, _ := api.LookupExternalAuth(info(r).apiVersion)
	return v
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
