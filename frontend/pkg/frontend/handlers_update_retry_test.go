package frontend

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// unavailableUpdates is the fake NodePools service whose next failUpdates updates fail as a
// call to a Cluster Service that is down does: Unavailable, before reaching it.
type unavailableUpdates struct {
	*fakeNodePools
	failUpdates atomic.Int32
}

func (f *unavailableUpdates) UpdateNodePool(ctx context.Context, req *csv1.UpdateNodePoolRequest) (*csv1.NodePool, error) {
	if f.failUpdates.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: connect: connection refused\"")
	}
	return f.fakeNodePools.UpdateNodePool(ctx, req)
}

// TestRetriedUpdateJoinsItsUnconfirmedOperation: a node-pool PUT whose Cluster Service call
// fails without a definitive answer is answered 503, and its operation stays (the call may have
// taken effect). The client's retry of the same PUT, as ARM and the Azure SDK send it after a
// 503, drives Cluster Service again and joins that operation, which then records the revision
// and ends as any update does; it is not refused 409 for the operation it never saw (the first
// full chaos run: c25/pool1's scale ended Failed with UpdateNotRecorded 2 min later). A
// different PUT meanwhile is still refused 409.
func TestRetriedUpdateJoinsItsUnconfirmedOperation(t *testing.T) {
	fake := &unavailableUpdates{fakeNodePools: &fakeNodePools{pools: map[string]*csv1.NodePool{}}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterNodePoolsServer(gs, fake) })
	e := newEnv(t, func(c *Config) { c.NodePools = csv1.NewNodePoolsClient(conn) })
	fake.clusters = e.cs
	e.readyCluster(t, "c1")
	csID := e.readyPool(t, "c1", "np1", minimalPoolBody())
	path := poolPath("c1", "np1")
	scaled := set(minimalPoolBody(), "properties.replicas", 3)

	fake.failUpdates.Store(1)
	first := e.put(path, scaled)
	if first.code != 503 || first.header.Get("Retry-After") == "" {
		t.Fatalf("PUT while Cluster Service is unreachable: %d %s, want 503 with Retry-After", first.code, first.body)
	}
	rd, _ := e.resource(path)
	pending := rd.ActiveOperationID
	if op, _ := e.operation(pending); op == nil || op.Request != armdoc.OperationUpdate || op.InternalRevision != 0 || op.Status.Terminal() {
		t.Fatalf("operation after the 503: %+v, want a running update without a revision", op)
	}

	if other := e.put(path, set(minimalPoolBody(), "properties.replicas", 5)); other.code != 409 {
		t.Fatalf("a different PUT while the update is unconfirmed: %d %s, want 409", other.code, other.body)
	}
	retry := e.put(path, scaled)
	if retry.code != 200 {
		t.Fatalf("retry of the same PUT: %d %s, want 200", retry.code, retry.body)
	}
	if got := opIDFrom(t, retry.header.Get("Azure-AsyncOperation")); got != pending {
		t.Fatalf("retry points at operation %s, want the pending %s", got, pending)
	}
	if props := retry.json(t)["properties"].(map[string]any); props["provisioningState"] != "Updating" || props["replicas"] != float64(3) {
		t.Fatalf("retry answered %s", retry.body)
	}
	p := fake.pool(csID)
	if p.GetSpec().GetReplicas() != 3 {
		t.Fatalf("Cluster Service holds replicas %d, want 3", p.GetSpec().GetReplicas())
	}
	if op, _ := e.operation(pending); op.InternalRevision != p.GetSpecRevision() || op.Status.Terminal() {
		t.Fatalf("operation after the retry: %+v, want revision %d recorded and still running", op, p.GetSpecRevision())
	}

	// Once the update has its revision, the same PUT again (a retry whose 200 was lost) joins it
	// too, without another Cluster Service call.
	fake.mu.Lock()
	calls := len(fake.updates)
	fake.mu.Unlock()
	again := e.put(path, scaled)
	if again.code != 200 || opIDFrom(t, again.header.Get("Azure-AsyncOperation")) != pending {
		t.Fatalf("the same PUT once the revision is recorded: %d %s, want 200 pointing at %s", again.code, again.body, pending)
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	if len(fake.updates) != calls {
		t.Fatalf("%d more Cluster Service updates for a PUT that joined a recorded update, want 0", len(fake.updates)-calls)
	}
}

