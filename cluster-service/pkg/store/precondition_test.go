package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/placement"
)

// revisions is what a precondition is checked against.
type revisions struct{ rev, spec int64 }

// conditionalKind drives one kind of row through the three store writes the precondition is
// about: the row as a client reads it, a controller's status write, and a conditional spec change.
type conditionalKind struct {
	name   string
	create func(t *testing.T) revisions
	status func(t *testing.T, n int) revisions // a status write (moves revision only)
	spec   func(pre Precondition, n int) (revisions, error)
}

// TestSpecRevisionPrecondition: an update conditional on spec_revision is not failed by a status
// write since the read, is failed by a spec change since the read, and revision stays the
// stricter condition it was; for clusters, node pools and external auths alike.
func TestSpecRevisionPrecondition(t *testing.T) {
	ctx := context.Background()
	s := open(t, newDSN(t))
	register(t, s, "mc-1", 10)
	cl, _, err := s.CreateCluster(ctx, newCluster(csid(1), armID("one")), placement.LeastLoaded{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []conditionalKind{{
		name: "cluster",
		create: func(t *testing.T) revisions {
			c, _, err := s.CreateCluster(ctx, newCluster(csid(2), armID("two")), placement.LeastLoaded{})
			if err != nil {
				t.Fatal(err)
			}
			return revisions{c.Revision, c.SpecRevision}
		},
		status: func(t *testing.T, n int) revisions {
			cur, err := s.GetCluster(ctx, csid(2))
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.UpdateStatus(ctx, cur.ID, cur.Revision, &csv1.ClusterStatus{State: csv1.ClusterState_CLUSTER_STATE_INSTALLING, Message: fmt.Sprint(n)})
			if err != nil {
				t.Fatal(err)
			}
			return revisions{c.Revision, c.SpecRevision}
		},
		spec: func(pre Precondition, n int) (revisions, error) {
			c, err := s.UpdateCluster(ctx, csid(2), pre, func(c *Cluster, _ *csv1.UpgradePolicy, _ ClusterChildren) (ClusterChange, error) {
				spec := proto.Clone(c.Spec).(*csv1.ClusterSpec)
				spec.PausedUntil = fmt.Sprintf("2030-01-%02dT00:00:00Z", n)
				return ClusterChange{Spec: spec}, nil
			})
			if err != nil {
				return revisions{}, err
			}
			return revisions{c.Revision, c.SpecRevision}, nil
		},
	}, {
		name: "node_pool",
		create: func(t *testing.T) revisions {
			np, _, err := s.NodePools().Create(ctx, newPool(csid(100), cl.ID, armID("one")+"/nodePools/a"))
			if err != nil {
				t.Fatal(err)
			}
			return revisions{np.Revision, np.SpecRevision}
		},
		status: func(t *testing.T, n int) revisions {
			cur, err := s.NodePools().Get(ctx, csid(100))
			if err != nil {
				t.Fatal(err)
			}
			np, err := s.NodePools().UpdateStatus(ctx, cur.ID, cur.Revision, &csv1.NodePoolStatus{State: csv1.NodePoolState_NODE_POOL_STATE_READY, Replicas: int32(n)})
			if err != nil {
				t.Fatal(err)
			}
			return revisions{np.Revision, np.SpecRevision}
		},
		spec: func(pre Precondition, n int) (revisions, error) {
			np, err := s.NodePools().Update(ctx, csid(100), pre, func(_ *Cluster, cur *NodePool) (*csv1.NodePoolSpec, *csv1.UpgradePolicy, error) {
				spec := proto.Clone(cur.Spec).(*csv1.NodePoolSpec)
				spec.Replicas = int32(10 + n)
				return spec, nil, nil
			})
			if err != nil {
				return revisions{}, err
			}
			return revisions{np.Revision, np.SpecRevision}, nil
		},
	}, {
		name: "external_auth",
		create: func(t *testing.T) revisions {
			ea, _, err := s.ExternalAuths().Create(ctx, newExternalAuth(csid(200), cl.ID, armID("one")+"/externalAuths/entra"))
			if err != nil {
				t.Fatal(err)
			}
			return revisions{ea.Revision, ea.SpecRevision}
		},
		status: func(t *testing.T, n int) revisions {
			cur, err := s.ExternalAuths().Get(ctx, csid(200))
			if err != nil {
				t.Fatal(err)
			}
			ea, err := s.ExternalAuths().UpdateStatus(ctx, cur.ID, cur.Revision, &csv1.ExternalAuthStatus{State: csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY, Message: fmt.Sprint(n)})
			if err != nil {
				t.Fatal(err)
			}
			return revisions{ea.Revision, ea.SpecRevision}
		},
		spec: func(pre Precondition, n int) (revisions, error) {
			ea, err := s.ExternalAuths().Update(ctx, csid(200), pre, func(_ *Cluster, cur *ExternalAuth) (*csv1.ExternalAuthSpec, *csv1.UpgradePolicy, error) {
				spec := proto.Clone(cur.Spec).(*csv1.ExternalAuthSpec)
				spec.Issuer.Audiences = []string{"app", fmt.Sprint("cli-", n)}
				return spec, nil, nil
			})
			if err != nil {
				return revisions{}, err
			}
			return revisions{ea.Revision, ea.SpecRevision}, nil
		},
	}}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			read := k.create(t)
			afterStatus := k.status(t, 1)
			if afterStatus.rev <= read.rev || afterStatus.spec != read.spec {
				t.Fatalf("status write: %+v after %+v; want a new revision and the same spec_revision", afterStatus, read)
			}
			t.Run("revision_read_before_a_status_write_conflicts", func(t *testing.T) {
				if _, err := k.spec(Precondition{Revision: read.rev}, 1); !errors.Is(err, ErrConflict) {
					t.Fatalf("got %v, want ErrConflict", err)
				}
			})
			var changed revisions
			t.Run("spec_revision_read_before_a_status_write_holds", func(t *testing.T) {
				if changed, err = k.spec(Precondition{SpecRevision: read.spec}, 2); err != nil {
					t.Fatalf("got %v, want the change applied", err)
				}
				if changed.spec <= afterStatus.rev || changed.spec != changed.rev {
					t.Fatalf("after the spec change: %+v; want spec_revision = the new revision", changed)
				}
			})
			t.Run("spec_revision_read_before_a_spec_change_conflicts", func(t *testing.T) {
				if _, err := k.spec(Precondition{SpecRevision: read.spec}, 3); !errors.Is(err, ErrConflict) {
					t.Fatalf("got %v, want ErrConflict", err)
				}
			})
			t.Run("both_must_hold", func(t *testing.T) {
				later := k.status(t, 4)
				if _, err := k.spec(Precondition{Revision: changed.rev, SpecRevision: changed.spec}, 5); !errors.Is(err, ErrConflict) {
					t.Fatalf("stale revision, current spec_revision: got %v, want ErrConflict", err)
				}
				if _, err := k.spec(Precondition{Revision: later.rev, SpecRevision: read.spec}, 5); !errors.Is(err, ErrConflict) {
					t.Fatalf("current revision, stale spec_revision: got %v, want ErrConflict", err)
				}
				if _, err := k.spec(Precondition{Revision: later.rev, SpecRevision: later.spec}, 5); err != nil {
					t.Fatalf("both current: got %v, want the change applied", err)
				}
			})
		})
	}
}

