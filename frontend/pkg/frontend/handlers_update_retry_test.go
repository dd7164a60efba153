package frontend

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
)

// unavailableUpdates is the fake NodePools service whose next failUpdates updates fail as a
// call to a Cluster Service that is down does: Unavailable, before reaching it. The next
// loseAnswers updates are applied, and their answer lost: Unavailable after all.
type unavailableUpdates struct {
	*fakeNodePools
	failUpdates, loseAnswers atomic.Int32
}

func (f *unavailableUpdates) UpdateNodePool(ctx context.Context, req *csv1.UpdateNodePoolRequest) (*csv1.NodePool, error) {
	if f.failUpdates.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: connect: connection refused\"")
	}
	got, err := f.fakeNodePools.UpdateNodePool(ctx, req)
	if err == nil && f.loseAnswers.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	return got, err
}

// poolRetryEnv is a frontend whose node pools' Cluster Service is an unavailableUpdates, with the
// ready node pool np1 of the ready cluster c1: the pool's Cluster Service ID and ARM path.
func poolRetryEnv(t *testing.T) (e *env, fake *unavailableUpdates, csID, path string) {
	t.Helper()
	fake = &unavailableUpdates{fakeNodePools: &fakeNodePools{pools: map[string]*csv1.NodePool{}}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterNodePoolsServer(gs, fake) })
	e = newEnv(t, func(c *Config) { c.NodePools = csv1.NewNodePoolsClient(conn) })
	fake.clusters = e.cs
	e.readyCluster(t, "c1")
	csID = e.readyPool(t, "c1", "np1", minimalPoolBody())
	return e, fake, csID, poolPath("c1", "np1")
}

// unconfirmedAfter503 requires first, a write of the resource at path, to be the 503 of an
// update whose Cluster Service answer was lost, and returns the operation it left running
// without a revision.
func (e *env) unconfirmedAfter503(t *testing.T, method string, first response, path string) string {
	t.Helper()
	if first.code != 503 || first.header.Get("Retry-After") == "" {
		t.Fatalf("%s while Cluster Service is unreachable: %d %s, want 503 with Retry-After", method, first.code, first.body)
	}
	rd, _ := e.resource(path)
	pending := rd.ActiveOperationID
	if op, _ := e.operation(pending); op == nil || op.Request != armdoc.OperationUpdate || op.InternalRevision != 0 || op.Status.Terminal() {
		t.Fatalf("operation after the 503: %+v, want a running update without a revision", op)
	}
	return pending
}

