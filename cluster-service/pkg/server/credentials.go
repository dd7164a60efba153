package server

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/authz"
	"github.com/openhcp/openhcp/cluster-service/pkg/breakglass"
	"github.com/openhcp/openhcp/cluster-service/pkg/srestatement"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/internal/identity"
	"github.com/openhcp/openhcp/internal/logattr"
)

// minValiditySeconds is the least lifetime a CSR may ask for (Kubernetes' spec.expirationSeconds).
const minValiditySeconds = 600

// maxCSRBytes bounds a customer's certificate request.
const maxCSRBytes = 16 << 10

// credentials serves csv1.CredentialsServer on the shared Server (store, config, drain).
type credentials struct {
	csv1.UnimplementedCredentialsServer
	*Server
}

// CredentialsServer returns the break-glass Credentials service of s.
func (s *Server) CredentialsServer() csv1.CredentialsServer { return credentials{Server: s} }

// RequestCredential implements csv1.CredentialsServer.
func (s credentials) RequestCredential(ctx context.Context, req *csv1.RequestCredentialRequest) (*csv1.Credential, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	csr := []byte(req.GetCertificateSigningRequest())
	if len(csr) > maxCSRBytes {
		v.add("certificate_signing_request", "must be at most %d bytes", maxCSRBytes)
	} else if len(csr) > 0 {
		if _, err := breakglass.ParseRequest(csr); err != nil {
			v.add("certificate_signing_request", "%s", err.Error())
		}
	}
	// An SRE credential is the admin API's alone, and the admin API asks for no other kind.
	caller, authenticated := authz.Caller(ctx)
	if authenticated && (caller == authz.SRE) != (req.GetSre() != nil) {
		return nil, status.Errorf(codes.PermissionDenied, "%s may not request this kind of credential (sre set: %t)", caller, req.GetSre() != nil)
	}
	if !authenticated {
		// Plaintext, which only a loopback listener in a process's own tests serves.
		caller = "unauthenticated (plaintext loopback)"
	}
	var statement *csv1.SREStatement
	if sre := req.GetSre(); sre != nil {
		if len(csr) > 0 {
			v.add("certificate_signing_request", "must be empty for an SRE credential: Cluster Service makes the key")
		}
		if err := identity.ValidPerson(sre.GetPerson()); err != nil {
			v.add("sre.person", "must be an SRE person's name: %v", err)
		}
		if _, ok := breakglass.SREGroups[sre.GetAccess()]; !ok {
			v.add("sre.access", "must be SRE_ACCESS_READ_ONLY or SRE_ACCESS_ADMIN, got %s", sre.GetAccess())
		}
		if sre.GetValiditySeconds() < minValiditySeconds {
			v.add("sre.validity_seconds", "must be at least %d (Kubernetes' least CSR expiration), got %d", minValiditySeconds, sre.GetValiditySeconds())
		}
		if len(v) > 0 {
			return nil, v.err()
		}
		// The person is taken from the admin API's signed statement only, never from the
		// request's own fields, which must say the same.
		st, err := srestatement.Verify(s.cfg.SREStatementKey, req.GetSreStatement(), s.cfg.Now())
		if err == nil {
			err = srestatement.Matches(st, req.GetId(), req.GetClusterId(), sre)
		}
		if err != nil {
			LoggerFrom(ctx).Warn("SRE credential refused: no valid statement from the admin API", "caller", caller, "clusterID", req.GetClusterId(),
				"credentialID", req.GetId(), logattr.KeyPerson, sre.GetPerson(), "error", err)
			return nil, status.Errorf(codes.PermissionDenied, "SRE credential refused: %v", err)
		}
		statement = st
	}
	if len(v) > 0 {
		return nil, v.err()
	}
	in := &store.Credential{ID: req.GetId(), ClusterID: req.GetClusterId(), CSR: string(csr), SRE: req.GetSre()}
	if sre := req.GetSre(); sre != nil {
		key, generated, err := breakglass.NewSRERequest(statement.GetPerson(), statement.GetAccess())
		if err != nil {
			return nil, s.toStatus(ctx, "request credential", err)
		}
		in.PrivateKey, in.CSR = key, string(generated)
	} else if len(csr) == 0 {
		// Cluster Service makes the key; the user name records which credential it was.
		key, generated, err := breakglass.NewRequest(req.GetId())
		if err != nil {
			return nil, s.toStatus(ctx, "request credential", err)
		}
		in.PrivateKey, in.CSR = key, string(generated)
	}
	in.Status = &csv1.CredentialStatus{Username: breakglass.Username([]byte(in.CSR))}
	c, created, err := s.st.CreateCredential(ctx, in, s.credentialAudit(caller, in, statement))
	if err != nil {
		return nil, s.credentialStatus(ctx, "request credential", err)
	}
	log := LoggerFrom(ctx).With("credentialID", c.ID, "clusterID", c.ClusterID)
	if created {
		log.Info("break-glass credential requested", "caller", caller, "username", c.Status.GetUsername(), "customer_csr", c.PrivateKey == nil, "revision", c.Revision,
			logattr.KeyPerson, c.SRE.GetPerson(), logattr.KeyAccess, c.SRE.GetAccess().String(), logattr.KeyApprover, c.SRE.GetApprover(),
			"validity_seconds", c.SRE.GetValiditySeconds(), "sre_statement_request_id", statement.GetRequestId())
	} else {
		log.Info("break-glass credential already requested; returning it")
	}
	return store.CredentialProto(c, s.cfg.Now()), nil
}

