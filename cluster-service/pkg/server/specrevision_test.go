package server

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// TestUpdateConditionalOnSpecRevision: UpdateCluster, UpdateNodePool and UpdateExternalAuth with
// spec_revision succeed across a status write since the caller's read, are Aborted across a spec
// change, and refuse a negative spec_revision naming the field.
func TestUpdateConditionalOnSpecRevision(t *testing.T) {
	ctx := context.Background()
	e := start(t)
	e.register(t, "mc-1", 10)
	cl := e.cluster(t, 1, "alpha")
	np, err := e.pools.CreateNodePool(ctx, &csv1.CreateNodePoolRequest{NodePool: validPool(100, cl.Id, "alpha", "workers")})
	if err != nil {
		t.Fatal(err)
	}
	ee, eas := startExternalAuths(t)
	ee.register(t, "mc-1", 10)
	ecl := ee.cluster(t, 2, "beta")
	ea, err := eas.CreateExternalAuth(ctx, &csv1.CreateExternalAuthRequest{ExternalAuth: &csv1.ExternalAuth{
		Id: id(200), ClusterId: ecl.Id, ArmResourceId: externalAuthARM("beta", "entra"), Spec: validExternalAuthSpec()}})
	if err != nil {
		t.Fatal(err)
	}

	type object interface {
		GetRevision() int64
		GetSpecRevision() int64
	}
	tests := []struct {
		name string
		// read is the object as the caller reads it; statusWrite is a controller's status write.
		read        func(t *testing.T) object
		statusWrite func(t *testing.T, n int)
		// update changes the spec (n makes each change different), conditional on specRevision.
		update func(specRevision int64, n int) (object, error)
	}{{
		name: "cluster",
		read: func(t *testing.T) object {
			c, err := e.clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: cl.Id})
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		statusWrite: func(t *testing.T, n int) {
			c, err := e.st.GetCluster(ctx, cl.Id)
			if err != nil {
				t.Fatal(err)
			}
			st := proto.Clone(c.Status).(*csv1.ClusterStatus)
			st.Message = fmt.Sprint("status write ", n)
			if _, err := e.st.UpdateStatus(ctx, c.ID, c.Revision, st); err != nil {
				t.Fatal(err)
			}
		},
		update: func(specRevision int64, n int) (object, error) {
			until := fmt.Sprintf("2030-01-%02dT00:00:00Z", n)
			return e.clusters.UpdateCluster(ctx, &csv1.UpdateClusterRequest{Id: cl.Id, Update: &csv1.ClusterUpdate{PausedUntil: &until}, SpecRevision: specRevision})
		},
	}, {
		name: "node_pool",
		read: func(t *testing.T) object {
			got, err := e.pools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: np.Id})
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
		statusWrite: func(t *testing.T, n int) {
			cur, err := e.st.NodePools().Get(ctx, np.Id)
			if err != nil {
				t.Fatal(err)
			}
			st := proto.Clone(cur.Status).(*csv1.NodePoolStatus)
			st.Message = fmt.Sprint("status write ", n)
			if _, err := e.st.NodePools().UpdateStatus(ctx, cur.ID, cur.Revision, st); err != nil {
				t.Fatal(err)
			}
		},
		update: func(specRevision int64, n int) (object, error) {
			return e.pools.UpdateNodePool(ctx, &csv1.UpdateNodePoolRequest{Id: np.Id,
				Update: &csv1.NodePoolUpdate{Replicas: proto.Int32(int32(2 + n))}, SpecRevision: specRevision})
		},
	}, {
		name: "external_auth",
		read: func(t *testing.T) object {
			got, err := eas.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: ea.Id})
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
		statusWrite: func(t *testing.T, n int) {
			cur, err := ee.st.ExternalAuths().Get(ctx, ea.Id)
			if err != nil {
				t.Fatal(err)
			}
			st := proto.Clone(cur.Status).(*csv1.ExternalAuthStatus)
			st.Message = fmt.Sprint("status write ", n)
			if _, err := ee.st.ExternalAuths().UpdateStatus(ctx, cur.ID, cur.Revision, st); err != nil {
				t.Fatal(err)
			}
		},
		update: func(specRevision int64, n int) (object, error) {
			spec := validExternalAuthSpec()
			spec.ClaimMappings.Username.Prefix = fmt.Sprint("entra", n, ":")
			return eas.UpdateExternalAuth(ctx, &csv1.UpdateExternalAuthRequest{Id: ea.Id, Update: csv1.FullExternalAuthUpdate(spec), SpecRevision: specRevision})
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read := tc.read(t)
			tc.statusWrite(t, 1)
			if now := tc.read(t); now.GetRevision() <= read.GetRevision() || now.GetSpecRevision() != read.GetSpecRevision() {
				t.Fatalf("status write: revision %d→%d, spec_revision %d→%d; want a new revision only",
					read.GetRevision(), now.GetRevision(), read.GetSpecRevision(), now.GetSpecRevision())
			}
			t.Run("a_status_write_since_the_read_is_no_conflict", func(t *testing.T) {
				got, err := tc.update(read.GetSpecRevision(), 1)
				if err != nil {
					t.Fatalf("got %v, want the change applied", err)
				}
				if got.GetSpecRevision() <= read.GetSpecRevision() {
					t.Fatalf("spec_revision %d after the change, was %d", got.GetSpecRevision(), read.GetSpecRevision())
				}
			})
			t.Run("a_spec_change_since_the_read_is_aborted", func(t *testing.T) {
				if _, err := tc.update(read.GetSpecRevision(), 2); status.Code(err) != codes.Aborted {
					t.Fatalf("got %v, want Aborted", err)
				}
			})
			t.Run("negative_spec_revision_is_invalid", func(t *testing.T) {
				if _, err := tc.update(-1, 3); status.Code(err) != codes.InvalidArgument || !fieldViolations(err)["spec_revision"] {
					t.Fatalf("got %v, want InvalidArgument on spec_revision", err)
				}
			})
		})
	}
}
