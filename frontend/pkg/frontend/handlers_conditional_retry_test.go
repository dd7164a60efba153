package frontend

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/armdoc"
)

// TestConditionalPutRetriedAfterA5xxJoinsItsOperation: a PUT with If-None-Match: * or If-Match
// whose write was made but whose Cluster Service call ended without an answer is answered 5xx,
// and the client (ARM, the SDK) sends it again with the same headers. Its own write changed
// what the headers are checked against, so the retry must join the operation it started, not
// be refused 412; a different body, or another caller, still gets the 412.
func TestConditionalPutRetriedAfterA5xxJoinsItsOperation(t *testing.T) {
	unavailable := status.Error(codes.Unavailable, "cluster service is restarting")
	const caller = "00000000-0000-0000-0000-00000000cafe"
	createOnly := map[string]string{"If-None-Match": "*", "x-ms-client-object-id": caller}
	t.Run("cluster_create_only", func(t *testing.T) {
		for _, tc := range []struct {
			name     string
			body     func() map[string]any
			header   map[string]string
			wantCode int
		}{
			{"same_request", minimalBody, createOnly, 201},
			{"other_body", func() map[string]any {
				b := minimalBody()
				b["tags"] = map[string]any{"team": "blue"}
				return b
			}, createOnly, 412},
			{"other_caller", minimalBody, map[string]string{"If-None-Match": "*", "x-ms-client-object-id": "00000000-0000-0000-0000-00000000beef"}, 412},
		} {
			t.Run(tc.name, func(t *testing.T) {
				e := newEnv(t)
				path := clusterPath("rg", "cond")
				rd := e.lostCreate(t, path, minimalBody(), createOnly, e.cs.setCreateErr)
				retry := e.do("PUT", path, mustJSON(tc.body()), tc.header)
				if retry.code != tc.wantCode {
					t.Fatalf("retry: %d %s, want %d", retry.code, retry.body, tc.wantCode)
				}
				if tc.wantCode == 201 {
					if got := opIDFrom(t, retry.header.Get("Azure-AsyncOperation")); got != rd.ActiveOperationID {
						t.Fatalf("retry points at operation %s, want its first attempt's %s", got, rd.ActiveOperationID)
					}
					if creates, _, _ := e.cs.snapshot(); creates[len(creates)-1].GetCluster().GetId() != rd.InternalID {
						t.Fatalf("the retry's CreateCluster was not for %s", rd.InternalID)
					}
				}
			})
		}
	})
	t.Run("node_pool_create_only", func(t *testing.T) {
		e, pools := newNodePoolEnv(t)
		e.readyCluster(t, "c1")
		path := poolPath("c1", "cond")
		rd := e.lostCreate(t, path, minimalPoolBody(), createOnly, pools.setCreateErr)
		retry := e.do("PUT", path, mustJSON(minimalPoolBody()), createOnly)
		if retry.code != 201 || opIDFrom(t, retry.header.Get("Azure-AsyncOperation")) != rd.ActiveOperationID {
			t.Fatalf("retry: %d %s, want 201 with operation %s", retry.code, retry.body, rd.ActiveOperationID)
		}
		if pools.pool(rd.InternalID) == nil {
			t.Fatalf("Cluster Service has no node pool %s after the retry", rd.InternalID)
		}
	})
	t.Run("external_auth_if_match", func(t *testing.T) {
		e, fake := newExternalAuthEnv(t)
		e.readyCluster(t, "c1")
		e.readyExternalAuth(t, "c1", "ea1", minimalExternalAuthBody())
		path := eaPath("c1", "ea1")
		_, doc := e.resource(path)
		ifMatch := map[string]string{"If-Match": quoteETag(doc.ETag)}
		body := minimalExternalAuthBody()
		body["properties"].(map[string]any)["issuer"].(map[string]any)["audiences"] = []any{"aud-2"}

		fake.mu.Lock()
		fake.updateErr = unavailable
		fake.mu.Unlock()
		if first := e.do("PUT", path, mustJSON(body), ifMatch); first.code != 503 {
			t.Fatalf("update with Cluster Service unavailable: %d %s, want 503", first.code, first.body)
		}
		fake.mu.Lock()
		fake.updateErr = nil
		fake.mu.Unlock()
		rd, _ := e.resource(path)
		retry := e.do("PUT", path, mustJSON(body), ifMatch)
		if retry.code != 200 || opIDFrom(t, retry.header.Get("Azure-AsyncOperation")) != rd.ActiveOperationID {
			t.Fatalf("retry: %d %s, want 200 with operation %s", retry.code, retry.body, rd.ActiveOperationID)
		}
		if op, _ := e.operation(rd.ActiveOperationID); op == nil || op.InternalRevision == 0 {
			t.Fatalf("the retry did not record Cluster Service's revision on its operation: %+v", op)
		}
		stale := e.do("PUT", path, mustJSON(minimalExternalAuthBody()), ifMatch)
		if stale.code != 412 {
			t.Fatalf("another body with the stale If-Match: %d %s, want 412", stale.code, stale.body)
		}
	})
}

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