// TestRetriedUpdateJoinsItsUnconfirmedOperation: a node-pool PUT or PATCH whose Cluster
// Service call fails without a definitive answer is answered 503, and its operation stays (the
// call may have taken effect). The client's retry of the same request, as ARM and the Azure SDK
// send it after a 503 (the SDK's BeginUpdate of a node pool is a PATCH), drives Cluster Service
// again with the update the operation recorded and joins that operation, which then records the
// revision and ends as any update does; it is not refused 409 for the operation it never saw
// (the first full chaos run: c25/pool1's scale ended Failed with UpdateNotRecorded 2 min later;
// a probe of a running region: a PATCH retried after a Cluster Service kill got 409). A
// different write meanwhile is still refused 409.
func TestRetriedUpdateJoinsItsUnconfirmedOperation(t *testing.T) {
	for _, tc := range []struct {
		method string
		// body is the request with replicas n; want the code of its answer.
		body func(n int) []byte
		want int
		// sent says whether an update Cluster Service was sent is what the method asks: a PUT
		// replaces every updatable field, a PATCH names only replicas.
		sent func(u *csv1.NodePoolUpdate) bool
	}{
		{"PUT", func(n int) []byte { return mustJSON(set(minimalPoolBody(), "properties.replicas", n)) }, 200,
			func(u *csv1.NodePoolUpdate) bool { return u.GetReplicas() == 3 && u.Labels != nil }},
		{"PATCH", func(n int) []byte { return []byte(fmt.Sprintf(`{"properties":{"replicas":%d}}`, n)) }, 202,
			func(u *csv1.NodePoolUpdate) bool {
				return proto.Equal(u, &csv1.NodePoolUpdate{Replicas: proto.Int32(3)})
			}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			e, fake, csID, path := poolRetryEnv(t)
			send := func(n int) response { return e.do(tc.method, path, tc.body(n), nil) }
			lastSent := func() *csv1.NodePoolUpdate {
				fake.mu.Lock()
				defer fake.mu.Unlock()
				return fake.updates[len(fake.updates)-1].GetUpdate()
			}

			fake.failUpdates.Store(1)
			pending := e.unconfirmedAfter503(t, tc.method, send(3), path)

			if other := send(5); other.code != 409 {
				t.Fatalf("a different %s while the update is unconfirmed: %d %s, want 409", tc.method, other.code, other.body)
			}
			retry := send(3)
			if retry.code != tc.want {
				t.Fatalf("retry of the same %s: %d %s, want %d", tc.method, retry.code, retry.body, tc.want)
			}
			if got := opIDFrom(t, retry.header.Get("Azure-AsyncOperation")); got != pending {
				t.Fatalf("retry points at operation %s, want the pending %s", got, pending)
			}
			if tc.method == "PUT" {
				if props := retry.json(t)["properties"].(map[string]any); props["provisioningState"] != "Updating" || props["replicas"] != float64(3) {
					t.Fatalf("retry answered %s", retry.body)
				}
			}
			if u := lastSent(); !tc.sent(u) {
				t.Fatalf("the retry sent Cluster Service %v, not what the %s asked", u, tc.method)
			}
			p := fake.pool(csID)
			if p.GetSpec().GetReplicas() != 3 {
				t.Fatalf("Cluster Service holds replicas %d, want 3", p.GetSpec().GetReplicas())
			}
			if op, _ := e.operation(pending); op.InternalRevision != p.GetSpecRevision() || op.Status.Terminal() {
				t.Fatalf("operation after the retry: %+v, want revision %d recorded and still running", op, p.GetSpecRevision())
			}

			// Once the update has its revision, the same request again (a retry whose answer
			// was lost) joins it too, without another Cluster Service call.
			fake.mu.Lock()
			calls := len(fake.updates)
			fake.mu.Unlock()
			again := send(3)
			if again.code != tc.want || opIDFrom(t, again.header.Get("Azure-AsyncOperation")) != pending {
				t.Fatalf("the same %s once the revision is recorded: %d %s, want %d pointing at %s", tc.method, again.code, again.body, tc.want, pending)
			}
			fake.mu.Lock()
			defer fake.mu.Unlock()
			if len(fake.updates) != calls {
				t.Fatalf("%d more Cluster Service updates for a %s that joined a recorded update, want 0", len(fake.updates)-calls, tc.method)
			}
		})
	}
}

// TestSameBodyFromAnotherCallerDoesNotJoinTheUpdate: only the caller that started an update
// may join it with a repeated PUT. Another client (as ARM names it) sending the same body gets
// the 409 it always got, and Cluster Service is not called for it: the operation it would be
// pointed at is one it may not read (getOperationStatus answers 404 to another caller), and it
// did not start the update that would be re-sent.
func TestSameBodyFromAnotherCallerDoesNotJoinTheUpdate(t *testing.T) {
	e, fake, _, path := poolRetryEnv(t)
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

// unavailableClusterUpdates is the fake Cluster Service whose next failUpdates UpdateCluster
// calls fail as a call to a Cluster Service that is down does: Unavailable, before reaching
// it; the next loseAnswers are applied and their answer lost (Unavailable after all). calls
// records every UpdateCluster request, failed or not.
type unavailableClusterUpdates struct {
	*fakeClusterService
	failUpdates, loseAnswers atomic.Int32
	callsMu                  sync.Mutex
	calls                    []*csv1.UpdateClusterRequest
}

func (f *unavailableClusterUpdates) UpdateCluster(ctx context.Context, req *csv1.UpdateClusterRequest) (*csv1.Cluster, error) {
	f.callsMu.Lock()
	f.calls = append(f.calls, req)
	f.callsMu.Unlock()
	if f.failUpdates.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: connect: connection refused\"")
	}
	got, err := f.fakeClusterService.UpdateCluster(ctx, req)
	if err == nil && f.loseAnswers.Add(-1) >= 0 {
		return nil, status.Error(codes.Unavailable, "error reading from server: EOF")
	}
	return got, err
}

