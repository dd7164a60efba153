package csfollow

import (
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// Break-glass actions (requestAdminCredential, revokeCredentials) are operations on a cluster
// whose InternalID is the Cluster Service credential or revocation ID. They are observed
// through GetCredential / GetRevocation and WatchCredentials, and never change the cluster
// document (write skips it for actions). The kubeconfig itself is not copied anywhere: the
// frontend reads it from Cluster Service when the caller asks for the operation result.

// credentialEventID names the object of an event of the credentials watch, which carries
// both credentials and revocations: it serves both action kinds.
func credentialEventID(ev *csv1.CredentialEvent) string {
	if id := ev.GetCredential().GetId(); id != "" {
		return id
	}
	return ev.GetRevocation().GetId()
}

// mapCredential: Succeeded once issued (the result is the kubeconfig, or why it is no longer
// served); Failed when the signer refused, or a revocation came before the certificate did.
func mapCredential(_ *armdoc.OperationDocument, cr *csv1.Credential) Outcome {
	if cr == nil {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: "InternalServerError",
			Message: "The credential is not known to the service."}}
	}
	st := cr.GetStatus()
	switch st.GetState() {
	case csv1.CredentialState_CREDENTIAL_STATE_ISSUED, csv1.CredentialState_CREDENTIAL_STATE_EXPIRED:
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.CredentialState_CREDENTIAL_STATE_REVOKING, csv1.CredentialState_CREDENTIAL_STATE_REVOKED:
		if st.GetIssueTime() != nil {
			return Outcome{Status: armdoc.StateSucceeded}
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: "CredentialRevoked",
			Message: "The cluster's credentials were revoked before this one was issued."}}
	case csv1.CredentialState_CREDENTIAL_STATE_FAILED:
		code := st.GetErrorCode()
		if code == "" {
			code = "CredentialFailed"
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: st.GetMessage()}}
	}
	return Outcome{Status: armdoc.StateAccepted}
}

// mapRevocation: Succeeded when Cluster Service says every earlier credential is revoked.
func mapRevocation(_ *armdoc.OperationDocument, r *csv1.Revocation) Outcome {
	if r == nil {
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: "InternalServerError",
			Message: "The revocation is not known to the service."}}
	}
	switch r.GetStatus().GetState() {
	case csv1.RevocationState_REVOCATION_STATE_REVOKED:
		return Outcome{Status: armdoc.StateSucceeded}
	case csv1.RevocationState_REVOCATION_STATE_FAILED:
		code := r.GetStatus().GetErrorCode()
		if code == "" {
			code = "RevocationFailed"
		}
		return Outcome{Status: armdoc.StateFailed, Err: &armdoc.CloudErrorBody{Code: code, Message: r.GetStatus().GetMessage()}}
	}
	return Outcome{Status: armdoc.StateAccepted}
}
