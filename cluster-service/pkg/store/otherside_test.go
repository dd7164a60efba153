package store

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// TestWritesGetTheOtherSideInTheirTransaction: the callbacks of a cluster update and of a
// child's create and update get the other side of their rules as stored at the write: the
// cluster's node pools and external auth not being deleted, and the child's cluster; a check's
// error is returned as it is, before an existing child for the ARM resource is returned.
func TestWritesGetTheOtherSideInTheirTransaction(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	cl, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{100, 101, 102} {
		if _, _, err := s.NodePools().Create(ctx, newPool(csid(n), cl.ID, armID("one")+"/nodePools/p"+csid(n)[31:])); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.NodePools().MarkDeleting(ctx, csid(101)); err != nil {
		t.Fatal(err)
	}
	ea, _, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(200), cl.ID, armID("one")+"/externalAuths/entra"))
	if err != nil {
		t.Fatal(err)
	}
	errCheck := errors.New("the check's own error")

	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"cluster_update_gets_the_live_node_pools_and_external_auth", func(t *testing.T) {
			var got ClusterChildren
			if _, err := s.UpdateCluster(ctx, cl.ID, Precondition{}, func(_ *Cluster, _ *csv1.UpgradePolicy, children ClusterChildren) (ClusterChange, error) {
				got = children
				return ClusterChange{}, nil
			}); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, np := range got.NodePools {
				ids = append(ids, np.ID)
			}
			if !slices.Equal(ids, []string{csid(100), csid(102)}) || got.ExternalAuth == nil || got.ExternalAuth.ID != ea.ID || !proto.Equal(got.ExternalAuth.Spec, ea.Spec) {
				t.Fatalf("decide got node pools %v and external auth %v; want %s, %s (not the deleting %s) and %s", ids, got.ExternalAuth, csid(100), csid(102), csid(101), ea.ID)
			}
		}},
		{"child_update_gets_its_cluster_as_stored", func(t *testing.T) {
			cur, err := s.GetCluster(ctx, cl.ID)
			if err != nil {
				t.Fatal(err)
			}
			next, err := s.UpdateStatus(ctx, cl.ID, cur.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_READY, CurrentVersion: "4.19.7"})
			if err != nil {
				t.Fatal(err)
			}
			var seen *Cluster
			if _, err := s.NodePools().Update(ctx, csid(100), Precondition{}, func(c *Cluster, cur *NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error) {
				seen = c
				return cur.Spec, nil, nil
			}); err != nil {
				t.Fatal(err)
			}
			if seen == nil || seen.ID != cl.ID || seen.Revision != next.Revision || seen.Status.GetCurrentVersion() != "4.19.7" {
				t.Fatalf("decide got cluster %v; want %s at revision %d", seen, cl.ID, next.Revision)
			}
		}},
		{"create_stores_the_spec_its_check_returns", func(t *testing.T) {
			want := &csv1.NodePoolSpec{Replicas: 7, VersionId: "4.19.7"}
			np, created, err := s.NodePools().CreateChecked(ctx, newPool(csid(103), cl.ID, armID("one")+"/nodePools/checked"), func(c *Cluster) (*csv1.NodePoolSpec, error) {
				if c.ID != cl.ID {
					t.Errorf("check got cluster %s; want %s", c.ID, cl.ID)
				}
				return want, nil
			})
			if err != nil || !created || !proto.Equal(np.Spec, want) {
				t.Fatalf("CreateChecked = %v, %v, %v; want the check's spec %v stored", np, created, err, want)
			}
		}},
		{"a_check's_error_comes_before_the_existing_child", func(t *testing.T) {
			_, _, err := s.NodePools().CreateChecked(ctx, newPool(csid(104), cl.ID, armID("one")+"/nodePools/p0"), func(*Cluster) (*csv1.NodePoolSpec, error) {
				return nil, errCheck
			})
			if err != errCheck {
				t.Fatalf("CreateChecked = %v; want the check's error as it is", err)
			}
		}},
		{"an_existing_child_is_returned_once_its_check_passes", func(t *testing.T) {
			got, created, err := s.NodePools().CreateChecked(ctx, newPool(csid(104), cl.ID, armID("one")+"/nodePools/p0"), func(*Cluster) (*csv1.NodePoolSpec, error) {
				return &csv1.NodePoolSpec{Replicas: 9}, nil
			})
			if err != nil || created || got.ID != csid(100) {
				t.Fatalf("CreateChecked = %v, %v, %v; want the existing %s", got, created, err, csid(100))
			}
		}},
		{"no_cluster_is_not_found_before_the_check", func(t *testing.T) {
			_, _, err := s.NodePools().CreateChecked(ctx, newPool(csid(105), csid(9), armID("nine")+"/nodePools/a"), func(*Cluster) (*csv1.NodePoolSpec, error) {
				return nil, errCheck
			})
			if !errors.Is(err, ErrNotFound) {
				t.Fatalf("CreateChecked = %v; want ErrNotFound", err)
			}
		}},
	} {
		t.Run(tc.name, tc.run)
	}
}