// TestStatusUnchanged: a derived status (no observed revision) is unchanged when, stamped with
// the row's spec revision as UpdateStatus stamps it, it equals the stored status; a different
// field, or a spec that moved since the stored status observed it, is a change.
func TestStatusUnchanged(t *testing.T) {
	ready, installing := csv1.ClusterState_CLUSTER_STATE_READY, csv1.ClusterState_CLUSTER_STATE_INSTALLING
	stored := &csv1.ClusterStatus{State: ready, Message: "up", ObservedRevision: 7}
	for _, tt := range []struct {
		name         string
		specRevision int64
		derived      *csv1.ClusterStatus
		want         bool
	}{
		{"same status, same spec", 7, &csv1.ClusterStatus{State: ready, Message: "up"}, true},
		{"another state", 7, &csv1.ClusterStatus{State: installing, Message: "up"}, false},
		{"another message", 7, &csv1.ClusterStatus{State: ready, Message: "down"}, false},
		{"the spec moved since", 8, &csv1.ClusterStatus{State: ready, Message: "up"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cluster{Status: stored, SpecRevision: tt.specRevision}
			if got := c.StatusUnchanged(tt.derived); got != tt.want {
				t.Errorf("StatusUnchanged = %v, want %v", got, tt.want)
			}
			np := &NodePool{Status: &csv1.NodePoolStatus{Replicas: 2, ObservedRevision: 7}, SpecRevision: tt.specRevision}
			if got, want := np.StatusUnchanged(&csv1.NodePoolStatus{Replicas: 2}), tt.specRevision == 7; got != want {
				t.Errorf("NodePool.StatusUnchanged = %v, want %v", got, want)
			}
		})
	}
}