// TestSameBodyFromAnotherCallerDoesNotJoinTheUpdate: only the caller that started an update
// may join it with a repeated PUT. Another client (as ARM names it) sending the same body gets
// the 409 it always got, and Cluster Service is not called for it: the operation it would be
// pointed at is one it may not read (getOperationStatus answers 404 to another caller), and it
// did not start the update that would be re-sent.
func TestSameBodyFromAnotherCallerDoesNotJoinTheUpdate(t *testing.T) {
	fake := &unavailableUpdates{fakeNodePools: &fakeNodePools{pools: map[string]*csv1.NodePool{}}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterNodePoolsServer(gs, fake) })
	e := newEnv(t, func(c *Config) { c.NodePools = csv1.NewNodePoolsClient(conn) })
	fake.clusters = e.cs
	e.readyCluster(t, "c1")
	e.readyPool(t, "c1", "np1", minimalPoolBody())
	path := poolPath("c1", "np1")
	scaled := mustJSON(set(minimalPoolBody(), "properties.replicas", 3))
	callerA := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000a"}
	callerB := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000b"}

	fake.failUpdates.Store(1)
	if first := e.do("PUT", path, scaled, callerA); first.code != 503 {
		t.Fatalf("PUT while Cluster Service is unreachable: %d %s, want 503", first.code, first.body)
	}
	fake.mu.Lock()
	calls := len(fake.updates)
	fake.mu.Unlock()

	other := e.do("PUT", path, scaled, callerB)
	if other.code != 409 {
		t.Fatalf("the same PUT from another caller: %d %s, want 409", other.code, other.body)
	}
	fake.mu.Lock()
	sent := len(fake.updates) - calls
	fake.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d Cluster Service updates for another caller's PUT, want 0", sent)
	}
	if retry := e.do("PUT", path, scaled, callerA); retry.code != 200 {
		t.Fatalf("the starting caller's retry: %d %s, want 200", retry.code, retry.body)
	}
}

// TestSameCreateFromAnotherCallerIsNotTakenForItsRetry: a create's retry is answered with that
// create (201 and its operation) only when it comes from the caller that started it. Another
// client's identical PUT while the create runs is a 409, as any write during an operation, and
// does not drive Cluster Service.
func TestSameCreateFromAnotherCallerIsNotTakenForItsRetry(t *testing.T) {
	fake := &fakeNodePools{pools: map[string]*csv1.NodePool{}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterNodePoolsServer(gs, fake) })
	e := newEnv(t, func(c *Config) { c.NodePools = csv1.NewNodePoolsClient(conn) })
	fake.clusters = e.cs
	e.readyCluster(t, "c1")
	path := poolPath("c1", "np1")
	body := mustJSON(minimalPoolBody())
	callerA := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000a"}
	callerB := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000b"}

	if first := e.do("PUT", path, body, callerA); first.code != 201 {
		t.Fatalf("create: %d %s, want 201", first.code, first.body)
	}
	fake.mu.Lock()
	calls := len(fake.creates)
	fake.mu.Unlock()
	if other := e.do("PUT", path, body, callerB); other.code != 409 {
		t.Fatalf("the same create from another caller: %d %s, want 409", other.code, other.body)
	}
	fake.mu.Lock()
	sent := len(fake.creates) - calls
	fake.mu.Unlock()
	if sent != 0 {
		t.Fatalf("%d Cluster Service creates for another caller's PUT, want 0", sent)
	}
	if retry := e.do("PUT", path, body, callerA); retry.code != 201 {
		t.Fatalf("the starting caller's retry: %d %s, want 201", retry.code, retry.body)
	}
}
