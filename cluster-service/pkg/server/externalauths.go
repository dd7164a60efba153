package server

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/logattr"
)

// .../hcpOpenShiftClusters/{cluster}/externalAuths/{name}; the name pattern is the ARM
// specification's (1-15 characters).
var armExternalAuthRE = regexp.MustCompile(`(?i)^(/subscriptions/[0-9a-f-]{36}/resourcegroups/[-\w._()]{1,90}/providers/microsoft\.redhatopenshift/hcpopenshiftclusters/[a-zA-Z]([-a-zA-Z0-9]{0,52}[a-zA-Z0-9])?)/externalauths/([a-zA-Z]([-a-zA-Z0-9]{0,13}[a-zA-Z0-9])?)$`)

const (
	maxAudiences       = 10
	maxOIDCClients     = 20
	maxClaimLength     = 256
	maxComponentName   = 256
	maxComponentNS     = 63
	requiredClaimRule  = "RequiredClaim"
	prefixPolicyPrefix = "Prefix"
)

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
		validate: func(v *violations, in *csv1.ExternalAuthSpec, _ *store.Cluster) *csv1.ExternalAuthSpec {
			return validateExternalAuthSpec(v, "external_auth.spec", in)
		},
		decide: func(v *violations, _ *store.Cluster, cur *store.ExternalAuth, u *csv1.ExternalAuthUpdate) (*csv1.ExternalAuthSpec, *csv1.UpgradePolicy) {
			return validateExternalAuthSpec(v, "spec", csv1.ApplyExternalAuthUpdate(cur.Spec, u)), nil
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

// validateExternalAuthSpec checks a spec against the rules of OpenShift's OIDC provider
// (config.openshift.io/v1 Authentication) and the ARM specification, and returns it normalised:
// prefix policy "None" becomes "" (no opinion), an empty rule type becomes RequiredClaim.
func validateExternalAuthSpec(v *violations, field string, in *csv1.ExternalAuthSpec) *csv1.ExternalAuthSpec {
	if in == nil {
		v.add(field, "is required")
		return nil
	}
	spec := proto.Clone(in).(*csv1.ExternalAuthSpec)
	iss := spec.GetIssuer()
	switch u, err := url.Parse(iss.GetUrl()); {
	case iss.GetUrl() == "":
		v.add(field+".issuer.url", "is required")
	case err != nil || u.Scheme != "https" || u.Host == "":
		v.add(field+".issuer.url", "must be an https URL, not %q", iss.GetUrl())
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		v.add(field+".issuer.url", "must not have a query, fragment or user info")
	}
	auds := map[string]bool{}
	switch n := len(iss.GetAudiences()); {
	case n == 0:
		v.add(field+".issuer.audiences", "must have at least one entry")
	case n > maxAudiences:
		v.add(field+".issuer.audiences", "must have at most %d entries, has %d", maxAudiences, n)
	}
	for i, a := range iss.GetAudiences() {
		if a == "" {
			v.add(fieldIndex(field+".issuer.audiences", i), "must not be empty")
		}
		if auds[a] {
			v.add(fieldIndex(field+".issuer.audiences", i), "%q is listed twice", a)
		}
		auds[a] = true
	}
	if ca := iss.GetCa(); ca != "" && !validPEMBundle(ca) {
		v.add(field+".issuer.ca", "must be PEM-encoded certificates")
	}

	if n := len(spec.GetClients()); n > maxOIDCClients {
		v.add(field+".clients", "must have at most %d entries, has %d", maxOIDCClients, n)
	}
	components := map[string]bool{}
	for i, c := range spec.GetClients() {
		f := fieldIndex(field+".clients", i)
		lengthIn(v, f+".component_name", c.GetComponentName(), 1, maxComponentName)
		lengthIn(v, f+".component_namespace", c.GetComponentNamespace(), 1, maxComponentNS)
		key := c.GetComponentNamespace() + "/" + c.GetComponentName()
		if components[key] {
			v.add(f+".component_name", "component %s is configured twice", key)
		}
		components[key] = true
		switch {
		case c.GetClientId() == "":
			v.add(f+".client_id", "is required")
		case len(auds) > 0 && !auds[c.GetClientId()]:
			v.add(f+".client_id", "%q must be one of the issuer's audiences", c.GetClientId())
		}
		if c.GetType() == "" {
			v.add(f+".type", "is required")
		}
		oneOf(v, f+".type", c.GetType(), "Confidential", "Public")
		for j, sc := range c.GetExtraScopes() {
			if sc == "" || strings.ContainsAny(sc, " \t\n") {
				v.add(fieldIndex(f+".extra_scopes", j), "must be a non-empty scope without spaces, not %q", sc)
			}
		}
	}

	cm := spec.GetClaimMappings()
	un := cm.GetUsername()
	lengthIn(v, field+".claim_mappings.username.claim", un.GetClaim(), 1, maxClaimLength)
	if un.GetPrefixPolicy() == "None" {
		un.PrefixPolicy = ""
	}
	oneOf(v, field+".claim_mappings.username.prefix_policy", un.GetPrefixPolicy(), "None", "Prefix", "NoPrefix")
	switch {
	case un.GetPrefixPolicy() == prefixPolicyPrefix && un.GetPrefix() == "":
		v.add(field+".claim_mappings.username.prefix", "is required when the prefix policy is Prefix")
	case un.GetPrefixPolicy() != prefixPolicyPrefix && un.GetPrefix() != "":
		v.add(field+".claim_mappings.username.prefix", "must be empty unless the prefix policy is Prefix")
	}
	if g := cm.GetGroups(); g != nil {
		lengthIn(v, field+".claim_mappings.groups.claim", g.GetClaim(), 1, maxClaimLength)
	}
	for i, r := range spec.GetValidationRules() {
		f := fieldIndex(field+".validation_rules", i)
		if r.GetType() == "" {
			r.Type = requiredClaimRule
		}
		oneOf(v, f+".type", r.GetType(), requiredClaimRule)
		if r.GetRequiredClaim() == "" {
			v.add(f+".required_claim", "is required")
		}
		if r.GetRequiredValue() == "" {
			v.add(f+".required_value", "is required")
		}
	}
	return spec
}

func lengthIn(v *violations, field, s string, lo, hi int) {
	switch n := len(s); {
	case n == 0 && lo > 0:
		v.add(field, "is required")
	case n < lo || n > hi:
		v.add(field, "must be %d to %d characters, has %d", lo, hi, n)
	}
}

func fieldIndex(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }

// validPEMBundle: at least one CERTIFICATE block, every block a parseable certificate, nothing
// but whitespace around them.
func validPEMBundle(s string) bool {
	rest := []byte(s)
	n := 0
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return false
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return false
		}
		n++
	}
	return n > 0 && strings.TrimSpace(string(rest)) == ""
}
