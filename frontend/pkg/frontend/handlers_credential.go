package frontend

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/opkind"
)

// Break-glass credentials: POST …/hcpOpenShiftClusters/{name}/requestAdminCredential and
// …/revokeCredentials. Both are async (202, Location, Azure-AsyncOperation, Retry-After); the
// backend ends them from Cluster Service's Credentials watch, and the operation result of a
// requestAdminCredential is the kubeconfig, read from Cluster Service when asked for (it is
// never stored in a document).

// csrBodyVersions are the api-versions whose requestAdminCredential takes a body with the
// customer's certificateSigningRequest; earlier ones take none.
var csrBodyVersions = map[string]bool{"2026-09-01-preview": true}

// actionStarts is the frontend's part of every action kind (internal/opkind): what each reads
// from its request and asks Cluster Service to start. All are break-glass credential actions
// today, served when the frontend has a Cluster Service credentials client.
func (s *Server) actionStarts() map[opkind.Kind]actionStart {
	return map[opkind.Kind]actionStart{
		opkind.RequestCredential: s.requestAdminCredential,
		opkind.RevokeCredentials: s.revokeCredentials,
	}
}

func (s *Server) credentialRoutes() {
	if s.cfg.Credentials == nil {
		return
	}
	s.actionRoutes(s.actionStarts())
}

// credentialBody decodes the action's body: none (or {}) everywhere, and in csrBodyVersions an
// optional certificateSigningRequest.
func credentialBody(r *http.Request) (string, error) {
	body := bytes.TrimSpace(info(r).body)
	if len(body) == 0 {
		return "", nil
	}
	raw, err := api.ParseObject(body)
	if err != nil {
		return "", err
	}
	var csr string
	for k, v := range raw {
		if k != "certificateSigningRequest" || !csrBodyVersions[info(r).apiVersion] {
			return "", cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, k, "The property '%s' is not known in api-version %s.", k, info(r).apiVersion)
		}
		s, ok := v.(string)
		if !ok {
			return "", cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, k, "The property '%s' must be a string.", k)
		}
		csr = s
	}
	return csr, nil
}

func (s *Server) requestAdminCredential(r *http.Request) (func(id, clusterID string) error, error) {
	csr, err := credentialBody(r)
	if err != nil {
		return nil, err
	}
	return func(id, clusterID string) error {
		ctx, cancel := s.csContext(r.Context(), info(r))
		defer cancel()
		req := &csv1.RequestCredentialRequest{Id: id, ClusterId: clusterID, CertificateSigningRequest: csr}
		_, err := s.cfg.Credentials.RequestCredential(ctx, req)
		return fieldViolations(info(r).version, req, err)
	}, nil
}

func (s *Server) revokeCredentials(r *http.Request) (func(id, clusterID string) error, error) {
	if len(bytes.TrimSpace(info(r).body)) > 0 && string(bytes.TrimSpace(info(r).body)) != "{}" {
		return nil, cloudError(http.StatusBadRequest, arm.CodeInvalidRequestContent, "", "revokeCredentials takes no request content.")
	}
	return func(id, clusterID string) error {
		ctx, cancel := s.csContext(r.Context(), info(r))
		defer cancel()
		_, err := s.cfg.Credentials.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: id, ClusterId: clusterID})
		return err
	}, nil
}

// adminCredential is HcpOpenShiftClusterAdminCredential.
type adminCredential struct {
	Kubeconfig          string    `json:"kubeconfig"`
	ExpirationTimestamp time.Time `json:"expirationTimestamp"`
}

// respondActionResult answers the operation result of a finished, Succeeded action: 204 for a
// revocation; for a credential the kubeconfig, only to the caller that requested it and only
// while it is valid.
func (s *Server) respondActionResult(w http.ResponseWriter, r *http.Request, op *armdoc.OperationDocument) error {
	if op.Request == armdoc.OperationRevokeCredentials {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	// The generic check lets a reader without the header through; a kubeconfig is not given to
	// anyone ARM does not name as the requester.
	if op.ClientID != "" && !strings.EqualFold(r.Header.Get(arm.HeaderClientObjectID), op.ClientID) {
		return cloudError(http.StatusNotFound, arm.CodeNotFound, "", "The operation '%s' was not found.", op.ID)
	}
	ctx, cancel := s.csContext(r.Context(), info(r))
	defer cancel()
	c, err := s.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: op.InternalID, IncludeKubeconfig: true})
	if status.Code(err) == codes.NotFound {
		return cloudError(http.StatusNotFound, arm.CodeNotFound, "", "The credential of operation '%s' is no longer known.", op.ID)
	}
	if err != nil {
		return err
	}
	if c.GetKubeconfig() == "" {
		return cloudError(http.StatusConflict, "CredentialNotValid", "", "The credential of this operation is %s and its kubeconfig is no longer served; request a new one.",
			strings.ToLower(strings.TrimPrefix(c.GetStatus().GetState().String(), "CREDENTIAL_STATE_")))
	}
	info(r).logger().Info("admin credential handed out", "operationID", op.ID, "credentialID", op.InternalID, "clientID", op.ClientID,
		"expires", c.GetStatus().GetExpirationTime().AsTime())
	b, err := json.Marshal(adminCredential{Kubeconfig: c.GetKubeconfig(), ExpirationTimestamp: c.GetStatus().GetExpirationTime().AsTime().UTC()})
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, b)
	return nil
}
