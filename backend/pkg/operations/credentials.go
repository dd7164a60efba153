package operations

import (
	"context"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
)

// Break-glass actions (requestAdminCredential, revokeCredentials) are operations on a cluster
// whose InternalID is the Cluster Service credential or revocation ID. They are observed
// through GetCredential / GetRevocation and WatchCredentials, and never change the cluster
// document (write skips it for actions). The kubeconfig itself is not copied anywhere: the
// frontend reads it from Cluster Service when the caller asks for the operation result.

func (c *Controller) observeAction(ctx context.Context, op *api.OperationDocument) (observation, error) {
	if c.cfg.Credentials == nil {
		return observation{}, fmt.Errorf("%s operation %s: the backend has no Cluster Service credentials client", op.Request, op.ID)
	}
	if op.Request == api.OperationRevokeCredentials {
		r, err := c.cfg.Credentials.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: op.InternalID})
		if status.Code(err) == codes.NotFound {
			r, err = nil, nil
		}
		if err != nil {
			return observation{}, fmt.Errorf("get revocation %s from cluster service: %w", op.InternalID, err)
		}
		return observation{out: mapRevocation(r), known: r != nil, updated: r.GetUpdateTime()}, nil
	}
	cr, err := c.cfg.Credentials.GetCredential(ctx, &csv1.GetCredentialRequest{Id: op.InternalID})
	if status.Code(err) == codes.NotFound {
		cr, err = nil, nil
	}
	if err != nil {
		return observation{}, fmt.Errorf("get credential %s from cluster service: %w", op.InternalID, err)
	}
	return observation{out: mapCredential(cr), known: cr != nil, updated: cr.GetUpdateTime()}, nil
}

// mapCredential: Succeeded once issued (the result is the kubeconfig, or why it is no longer
// served); Failed when the signer refused, or a revocation came before the certificate did.
func mapCredential(cr *csv1.Credential) outcome {
	if cr == nil {
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: "InternalServerError",
			Message: "The credential is not known to the service."}}
	}
	st := cr.GetStatus()
	switch st.GetState() {
	case csv1.CredentialState_CREDENTIAL_STATE_ISSUED, csv1.CredentialState_CREDENTIAL_STATE_EXPIRED:
		return outcome{status: api.StateSucceeded}
	case csv1.CredentialState_CREDENTIAL_STATE_REVOKING, csv1.CredentialState_CREDENTIAL_STATE_REVOKED:
		if st.GetIssueTime() != nil {
			return outcome{status: api.StateSucceeded}
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: "CredentialRevoked",
			Message: "The cluster's credentials were revoked before this one was issued."}}
	case csv1.CredentialState_CREDENTIAL_STATE_FAILED:
		code := st.GetErrorCode()
		if code == "" {
			code = "CredentialFailed"
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: code, Message: st.GetMessage()}}
	}
	return outcome{status: api.StateAccepted}
}

// mapRevocation: Succeeded when Cluster Service says every earlier credential is revoked.
func mapRevocation(r *csv1.Revocation) outcome {
	if r == nil {
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: "InternalServerError",
			Message: "The revocation is not known to the service."}}
	}
	switch r.GetStatus().GetState() {
	case csv1.RevocationState_REVOCATION_STATE_REVOKED:
		return outcome{status: api.StateSucceeded}
	case csv1.RevocationState_REVOCATION_STATE_FAILED:
		code := r.GetStatus().GetErrorCode()
		if code == "" {
			code = "RevocationFailed"
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: code, Message: r.GetStatus().GetMessage()}}
	}
	return outcome{status: api.StateAccepted}
}

// followCredentials follows Cluster Service's credentials watch as followClusters follows
// clusters: every changed credential or revocation enqueues its operations; it reconnects from
// the last revision it saw.
func (c *Controller) followCredentials(ctx context.Context) {
	if c.cfg.Credentials == nil {
		return
	}
	var since int64
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := c.cfg.Credentials.WatchCredentials(ctx, &csv1.WatchCredentialsRequest{SinceRevision: since})
		if err == nil {
			for {
				ev, rerr := stream.Recv()
				if rerr != nil {
					err = rerr
					break
				}
				backoff = 500 * time.Millisecond
				since = max(since, ev.GetRevision())
				id := ev.GetCredential().GetId()
				if id == "" {
					id = ev.GetRevocation().GetId()
				}
				if id != "" {
					for _, k := range c.opsForCluster(id) {
						c.queue.add(k)
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.OutOfRange {
			since = 0
		}
		if err != io.EOF {
			c.log.Warn("credentials watch broken; reconnecting", "since", since, "error", err, "backoff", backoff)
		}
		sleep(ctx, backoff)
		backoff = min(backoff*2, 10*time.Second)
	}
}
