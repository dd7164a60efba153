package frontend

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// notKnown is the backend's end of a create whose object Cluster Service never got.
var notKnown = &armdoc.CloudErrorBody{Code: "InternalServerError", Message: "The cluster is no longer known to the service."}

// lostCreate PUTs body to path with header while setCreateErr makes Cluster Service's create
// fail without a definitive answer, checks the answer is a 5xx, lets the create through again,
// and returns the resource document the attempt left.
func (e *env) lostCreate(t *testing.T, path string, body map[string]any, header map[string]string, setCreateErr func(error)) *armdoc.ResourceDocument {
	t.Helper()
	setCreateErr(status.Error(codes.Unavailable, "cluster service is restarting"))
	first := e.do("PUT", path, mustJSON(body), header)
	setCreateErr(nil)
	if first.code < 500 {
		t.Fatalf("create with Cluster Service unavailable: %d %s, want a 5xx", first.code, first.body)
	}
	rd, _ := e.resource(path)
	if rd == nil {
		t.Fatal("the documents of the unanswered create are gone")
	}
	return rd
}

func (f *fakeNodePools) setCreateErr(err error) {
	f.mu.Lock()
	f.createErr = err
	f.mu.Unlock()
}

// TestPutOnAResourceWhoseCreateNeverLandedCreatesIt: a create whose Cluster Service call ended
// without an answer (and was not sent again in time) is failed by the backend, and Cluster
// Service never had the object. ARM's contract is that a PUT on a Failed resource tries again:
// the same PUT (or another body) creates it, as a create answers (201, a new operation), with
// the ID the documents hold. A Failed resource Cluster Service does hold keeps the update path.
func TestPutOnAResourceWhoseCreateNeverLandedCreatesIt(t *testing.T) {
	t.Run("cluster", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			body func() map[string]any
		}{
			{"same_body", minimalBody},
			{"other_body", func() map[string]any {
				b := minimalBody()
				b["tags"] = map[string]any{"team": "blue"}
				return b
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t)
				path := clusterPath("rg", "lost")
				rd := e.lostCreate(t, path, minimalBody(), nil, e.cs.setCreateErr)
				e.finish(rd.ActiveOperationID, armdoc.StateFailed, notKnown)

				again := e.put(path, tc.body())
				if again.code != 201 {
					t.Fatalf("PUT on the Failed resource: %d %s, want 201 (a create)", again.code, again.body)
				}
				opID := opIDFrom(t, again.header.Get("Azure-AsyncOperation"))
				op, _ := e.operation(opID)
				if op == nil || op.Request != armdoc.OperationCreate || op.Status.Terminal() {
					t.Fatalf("operation of the PUT: %+v, want a running Create", op)
				}
				creates, _, _ := e.cs.snapshot()
				if last := creates[len(creates)-1].GetCluster(); len(creates) != 2 || last.GetId() != rd.InternalID {
					t.Fatalf("CreateCluster calls %d (last for %q), want a second one for %q", len(creates), last.GetId(), rd.InternalID)
				}
				now, _ := e.resource(path)
				if now.ProvisioningState != armdoc.StateAccepted || now.ActiveOperationID != opID || now.InternalID != rd.InternalID {
					t.Fatalf("resource after the PUT: %+v", now)
				}
				e.finish(opID, armdoc.StateSucceeded, nil)
				if get := e.do("GET", path, nil, nil); get.code != 200 {
					t.Fatalf("GET after the create: %d %s", get.code, get.body)
				}
			})
		}
	})
	t.Run("cluster_service_has_it", func(t *testing.T) {
		e := newEnv(t)
		path := clusterPath("rg", "failed")
		created := e.put(path, minimalBody())
		e.finish(opIDFrom(t, created.header.Get("Azure-AsyncOperation")), armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "ProvisioningFailed", Message: "x"})
		again := e.put(path, minimalBody())
		if again.code != 200 {
			t.Fatalf("PUT on a Failed cluster Cluster Service holds: %d %s, want 200 (the update path)", again.code, again.body)
		}
		if creates, _, _ := e.cs.snapshot(); len(creates) != 1 {
			t.Fatalf("CreateCluster calls %d, want 1", len(creates))
		}
	})
	t.Run("node_pool", func(t *testing.T) {
		e, pools := newNodePoolEnv(t)
		e.readyCluster(t, "c1")
		path := poolPath("c1", "lost")
		rd := e.lostCreate(t, path, minimalPoolBody(), nil, pools.setCreateErr)
		e.finish(rd.ActiveOperationID, armdoc.StateFailed, notKnown)

		again := e.put(path, minimalPoolBody())
		if again.code != 201 {
			t.Fatalf("PUT on the Failed node pool: %d %s, want 201 (a create)", again.code, again.body)
		}
		if p := pools.pool(rd.InternalID); p == nil {
			t.Fatalf("Cluster Service has no node pool %s after the PUT", rd.InternalID)
		}
		op, _ := e.operation(opIDFrom(t, again.header.Get("Azure-AsyncOperation")))
		if op == nil || op.Request != armdoc.OperationCreate {
			t.Fatalf("operation of the PUT: %+v, want a Create", op)
		}
	})
}
