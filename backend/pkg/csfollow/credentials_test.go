package csfollow

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
)

func TestMapCredential(t *testing.T) {
	issued := timestamppb.Now()
	for _, tc := range []struct {
		name     string
		cred     *csv1.Credential
		want     armdoc.ProvisioningState
		wantCode string
	}{
		{"unknown_credential_fails", nil, armdoc.StateFailed, "InternalServerError"},
		{"pending_is_accepted", cred(csv1.CredentialState_CREDENTIAL_STATE_PENDING, nil, ""), armdoc.StateAccepted, ""},
		{"issued_succeeds", cred(csv1.CredentialState_CREDENTIAL_STATE_ISSUED, issued, ""), armdoc.StateSucceeded, ""},
		{"expired_had_succeeded", cred(csv1.CredentialState_CREDENTIAL_STATE_EXPIRED, issued, ""), armdoc.StateSucceeded, ""},
		{"revoked_after_issue_had_succeeded", cred(csv1.CredentialState_CREDENTIAL_STATE_REVOKED, issued, ""), armdoc.StateSucceeded, ""},
		{"revoked_before_issue_fails", cred(csv1.CredentialState_CREDENTIAL_STATE_REVOKING, nil, ""), armdoc.StateFailed, "CredentialRevoked"},
		{"signer_refusal_fails_with_its_code", cred(csv1.CredentialState_CREDENTIAL_STATE_FAILED, nil, "SignerRefused"), armdoc.StateFailed, "SignerRefused"},
		{"failure_without_code_gets_one", cred(csv1.CredentialState_CREDENTIAL_STATE_FAILED, nil, ""), armdoc.StateFailed, "CredentialFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCredential(nil, tc.cred)
			if out.Status != tc.want || code(out.Err) != tc.wantCode || out.Gone {
				t.Fatalf("got %v %+v, want %v %q", out.Status, out.Err, tc.want, tc.wantCode)
			}
		})
	}
}

func TestMapRevocation(t *testing.T) {
	rev := func(s csv1.RevocationState, code string) *csv1.Revocation {
		return &csv1.Revocation{Status: &csv1.RevocationStatus{State: s, ErrorCode: code, Message: "m"}}
	}
	for _, tc := range []struct {
		name     string
		rev      *csv1.Revocation
		want     armdoc.ProvisioningState
		wantCode string
	}{
		{"unknown_revocation_fails", nil, armdoc.StateFailed, "InternalServerError"},
		{"revoking_is_accepted", rev(csv1.RevocationState_REVOCATION_STATE_REVOKING, ""), armdoc.StateAccepted, ""},
		{"revoked_succeeds", rev(csv1.RevocationState_REVOCATION_STATE_REVOKED, ""), armdoc.StateSucceeded, ""},
		{"failed_fails_with_its_code", rev(csv1.RevocationState_REVOCATION_STATE_FAILED, "InvalidSignerClass"), armdoc.StateFailed, "InvalidSignerClass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapRevocation(nil, tc.rev)
			if out.Status != tc.want || code(out.Err) != tc.wantCode {
				t.Fatalf("got %v %+v, want %v %q", out.Status, out.Err, tc.want, tc.wantCode)
			}
		})
	}
}

func cred(s csv1.CredentialState, issued *timestamppb.Timestamp, code string) *csv1.Credential {
	return &csv1.Credential{Status: &csv1.CredentialStatus{State: s, IssueTime: issued, ErrorCode: code, Message: "m"}}
}

func code(e *armdoc.CloudErrorBody) string {
	if e == nil {
		return ""
	}
	return e.Code
}