func (f *unavailableClusterUpdates) sent() []*csv1.UpdateClusterRequest {
	f.callsMu.Lock()
	defer f.callsMu.Unlock()
	return append([]*csv1.UpdateClusterRequest(nil), f.calls...)
}

// clusterRetryEnv is a frontend whose Cluster Service can be made unreachable for updates, with
// the ready cluster rg/c1. restart is another frontend over the same store and Cluster
// Service, as the frontend after a restart: it shares nothing in memory with the first.
func clusterRetryEnv(t *testing.T) (e *env, fake *unavailableClusterUpdates, restart func() *env) {
	fake = &unavailableClusterUpdates{fakeClusterService: &fakeClusterService{clusters: map[string]*csv1.Cluster{}}}
	conn := serveFake(t, func(gs *grpc.Server) { csv1.RegisterClustersServer(gs, fake) })
	e = newEnv(t, func(c *Config) { c.Clusters = csv1.NewClustersClient(conn) })
	e.cs = fake.fakeClusterService
	e.readyCluster(t, "c1")
	restart = func() *env {
		srv, err := NewServer(Config{Store: e.store, Clusters: csv1.NewClustersClient(conn), Location: testLocation,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetryAfter: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv.Handler())
		t.Cleanup(hs.Close)
		return &env{t: t, srv: srv, http: hs, store: e.store, cs: e.cs}
	}
	return e, fake, restart
}

// TestRetriedClusterUpdateJoinsItsUnconfirmedOperation: a cluster PUT or PATCH whose
// UpdateCluster call fails without a definitive answer is answered 503 and keeps its operation
// (the change may have been taken). The caller's retry of the same request, as ARM and the
// Azure SDK send it after a 503, re-sends the same ClusterUpdate (recorded in the operation, so
// a frontend restarted in between sends it too) with the operation's ID, records the revision
// Cluster Service answers (what the backend ends the operation on) and points at that
// operation: 200 for a PUT, 202 for a PATCH. A different request meanwhile is still a 409, and
// so is the same request from another caller, which does not reach Cluster Service.
func TestRetriedClusterUpdateJoinsItsUnconfirmedOperation(t *testing.T) {
	path := clusterPath("rg", "c1")
	callerA := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000a"}
	callerB := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000b"}
	for _, tc := range []struct {
		name          string
		method        string
		body, other   []byte
		restart       bool
		wantCode      int
		wantLocation  bool
		wantRendering bool
	}{
		{name: "put", method: "PUT", body: mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60)),
			other: mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 90)), wantCode: 200, wantRendering: true},
		{name: "put_after_a_frontend_restart", method: "PUT", body: mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60)),
			other: mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 90)), restart: true, wantCode: 200, wantRendering: true},
		{name: "patch", method: "PATCH", body: []byte(`{"properties":{"nodeDrainTimeoutMinutes":60}}`),
			other: []byte(`{"properties":{"nodeDrainTimeoutMinutes":90}}`), wantCode: 202, wantLocation: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, restart := clusterRetryEnv(t)
			fake.failUpdates.Store(1)
			pending := e.unconfirmedAfter503(t, tc.method, e.do(tc.method, path, tc.body, callerA), path)
			rd, _ := e.resource(path)
			lost := fake.sent()
			if len(lost) != 1 || lost[0].GetUpdate().GetNodeDrainTimeoutMinutes() != 60 {
				t.Fatalf("UpdateCluster calls before the retry: %v, want the one that failed", lost)
			}
			if tc.restart {
				e = restart()
			}

			if other := e.do(tc.method, path, tc.other, callerA); other.code != 409 {
				t.Fatalf("a different %s while the update is unconfirmed: %d %s, want 409", tc.method, other.code, other.body)
			}
			if other := e.do(tc.method, path, tc.body, callerB); other.code != 409 {
				t.Fatalf("the same %s from another caller: %d %s, want 409", tc.method, other.code, other.body)
			}
			if n := len(fake.sent()); n != 1 {
				t.Fatalf("%d UpdateCluster calls for the refused requests, want 0", n-1)
			}

			retry := e.do(tc.method, path, tc.body, callerA)
			if retry.code != tc.wantCode {
				t.Fatalf("retry of the same %s: %d %s, want %d", tc.method, retry.code, retry.body, tc.wantCode)
			}
			if got := opIDFrom(t, retry.header.Get("Azure-AsyncOperation")); got != pending {
				t.Fatalf("retry points at operation %s, want the pending %s", got, pending)
			}
			if loc := retry.header.Get("Location"); (loc != "") != tc.wantLocation {
				t.Fatalf("retry's Location %q; want one: %v", loc, tc.wantLocation)
			}
			if tc.wantRendering {
				if props := retry.json(t)["properties"].(map[string]any); props["provisioningState"] != "Updating" || props["nodeDrainTimeoutMinutes"] != float64(60) {
					t.Fatalf("retry answered %s", retry.body)
				}
			}
			calls := fake.sent()
			if len(calls) != 2 || calls[1].GetOperationId() != pending || !proto.Equal(calls[1].GetUpdate(), lost[0].GetUpdate()) ||
				calls[1].GetId() != rd.InternalID {
				t.Fatalf("UpdateCluster calls %v; want the lost update sent again for operation %s", calls, pending)
			}
			fake.mu.Lock()
			specRevision := fake.clusters[rd.InternalID].GetSpecRevision()
			fake.mu.Unlock()
			// The revision recorded is what the backend ends the operation on (READY observed at
			// or after it), as for an update that was never lost.
			if op, _ := e.operation(pending); specRevision == 0 || op.InternalRevision != specRevision || op.Status.Terminal() {
				t.Fatalf("operation after the retry: %+v, want revision %d recorded and still running", op, specRevision)
			}

			// With the revision recorded, the same request again (a retry whose answer was lost)
			// joins too, without another Cluster Service call.
			again := e.do(tc.method, path, tc.body, callerA)
			if again.code != tc.wantCode || opIDFrom(t, again.header.Get("Azure-AsyncOperation")) != pending {
				t.Fatalf("the same %s once the revision is recorded: %d %s, want %d pointing at %s", tc.method, again.code, again.body, tc.wantCode, pending)
			}
			if n := len(fake.sent()); n != 2 {
				t.Fatalf("%d more UpdateCluster calls for a request that joined a recorded update, want 0", n-2)
			}
		})
	}
}

