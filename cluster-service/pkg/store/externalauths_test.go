package store

import (
	"context"
	"errors"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

func newExternalAuth(id, clusterID, arm string) *ExternalAuth {
	return &ExternalAuth{ID: id, ClusterID: clusterID, ARMResourceID: arm, Spec: &csv1.ExternalAuthSpec{
		Issuer:        &csv1.TokenIssuer{Url: "https://login.example.com/tenant/v2.0", Audiences: []string{"app"}},
		ClaimMappings: &csv1.TokenClaimMappings{Username: &csv1.UsernameClaimMapping{Claim: "email"}},
	}}
}

func TestExternalAuthStore(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	cl, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	cl2, _, err := s.CreateCluster(ctx, newCluster(csid(2), armID("two")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	ea, created, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(200), cl.ID, armID("one")+"/externalAuths/entra"))
	if err != nil || !created || ea.Status.State != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING {
		t.Fatalf("CreateExternalAuth = %+v, %v, %v", ea, created, err)
	}

	tests := []struct {
		name string
		in   *ExternalAuth
		want error
	}{
		{"unknown_cluster_is_not_found", newExternalAuth(csid(201), csid(9), armID("nine")+"/externalAuths/a"), ErrNotFound},
		{"second_external_auth_of_a_cluster_is_refused", newExternalAuth(csid(202), cl.ID, armID("one")+"/externalAuths/other"), ErrExternalAuthLimit},
		{"id_of_another_resource_is_in_use", newExternalAuth(csid(200), cl2.ID, armID("two")+"/externalAuths/third"), ErrIDInUse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := s.ExternalAuths().Create(ctx, tc.in); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("create_is_idempotent_on_the_arm_id_in_any_case", func(t *testing.T) {
		again, created, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(203), cl.ID, armID("ONE")+"/externalauths/ENTRA"))
		if err != nil || created || again.ID != ea.ID || again.Revision != ea.Revision {
			t.Fatalf("retry = %+v, %v, %v; want the existing %s unchanged", again, created, err, ea.ID)
		}
	})
	t.Run("spec_update_is_conditional_and_sets_updating", func(t *testing.T) {
		// Move it past PENDING first, as the controller would.
		ready, err := s.ExternalAuths().UpdateStatus(ctx, ea.ID, ea.Revision, &csv1.ExternalAuthStatus{State: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, Applied: true})
		if err != nil {
			t.Fatal(err)
		}
		spec := newExternalAuth("", "", "").Spec
		spec.Issuer.Audiences = []string{"app", "cli"}
		if _, err := replaceExternalAuthSpec(ctx, s, ea.ID, ea.Revision, spec); !errors.Is(err, ErrConflict) {
			t.Fatalf("stale update: %v, want ErrConflict", err)
		}
		up, err := replaceExternalAuthSpec(ctx, s, ea.ID, ready.Revision, spec)
		if err != nil || up.Status.State != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UPDATING || up.Status.Applied || len(up.Spec.Issuer.Audiences) != 2 {
			t.Fatalf("update = %+v, %v", up, err)
		}
		same, err := replaceExternalAuthSpec(ctx, s, ea.ID, 0, spec)
		if err != nil || same.Revision != up.Revision {
			t.Fatalf("identical spec: revision %d, %v; want %d", same.Revision, err, up.Revision)
		}
		ea = up
	})
	t.Run("remove_needs_deleting_then_allows_a_new_one", func(t *testing.T) {
		if err := s.ExternalAuths().Remove(ctx, ea.ID, ea.Revision); !errors.Is(err, ErrConflict) {
			t.Fatalf("remove without deleting: %v, want ErrConflict", err)
		}
		d, err := s.ExternalAuths().MarkDeleting(ctx, ea.ID)
		if err != nil || !d.Deleting || d.Status.State != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING {
			t.Fatalf("MarkExternalAuthDeleting = %+v, %v", d, err)
		}
		if _, err := replaceExternalAuthSpec(ctx, s, ea.ID, 0, ea.Spec); !errors.Is(err, ErrDeleting) {
			t.Fatalf("update while deleting: %v, want ErrDeleting", err)
		}
		if _, _, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(204), cl.ID, armID("one")+"/externalAuths/other")); !errors.Is(err, ErrExternalAuthLimit) {
			t.Fatalf("create while the old one is deleting: %v, want ErrExternalAuthLimit", err)
		}
		if err := s.ExternalAuths().Remove(ctx, ea.ID, d.Revision); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExternalAuths().Get(ctx, ea.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after remove: %v", err)
		}
		evs, err := s.ExternalAuths().EventsAfter(ctx, 0, 10)
		if err != nil || len(evs) != 1 || evs[0].Type != csv1.EventType_EVENT_TYPE_DELETED || !evs[0].Object.Deleting {
			t.Fatalf("events = %+v, %v; want one tombstone", evs, err)
		}
		next, created, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(204), cl.ID, armID("one")+"/externalAuths/other"))
		if err != nil || !created {
			t.Fatalf("create after removal = %v, %v", created, err)
		}
		ea = next
	})
	t.Run("cluster_delete_marks_and_cluster_removal_removes_it", func(t *testing.T) {
		dc, err := s.MarkDeleting(ctx, cl.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.ExternalAuths().Get(ctx, ea.ID)
		if err != nil || !got.Deleting || got.Status.State != csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING {
			t.Fatalf("external auth of a deleting cluster = %+v, %v", got, err)
		}
		if err := s.RemoveCluster(ctx, cl.ID, dc.Revision); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExternalAuths().Get(ctx, ea.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("external auth after its cluster was removed: %v", err)
		}
		snap, rev, err := s.ExternalAuths().Snapshot(ctx)
		cur, _ := s.ExternalAuths().CurrentRevision(ctx)
		if err != nil || len(snap) != 0 || rev != cur || rev <= got.Revision {
			t.Fatalf("snapshot = %d items at %d (current %d), %v", len(snap), rev, cur, err)
		}
	})
	t.Run("tombstones_are_pruned_and_compaction_recorded", func(t *testing.T) {
		evs, err := s.ExternalAuths().EventsAfter(ctx, 0, 10)
		if err != nil || len(evs) != 2 {
			t.Fatalf("events = %+v, %v; want two tombstones", evs, err)
		}
		if _, err := s.PruneTombstones(ctx, time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if rev, err := s.ExternalAuths().CompactedRevision(ctx); err != nil || rev != evs[1].Revision {
			t.Fatalf("compacted revision = %d, %v; want %d", rev, err, evs[1].Revision)
		}
		if left, _ := s.ExternalAuths().EventsAfter(ctx, 0, 10); len(left) != 0 {
			t.Fatalf("events left after pruning: %d", len(left))
		}
	})
}

// replaceExternalAuthSpec writes spec whole, conditional on revision (0: unconditional).
func replaceExternalAuthSpec(ctx context.Context, s *Store, id string, revision int64, spec *csv1.ExternalAuthSpec) (*ExternalAuth, error) {
	return s.ExternalAuths().Update(ctx, id, Precondition{Revision: revision}, func(*Cluster, *ExternalAuth) (*csv1.ExternalAuthSpec, *csv1.UpgradePolicy, error) {
		return spec, nil, nil
	})
}