// credentialAudit is the audit record of in, asked for by caller (statement is the admin
// API's, for an SRE credential).
func (s credentials) credentialAudit(caller string, in *store.Credential, statement *csv1.SREStatement) store.CredentialAudit {
	a := store.CredentialAudit{Identity: caller, Username: in.Status.GetUsername()}
	if statement == nil {
		a.ForWhom, a.Kind = a.Username, store.AuditKindCustomer
		a.ValiditySeconds = int32(s.cfg.CustomerCredentialValidity / time.Second)
		return a
	}
	a.ForWhom, a.Kind = statement.GetPerson(), store.AuditKindSREReadOnly
	if statement.GetAccess() == csv1.SREAccess_SRE_ACCESS_ADMIN {
		a.Kind = store.AuditKindSREAdmin
	}
	a.ValiditySeconds, a.Reason, a.Approver, a.RequestID = statement.GetValiditySeconds(), statement.GetReason(), statement.GetApprover(), statement.GetRequestId()
	return a
}

// ownsCredential reports whether ctx's caller may see c: an identity is answered only for the
// credential kinds it owns (authz.CredentialKinds). Plaintext callers (a process's own tests on
// loopback) have no identity and see every kind.
func ownsCredential(ctx context.Context, c *store.Credential) bool {
	caller, ok := authz.Caller(ctx)
	return !ok || authz.MaySeeCredential(caller, c.SRE != nil)
}

// GetCredential implements csv1.CredentialsServer. A credential of a kind the caller does not
// own is NotFound, as an unknown one: its existence is not told.
func (s credentials) GetCredential(ctx context.Context, req *csv1.GetCredentialRequest) (*csv1.Credential, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if len(v) > 0 {
		return nil, v.err()
	}
	c, err := s.st.GetCredential(ctx, req.GetId())
	if err == nil && !ownsCredential(ctx, c) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.toStatus(ctx, "get credential", err)
	}
	if req.GetIncludeKubeconfig() && c.SRE != nil {
		// The sre identity alone names nobody: an SRE's kubeconfig goes only with the admin
		// API's statement for this very credential, as its request did.
		st, err := srestatement.Verify(s.cfg.SREStatementKey, req.GetSreStatement(), s.cfg.Now())
		if err == nil {
			err = srestatement.Matches(st, c.ID, c.ClusterID, c.SRE)
		}
		if err != nil {
			LoggerFrom(ctx).Warn("SRE kubeconfig refused: no valid statement from the admin API", "credentialID", c.ID, "clusterID", c.ClusterID,
				logattr.KeyPerson, c.SRE.GetPerson(), "error", err)
			return nil, status.Errorf(codes.PermissionDenied, "SRE kubeconfig refused: %v", err)
		}
	}
	out := store.CredentialProto(c, s.cfg.Now())
	if req.GetIncludeKubeconfig() && out.GetStatus().GetState() == csv1.CredentialState_CREDENTIAL_STATE_ISSUED {
		kc, err := breakglass.Kubeconfig(c.ClusterID, c.APIURL, []byte(c.CABundle), []byte(c.Certificate), c.PrivateKey)
		if err != nil {
			return nil, s.toStatus(ctx, "get credential", err)
		}
		out.Kubeconfig = kc
		LoggerFrom(ctx).Info("break-glass kubeconfig handed out", "credentialID", c.ID, "clusterID", c.ClusterID,
			"username", c.Status.GetUsername(), "expires", c.Status.GetExpirationTime().AsTime().Format(time.RFC3339))
	}
	return out, nil
}

// ListCredentials implements csv1.CredentialsServer.
func (s credentials) ListCredentials(ctx context.Context, req *csv1.ListCredentialsRequest) (*csv1.ListCredentialsResponse, error) {
	var v violations
	if !req.GetSreOnly() || req.GetClusterId() != "" {
		validateClusterID(&v, "cluster_id", req.GetClusterId())
	}
	if req.GetPerson() != "" && !req.GetSreOnly() {
		v.add("person", "filters SRE credentials only; list SRE credentials to use it")
	}
	if len(v) > 0 {
		return nil, v.err()
	}
	var cs []*store.Credential
	var err error
	if req.GetSreOnly() {
		cs, err = s.st.ListSRECredentials(ctx, req.GetClusterId(), req.GetPerson())
	} else {
		cs, err = s.st.ListCredentials(ctx, req.GetClusterId())
	}
	if err != nil {
		return nil, s.toStatus(ctx, "list credentials", err)
	}
	out := &csv1.ListCredentialsResponse{}
	now := s.cfg.Now()
	for _, c := range cs {
		if ownsCredential(ctx, c) {
			out.Credentials = append(out.Credentials, store.CredentialProto(c, now))
		}
	}
	return out, nil
}