// TestClusterRetryDoesNotReviveAnUpdateThatEndedMeanwhile: when the backend fails the
// unconfirmed update (UpdateNotRecorded, after its grace) while a retry is re-sending it, the
// retry does not write to the ended operation nor point the caller at it as if it ran: it is a
// 409 naming the operation, which stays Failed as the backend wrote it.
func TestClusterRetryDoesNotReviveAnUpdateThatEndedMeanwhile(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path := clusterPath("rg", "c1")
	body := mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60))
	pending := fake.lostWrite(t, e, "PUT", path, body, false)

	var hookErr error
	fake.mu.Lock()
	fake.beforeUpdateAnswer = func(*csv1.UpdateClusterRequest) {
		// The backend, meanwhile: the grace has passed.
		op, opDoc := e.operation(pending)
		now := time.Now().UTC()
		op.Status, op.EndTime, op.LastTransitionTime = armdoc.StateFailed, &now, now
		op.Error = &armdoc.CloudErrorBody{Code: "UpdateNotRecorded", Message: "The update was not confirmed."}
		_, hookErr = e.store.Replace(context.Background(), mustWithBody(opDoc, op), opDoc.ETag)
	}
	fake.mu.Unlock()
	retry := e.do("PUT", path, body, nil)
	if hookErr != nil {
		t.Fatalf("fail the operation as the backend does: %v", hookErr)
	}
	if retry.code != 409 {
		t.Fatalf("retry while the backend failed the update: %d %s, want 409", retry.code, retry.body)
	}
	op, _ := e.operation(pending)
	if op.Status != armdoc.StateFailed || op.Error == nil || op.Error.Code != "UpdateNotRecorded" || op.InternalRevision != 0 {
		t.Fatalf("operation after the retry: %+v, want it Failed UpdateNotRecorded as the backend left it", op)
	}
}

