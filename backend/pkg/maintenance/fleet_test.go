package maintenance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	cscontroller "github.com/openhcp/openhcp/cluster-service/pkg/controller"
	csserver "github.com/openhcp/openhcp/cluster-service/pkg/server"
	csstore "github.com/openhcp/openhcp/cluster-service/pkg/store"
	"github.com/openhcp/openhcp/cluster-service/pkg/versions"
	"github.com/openhcp/openhcp/internal/envelope/envelopetest"
	"github.com/openhcp/openhcp/internal/pgserver"
	"github.com/openhcp/openhcp/internal/pgserver/pgservertest"
)

// fleet is a real Cluster Service (its gRPC server on its PostgreSQL store). Management clusters
// are not run here: fakeHostedClusters stands in for HyperShift and Maestro feedback.
type fleet struct {
	t   *testing.T
	db  *csstore.Store
	cs  ClusterService
	sh  csv1.ProvisionShardsClient
	sub string
	pg  *pgserver.Server
}

func newFleet(t *testing.T, pg *pgserver.Server) *fleet {
	t.Helper()
	return newFleetWith(t, pg, nil)
}

// newFleetWith is newFleet whose Cluster Service resolves versions in cat (nil: the default
// catalogue).
func newFleetWith(t *testing.T, pg *pgserver.Server, cat *versions.Catalogue) *fleet {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := csstore.Open(ctx, pgservertest.NewDatabase(t, pg), log, envelopetest.Keyring(t))
	if err != nil {
		t.Fatalf("open cluster service store: %v", err)
	}
	t.Cleanup(db.Close)
	srv := csserver.New(db, csserver.Config{KeepAlive: time.Second, Log: log, Versions: cat})
	g := grpc.NewServer(srv.ServerOptions()...)
	srv.Register(g)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = g.Serve(l) }()
	t.Cleanup(func() { srv.Drain(); g.Stop() })
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &fleet{t: t, db: db, cs: NewClusterService(conn), sh: csv1.NewProvisionShardsClient(conn), sub: uuid.NewString(), pg: pg}
}

func (f *fleet) registerShard(name string, max int32) {
	f.t.Helper()
	if _, err := f.sh.RegisterShard(context.Background(), &csv1.RegisterShardRequest{Shard: &csv1.ProvisionShard{
		Name: name, Status: csv1.ShardStatus_SHARD_STATUS_ACTIVE, MaxClusters: max}}); err != nil {
		f.t.Fatalf("register shard: %v", err)
	}
}

// createCluster creates a cluster at version in channel group stable and reports it READY there.
func (f *fleet) createCluster(name, version string) string {
	f.t.Helper()
	return f.createClusterIn(name, "stable", version)
}

// createClusterIn creates a cluster at version in channel group group and reports it READY there.
func (f *fleet) createClusterIn(name, group, version string) string {
	f.t.Helper()
	id := strings.ReplaceAll(uuid.NewString(), "-", "")
	rid := "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/" + name
	if _, err := f.cs.(clients).CreateCluster(context.Background(), &csv1.CreateClusterRequest{Cluster: &csv1.Cluster{
		Id: id, ArmResourceId: rid,
		Spec: &csv1.ClusterSpec{VersionId: version, ChannelGroup: group, Azure: &csv1.AzureSpec{
			SubscriptionId: f.sub, ResourceGroup: "rg", Location: "westus3",
			SubnetId:               "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet/subnets/workers",
			NetworkSecurityGroupId: "/subscriptions/" + f.sub + "/resourceGroups/rg/providers/Microsoft.Network/networkSecurityGroups/nsg",
		}},
	}}); err != nil {
		f.t.Fatalf("create cluster: %v", err)
	}
	f.report(id, func(st *csv1.ClusterStatus) {
		st.State, st.CurrentVersion, st.Applied = csv1.ClusterState_CLUSTER_STATE_READY, version, true
	})
	return id
}

