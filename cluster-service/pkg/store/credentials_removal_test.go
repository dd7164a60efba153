package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestRemovedClusterEndsItsCredentials: once a cluster is removed, none of its break-glass
// credentials is ISSUED (so no kubeconfig is handed out for a cluster that is gone) and no key
// Cluster Service generated for it is kept; the rows stay, as the record of who could reach it.
func TestRemovedClusterEndsItsCredentials(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	c := readyCluster(t, s, 1)
	other := readyCluster(t, s, 2)

	issue := func(id, clusterID string, sre *csv1.SRECredential) *Credential {
		t.Helper()
		cr, _, err := s.CreateCredential(ctx, &Credential{ID: id, ClusterID: clusterID, PrivateKey: []byte("key of " + id), SRE: sre}, testAudit)
		if err != nil {
			t.Fatalf("CreateCredential %s: %v", id, err)
		}
		cr.Status = &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_ISSUED,
			ExpirationTime: timestamppb.New(time.Now().Add(time.Hour))}
		cr.Certificate, cr.CABundle, cr.APIURL = "cert", "ca", "https://api.example"
		if cr, err = s.UpdateCredential(ctx, cr); err != nil {
			t.Fatalf("issue %s: %v", id, err)
		}
		return cr
	}
	customer := issue("cred-customer", c.ID, nil)
	sre := issue("cred-sre", c.ID, &csv1.SRECredential{Person: "alice", Access: csv1.SREAccess_SRE_ACCESS_READ_ONLY})
	kept := issue("cred-other", other.ID, nil)

	dc, err := s.MarkDeleting(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveCluster(ctx, c.ID, dc.Revision); err != nil {
		t.Fatal(err)
	}
	for _, before := range []*Credential{customer, sre} {
		got, err := s.GetCredential(ctx, before.ID)
		if err != nil {
			t.Fatalf("the credential %s of a removed cluster is gone: %v (its row is the record)", before.ID, err)
		}
		if got.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKED || got.Status.GetRevokeTime() == nil || got.Revision <= before.Revision {
			t.Errorf("credential %s of the removed cluster: %v at revision %d (was %d), want REVOKED with a revoke time and an event",
				got.ID, got.Status, got.Revision, before.Revision)
		}
		if got.PrivateKey != nil {
			t.Errorf("credential %s of the removed cluster keeps its private key", got.ID)
		}
	}
	got, err := s.GetCredential(ctx, kept.ID)
	if err != nil || got.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_ISSUED || string(got.PrivateKey) != "key of cred-other" {
		t.Fatalf("another cluster's credential changed: %+v, %v", got, err)
	}
	// A watcher sees each ended credential once more, REVOKED, at its new revision (the
	// removal writes them all in one statement: one event each, none for the other cluster's).
	events, err := s.CredentialEventsAfter(ctx, kept.Revision, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, ev := range events {
		if ev.Credential == nil {
			continue
		}
		if ev.Credential.ID == kept.ID || ev.Credential.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_REVOKED {
			t.Errorf("event at %d: credential %s %s", ev.Revision, ev.Credential.ID, ev.Credential.Status.GetState())
		}
		seen[ev.Credential.ID] = ev.Revision
	}
	if len(seen) != 2 || seen[customer.ID] == 0 || seen[sre.ID] == 0 || seen[customer.ID] == seen[sre.ID] {
		t.Fatalf("events of the removed cluster's credentials: %v, want one each at distinct revisions", seen)
	}
}

// TestRemovedClusterEndsItsPendingCredentials: a credential still PENDING when its cluster is
// removed ends FAILED ClusterDeleted in the same transaction, its key erased, so a write the
// break-glass controller prepared from the PENDING credential before the removal (its check of
// the cluster passed, then the signer answered) is a conflict, not an ISSUED credential of a
// cluster that is gone.
func TestRemovedClusterEndsItsPendingCredentials(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	c := readyCluster(t, s, 1)
	pending, _, err := s.CreateCredential(ctx, &Credential{ID: "cred-pending", ClusterID: c.ID, PrivateKey: []byte("key of cred-pending")}, testAudit)
	if err != nil {
		t.Fatal(err)
	}
	if pending.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_PENDING {
		t.Fatalf("a new credential is %v, want PENDING", pending.Status.GetState())
	}

	dc, err := s.MarkDeleting(ctx, c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveCluster(ctx, c.ID, dc.Revision); err != nil {
		t.Fatal(err)
	}

	// The controller's write, prepared before the removal.
	stale := *pending
	stale.Status = &csv1.CredentialStatus{State: csv1.CredentialState_CREDENTIAL_STATE_ISSUED, Username: pending.Status.GetUsername(),
		ExpirationTime: timestamppb.New(time.Now().Add(time.Hour))}
	stale.Certificate, stale.CABundle, stale.APIURL = "cert", "ca", "https://api.example"
	if out, err := s.UpdateCredential(ctx, &stale); !errors.Is(err, ErrConflict) {
		state := "no credential"
		if out != nil {
			state = out.Status.GetState().String()
		}
		t.Errorf("a write prepared before the removal: %s, %v; want ErrConflict", state, err)
	}
	got, err := s.GetCredential(ctx, pending.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.GetState() != csv1.CredentialState_CREDENTIAL_STATE_FAILED || got.Status.GetErrorCode() != ErrorCodeClusterDeleted ||
		got.Revision <= pending.Revision || got.PrivateKey != nil {
		t.Fatalf("the PENDING credential of the removed cluster: %v at revision %d (was %d), key kept %v; want FAILED %s with an event and no key",
			got.Status, got.Revision, pending.Revision, got.PrivateKey != nil, ErrorCodeClusterDeleted)
	}
}