// TestClusterRetryOfAChangeThatEndsAtOnceEndsItsOperation: a retried cluster change that Cluster
// Service has nothing to roll out for (a channel group) ends its operation and the resource
// Succeeded when the re-sent update is accepted, as the first attempt would have.
func TestClusterRetryOfAChangeThatEndsAtOnceEndsItsOperation(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path := withVersion(clusterPath("rg", "c1"), "2026-06-30-preview")
	body := []byte(`{"properties":{"version":{"channelGroup":"candidate"}}}`)
	pending := fake.lostWrite(t, e, "PATCH", path, body, false)
	retry := e.do("PATCH", path, body, nil)
	if retry.code != 202 || opIDFrom(t, retry.header.Get("Azure-AsyncOperation")) != pending {
		t.Fatalf("retry of the same PATCH: %d %s, want 202 pointing at %s", retry.code, retry.body, pending)
	}
	if calls := fake.sent(); len(calls) != 2 || calls[1].GetUpdate().GetChannelGroup() != "candidate" || calls[1].GetOperationId() != pending {
		t.Fatalf("UpdateCluster calls %v; want the channel group sent again for operation %s", calls, pending)
	}
	op, _ := e.operation(pending)
	rd, _ := e.resource(clusterPath("rg", "c1"))
	if op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
		t.Fatalf("after the retry: operation %s, resource %s (active %q); want both Succeeded", op.Status, rd.ProvisioningState, rd.ActiveOperationID)
	}
}

