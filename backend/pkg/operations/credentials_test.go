package operations

import (
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
)

func TestMapCredential(t *testing.T) {
	issued := timestamppb.Now()
	for _, tc := range []struct {
		name     string
		cred     *csv1.Credential
		want     api.ProvisioningState
		wantCode string
	}{
		{"unknown_credential_fails", nil, api.StateFailed, "InternalServerError"},
		{"pending_is_accepted", cred(csv1.CredentialState_CREDENTIAL_STATE_PENDING, nil, ""), api.StateAccepted, ""},
		{"issued_succeeds", cred(csv1.CredentialState_CREDENTIAL_STATE_ISSUED, issued, ""), api.StateSucceeded, ""},
		{"expired_had_succeeded", cred(csv1.CredentialState_CREDENTIAL_STATE_EXPIRED, issued, ""), api.StateSucceeded, ""},
		{"revoked_after_issue_had_succeeded", cred(csv1.CredentialState_CREDENTIAL_STATE_REVOKED, issued, ""), api.StateSucceeded, ""},
		{"revoked_before_issue_fails", cred(csv1.CredentialState_CREDENTIAL_STATE_REVOKING, nil, ""), api.StateFailed, "CredentialRevoked"},
		{"signer_refusal_fails_with_its_code", cred(csv1.CredentialState_CREDENTIAL_STATE_FAILED, nil, "SignerRefused"), api.StateFailed, "SignerRefused"},
		{"failure_without_code_gets_one", cred(csv1.CredentialState_CREDENTIAL_STATE_FAILED, nil, ""), api.StateFailed, "CredentialFailed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapCredential(tc.cred)
			if out.status != tc.want || code(out.err) != tc.wantCode || out.gone {
				t.Fatalf("got %v %+v, want %v %q", out.status, out.err, tc.want, tc.wantCode)
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
		want     api.ProvisioningState
		wantCode string
	}{
		{"unknown_revocation_fails", nil, api.StateFailed, "InternalServerError"},
		{"revoking_is_accepted", rev(csv1.RevocationState_REVOCATION_STATE_REVOKING, ""), api.StateAccepted, ""},
		{"revoked_succeeds", rev(csv1.RevocationState_REVOCATION_STATE_REVOKED, ""), api.StateSucceeded, ""},
		{"failed_fails_with_its_code", rev(csv1.RevocationState_REVOCATION_STATE_FAILED, "InvalidSignerClass"), api.StateFailed, "InvalidSignerClass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mapRevocation(tc.rev)
			if out.status != tc.want || code(out.err) != tc.wantCode {
				t.Fatalf("got %v %+v, want %v %q", out.status, out.err, tc.want, tc.wantCode)
			}
		})
	}
}

func cred(s csv1.CredentialState, issued *timestamppb.Timestamp, code string) *csv1.Credential {
	return &csv1.Credential{Status: &csv1.CredentialStatus{State: s, IssueTime: issued, ErrorCode: code, Message: "m"}}
}

func code(e *api.CloudErrorBody) string {
	if e == nil {
		return ""
	}
	return e.Code
}