// report changes a cluster's stored status as Cluster Service's controller does from feedback.
func (f *fleet) report(id string, change func(*csv1.ClusterStatus)) {
	f.t.Helper()
	if err := f.tryReport(context.Background(), id, change); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fleet) tryReport(ctx context.Context, id string, change func(*csv1.ClusterStatus)) error {
	for range 20 {
		c, err := f.db.GetCluster(ctx, id)
		if err != nil {
			return err
		}
		st := proto.Clone(c.Status).(*csv1.ClusterStatus)
		if st == nil {
			st = &csv1.ClusterStatus{}
		}
		change(st)
		if _, err = f.db.UpdateStatus(ctx, id, c.Revision, st); err == nil {
			return nil
		} else if !errors.Is(err, csstore.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("status update of %s kept conflicting", id)
}

// fakeHostedClusters is a fake of what cannot run here for twenty clusters: HyperShift rolling
// out a new version and Maestro carrying its status back. It moves each upgrade policy the way
// Cluster Service's controller does (its NextUpgradeStep and the store's AdvanceUpgrade, checked
// against the real catalogue) and then reports the new version, or ClusterVersionFailing for the
// clusters in fail. starts counts how often each cluster's control plane was set to upgrade.
type fakeHostedClusters struct {
	f    *fleet
	fail map[string]bool
	mu   sync.Mutex
	// starts counts upgrades started per cluster.
	starts map[string]int
}

func (f *fleet) runFakeHostedClusters(t *testing.T, ids []string, fail map[string]bool) *fakeHostedClusters {
	h := &fakeHostedClusters{f: f, fail: fail, starts: map[string]int{}}
	cat, err := versions.Default()
	if err != nil {
		t.Fatal(err)
	}
	check := func(group, from, to string) error {
		got, err := cat.ResolveUpgrade(group, from, to, time.Now())
		if err == nil && got != to {
			err = fmt.Errorf("the catalogue leads from %s to %s instead", from, got)
		}
		return err
	}
	runFakeLoop(t, "fake hosted cluster", advanceEach(ids, func(ctx context.Context, id string) error { return h.advance(ctx, id, check) }))
	return h
}

// runFakeLoop runs step every 30 ms in the background until the test ends: the loop of every
// fake of a rollout that cannot run here (HyperShift, Maestro's feedback). A step's error is
// logged, not fatal: the next step tries again, as the real controllers do.
func runFakeLoop(t *testing.T, what string, step func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				t.Logf("%s: %v", what, err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Millisecond):
			}
		}
	}()
}

// advanceEach is a fake's step over several objects: it advances each of ids in turn, and one's
// error does not keep the others from moving.
func advanceEach(ids []string, advance func(ctx context.Context, id string) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for _, id := range ids {
			if err := advance(ctx, id); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
			}
		}
		return errors.Join(errs...)
	}
}

func (h *fakeHostedClusters) advance(ctx context.Context, id string, check func(group, from, to string) error) error {
	c, err := h.f.db.GetCluster(ctx, id)
	if err != nil {
		return err
	}
	p := c.Status.GetUpgrade()
	if step, _, ok := cscontroller.NextUpgradeStep(c.Spec, c.Status, p, time.Now(), check); ok {
		if step.Policy.NextRun == nil {
			step.Policy.NextRun = timestamppb.Now()
		}
		if _, err := h.f.db.AdvanceUpgrade(ctx, id, csstore.Precondition{Revision: c.Revision}, p.GetState(), step.Policy, step.Spec); err != nil {
			if errors.Is(err, csstore.ErrConflict) {
				return nil
			}
			return err
		}
		if step.Spec != nil {
			h.mu.Lock()
			h.starts[id]++
			h.mu.Unlock()
		}
		return nil
	}
	if p.GetState() != csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED || c.Status.GetCurrentVersion() == c.Spec.GetVersionId() {
		return nil
	}
	want := c.Spec.GetVersionId()
	return h.f.tryReport(ctx, id, func(st *csv1.ClusterStatus) {
		if h.fail[id] {
			st.State = csv1.ClusterState_CLUSTER_STATE_UPDATING
			st.Conditions = []*csv1.Condition{{Type: "ClusterVersionFailing", Status: "True", Message: "Cluster operator etcd is degraded"}}
			return
		}
		st.State, st.CurrentVersion = csv1.ClusterState_CLUSTER_STATE_READY, want
	})
}

func (h *fakeHostedClusters) started(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.starts[id]
}