// TestUpdateThatEndsAtOnceOutlastsTheBackendsWrite: the backend may take up a new update
// operation (and write it, Accepted → Updating) between the frontend's write of the update and
// its end; a change Cluster Service has nothing to roll out for (a channel group) must still
// end Succeeded, resource and operation, and answer 202, whether it is the first request or a
// retry after a 503. Before, the end's write was conditional on the ETags read before Cluster
// Service's call and was not tried again: the caller got a 409 for the backend's own write, and
// the accepted operation was left to fail UpdateNotRecorded.
func TestUpdateThatEndsAtOnceOutlastsTheBackendsWrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry bool // the backend's write lands while a retry after a 503 sends the update again
	}{
		{"first_request", false},
		{"retry_after_a_503", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, _ := clusterRetryEnv(t)
			path := withVersion(clusterPath("rg", "c1"), "2026-06-30-preview")
			body := []byte(`{"properties":{"version":{"channelGroup":"candidate"}}}`)
			if tc.retry {
				fake.failUpdates.Store(1)
				if first := e.do("PATCH", path, body, nil); first.code != 503 {
					t.Fatalf("PATCH while Cluster Service is unreachable: %d %s, want 503", first.code, first.body)
				}
			}
			var hookErr error
			fake.mu.Lock()
			fake.beforeUpdateAnswer = func(*csv1.UpdateClusterRequest) {
				// The backend takes up the operation meanwhile.
				rd, _ := e.resource(clusterPath("rg", "c1"))
				op, opDoc := e.operation(rd.ActiveOperationID)
				op.Status, op.LastTransitionTime = armdoc.StateUpdating, time.Now().UTC()
				_, hookErr = e.store.Replace(context.Background(), mustWithBody(opDoc, op), opDoc.ETag)
			}
			fake.mu.Unlock()
			resp := e.do("PATCH", path, body, nil)
			if hookErr != nil {
				t.Fatalf("write the operation as the backend does: %v", hookErr)
			}
			if resp.code != 202 {
				t.Fatalf("PATCH while the backend wrote its operation: %d %s, want 202", resp.code, resp.body)
			}
			opID := opIDFrom(t, resp.header.Get("Azure-AsyncOperation"))
			op, _ := e.operation(opID)
			rd, _ := e.resource(clusterPath("rg", "c1"))
			if op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
				t.Fatalf("after the PATCH: operation %s, resource %s (active %q); want both Succeeded", op.Status, rd.ProvisioningState, rd.ActiveOperationID)
			}
		})
	}
}

// lostWrite sends method body to path (a cluster's, an api-version query allowed) while
// Cluster Service's answer is lost: the UpdateCluster call fails without reaching it (reached
// false) or is applied and its answer lost (reached true). It requires the 503 such a write is
// answered with, and returns the operation the resource was left with.
func (f *unavailableClusterUpdates) lostWrite(t *testing.T, e *env, method, path string, body []byte, reached bool) string {
	t.Helper()
	if reached {
		f.loseAnswers.Store(1)
	} else {
		f.failUpdates.Store(1)
	}
	if r := e.do(method, path, body, nil); r.code != 503 {
		t.Fatalf("%s whose Cluster Service answer is lost: %d %s, want 503", method, r.code, r.body)
	}
	resource, _, _ := strings.Cut(path, "?")
	rd, _ := e.resource(resource)
	return rd.ActiveOperationID
}

// TestPutThatEndsAtOnceAnswersSucceeded: a PUT whose change Cluster Service has nothing to roll
// out for (a channel group) ends its operation at once, so its 200 shows the cluster as a GET
// right after does: Succeeded, not Updating. The first request and the retry after a 503 that
// joins the operation both answer so. Before, the answer was rendered from the resource as
// written before the update ended, marked Updating.
func TestPutThatEndsAtOnceAnswersSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		retry bool
	}{
		{"first_request", false},
		{"retry_after_a_503", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, _ := clusterRetryEnv(t)
			path := withVersion(clusterPath("rg", "c1"), "2026-06-30-preview")
			body := mustJSON(set(minimalBody(), "properties.version.channelGroup", "candidate"))
			if tc.retry {
				fake.lostWrite(t, e, "PUT", path, body, false)
			}
			resp := e.do("PUT", path, body, nil)
			if resp.code != 200 {
				t.Fatalf("PUT of a channel group: %d %s, want 200", resp.code, resp.body)
			}
			got, _ := resp.json(t)["properties"].(map[string]any)
			if state := got["provisioningState"]; state != "Succeeded" {
				t.Errorf("PUT answered provisioningState %v, want Succeeded (its operation ended at once)", state)
			}
			rd, _ := e.resource(clusterPath("rg", "c1"))
			if rd.ProvisioningState != armdoc.StateSucceeded {
				t.Errorf("stored resource %s, want Succeeded", rd.ProvisioningState)
			}
			get := e.do("GET", path, nil, nil)
			if state := get.json(t)["properties"].(map[string]any)["provisioningState"]; state != "Succeeded" {
				t.Errorf("GET after the PUT shows provisioningState %v, want Succeeded", state)
			}
		})
	}
}
