package server

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestSRECredentialValidation: an SRE credential request's fields are checked and named, and the
// SRE-only list takes no person without sre_only.
func TestSRECredentialValidation(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	creds := e.creds
	for _, tc := range []struct {
		name  string
		sre   *csv1.SRECredential
		csr   string
		field string
	}{
		{"bad_person", &csv1.SRECredential{Person: "a,b", Access: csv1.SREAccess_SRE_ACCESS_ADMIN, ValiditySeconds: 3600}, "", "sre.person"},
		{"no_access", &csv1.SRECredential{Person: "alice", ValiditySeconds: 3600}, "", "sre.access"},
		{"too_short", &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY, ValiditySeconds: 599}, "", "sre.validity_seconds"},
		{"with_csr", &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY, ValiditySeconds: 600}, "x", "certificate_signing_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := creds.RequestCredential(ctx, &csv1.RequestCredentialRequest{Id: id(900), ClusterId: id(901), Sre: tc.sre, CertificateSigningRequest: tc.csr})
			if status.Code(err) != codes.InvalidArgument || !fieldViolations(err)[tc.field] {
				t.Fatalf("err = %v, want InvalidArgument naming %s", err, tc.field)
			}
		})
	}
	if _, err := creds.ListCredentials(ctx, &csv1.ListCredentialsRequest{Person: "alice"}); status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["person"] {
		t.Fatalf("person without sre_only: %v", err)
	}
	l, err := creds.ListCredentials(ctx, &csv1.ListCredentialsRequest{SreOnly: true})
	if err != nil || len(l.GetCredentials()) != 0 {
		t.Fatalf("empty SRE list: %v %v", l, err)
	}
}