// RevokeCredentials implements csv1.CredentialsServer.
func (s credentials) RevokeCredentials(ctx context.Context, req *csv1.RevokeCredentialsRequest) (*csv1.Revocation, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	validateClusterID(&v, "cluster_id", req.GetClusterId())
	if len(v) > 0 {
		return nil, v.err()
	}
	// Each identity revokes the kind of credential it owns, through that kind's own signer.
	if caller, ok := authz.Caller(ctx); ok && !authz.MaySeeCredential(caller, req.GetSre()) {
		return nil, status.Errorf(codes.PermissionDenied, "%s may not revoke this kind of credential (sre: %t)", caller, req.GetSre())
	}
	r, created, err := s.st.CreateRevocation(ctx, &store.Revocation{ID: req.GetId(), ClusterID: req.GetClusterId(), SRE: req.GetSre()})
	if err != nil {
		return nil, s.credentialStatus(ctx, "revoke credentials", err)
	}
	if r.SRE != req.GetSre() {
		return nil, status.Errorf(codes.AlreadyExists, "revocation %s revokes the other kind of credential", r.ID)
	}
	if created {
		LoggerFrom(ctx).Info("break-glass credentials revocation started", "revocationID", r.ID, "clusterID", r.ClusterID, "sre", r.SRE, "revision", r.Revision)
	}
	return store.RevocationProto(r), nil
}

// GetRevocation implements csv1.CredentialsServer.
func (s credentials) GetRevocation(ctx context.Context, req *csv1.GetRevocationRequest) (*csv1.Revocation, error) {
	var v violations
	validateClusterID(&v, "id", req.GetId())
	if len(v) > 0 {
		return nil, v.err()
	}
	r, err := s.st.GetRevocation(ctx, req.GetId())
	if caller, ok := authz.Caller(ctx); err == nil && ok && !authz.MaySeeCredential(caller, r.SRE) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.toStatus(ctx, "get revocation", err)
	}
	return store.RevocationProto(r), nil
}

// credentialStatus maps the break-glass preconditions to FailedPrecondition, the rest as usual.
func (s credentials) credentialStatus(ctx context.Context, op string, err error) error {
	if errors.Is(err, store.ErrRevoking) || errors.Is(err, store.ErrClusterNotReady) {
		return status.Error(codes.FailedPrecondition, op+": "+err.Error())
	}
	return s.toStatus(ctx, op, err)
}

// WatchCredentials implements csv1.CredentialsServer. The event log holds the latest state of
// every credential and revocation and nothing is ever deleted, so a replay from 0 is the
// snapshot and no revision is ever out of range. An event of a kind the caller does not own
// (authz.CredentialKinds) is sent as a BOOKMARK at its revision: the caller learns nothing of
// it, and its revisions and paging stay whole.
func (s credentials) WatchCredentials(req *csv1.WatchCredentialsRequest, stream grpc.ServerStreamingServer[csv1.CredentialEvent]) error {
	caller, identified := authz.Caller(stream.Context())
	return serveWatch(s.Server, req.GetSinceRevision(), stream, watchLog[*csv1.CredentialEvent]{
		eventsAfter: func(ctx context.Context, after int64, limit int) ([]*csv1.CredentialEvent, error) {
			evs, err := s.st.CredentialEventsAfter(ctx, after, limit)
			now := s.cfg.Now()
			return messages(evs, func(ev store.CredentialEvent) *csv1.CredentialEvent {
				sre := ev.Credential.GetSRE() != nil || (ev.Revocation != nil && ev.Revocation.SRE)
				if identified && !authz.MaySeeCredential(caller, sre) {
					return &csv1.CredentialEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: ev.Revision}
				}
				out := &csv1.CredentialEvent{Type: csv1.EventType_EVENT_TYPE_UPSERTED, Revision: ev.Revision}
				if ev.Credential != nil {
					out.Object = &csv1.CredentialEvent_Credential{Credential: store.CredentialProto(ev.Credential, now)}
				} else {
					out.Object = &csv1.CredentialEvent_Revocation{Revocation: store.RevocationProto(ev.Revocation)}
				}
				return out
			}), err
		},
		bookmark: func(rev int64) *csv1.CredentialEvent {
			return &csv1.CredentialEvent{Type: csv1.EventType_EVENT_TYPE_BOOKMARK, Revision: rev}
		},
		changes:  s.st.CredentialChanges,
		current:  s.st.CurrentCredentialRevision,
		eventsOp: "watch credentials",
	})
}
