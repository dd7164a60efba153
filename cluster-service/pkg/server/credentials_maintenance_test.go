package server

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/pki"
)

// TestMaintenanceRotatesBothSignersAndReadsNoCredential: the maintenance service's
// breakglass-signer-rotation task revokes a cluster's customer and SRE credentials (each its own
// signer) and follows its revocations, over mutual TLS with authz enforced; it can neither read
// nor ask for a credential, so rotating a signer is all it can do with them.
func TestMaintenanceRotatesBothSignersAndReadsNoCredential(t *testing.T) {
	e := startMTLS(t)
	ctx := context.Background()
	cluster := e.readyCluster(t, 1)
	customerID, sreID := id(40), id(41)
	e.customerAndSRECredentials(t, cluster, customerID, sreID)
	m := e.creds(pki.Maintenance)

	for _, tc := range []struct {
		name       string
		revocation string
		sre        bool
		credential string
	}{
		{"maintenance_rotates_the_customer_signer", id(42), false, customerID},
		{"maintenance_rotates_the_sre_signer", id(43), true, sreID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := m.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: tc.revocation, ClusterId: cluster, Sre: tc.sre})
			if err != nil || rev.GetSre() != tc.sre || rev.GetStatus().GetState() != csv1.RevocationState_REVOCATION_STATE_REVOKING {
				t.Fatalf("revoke: %v %v; want a REVOKING revocation with sre %t", rev, err, tc.sre)
			}
			again, err := m.RevokeCredentials(ctx, &csv1.RevokeCredentialsRequest{Id: tc.revocation, ClusterId: cluster, Sre: tc.sre})
			if err != nil || again.GetRevision() != rev.GetRevision() {
				t.Fatalf("the same revocation asked again: %v %v; want the first one back unchanged", again, err)
			}
			got, err := m.GetRevocation(ctx, &csv1.GetRevocationRequest{Id: tc.revocation})
			if err != nil || got.GetId() != tc.revocation {
				t.Fatalf("get revocation: %v %v", got, err)
			}
			c, err := e.st.GetCredential(ctx, tc.credential)
			if err != nil {
				t.Fatal(err)
			}
			if c.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKING || c.Status.GetRevocationId() != tc.revocation {
				t.Fatalf("credential %s: %s by %q; want REVOKING by %s", tc.credential, c.Status.GetState(), c.Status.GetRevocationId(), tc.revocation)
			}
		})
	}
	t.Run("maintenance_reads_and_requests_no_credential", func(t *testing.T) {
		if _, err := m.GetCredential(ctx, &csv1.GetCredentialRequest{Id: customerID, IncludeKubeconfig: true}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("GetCredential: %v, want PermissionDenied", err)
		}
		if _, err := m.ListCredentials(ctx, &csv1.ListCredentialsRequest{ClusterId: cluster}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("ListCredentials: %v, want PermissionDenied", err)
		}
		if _, err := m.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id(44), ClusterId: cluster}); status.Code(err) != codes.PermissionDenied {
			t.Errorf("RequestCredential: %v, want PermissionDenied", err)
		}
	})
}
