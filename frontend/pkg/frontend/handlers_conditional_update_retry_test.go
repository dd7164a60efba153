package frontend

import (
	"maps"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/arm"
)

// TestConditionalPutRetriedAfterUnclearAnswerJoinsItsOperation: a conditional PUT (or PATCH)
// whose write was recorded but whose Cluster Service call failed without a definitive answer
// (503, the documents kept) is retried by its client as it was sent, with the same
// precondition. The retry of the same body from the same caller joins the operation the first
// attempt started, though the stored resource no longer meets the precondition (it exists, for
// If-None-Match: *; its ETag changed, for the If-Match the client read before). A different
// body, or a precondition the resource did not meet before the first attempt either, is still
// a 412. On the old code every retry here was a 412.
func TestConditionalPutRetriedAfterUnclearAnswerJoinsItsOperation(t *testing.T) {
	caller := map[string]string{arm.HeaderClientObjectID: "00000000-0000-0000-0000-00000000000a"}
	with := func(h map[string]string) map[string]string {
		out := maps.Clone(caller)
		maps.Copy(out, h)
		return out
	}
	inm := with(map[string]string{arm.HeaderIfNoneMatch: "*"})
	for _, tc := range []struct {
		name string
		// first sends the first attempt (Cluster Service unreachable for it) and returns the
		// path, the bodies and the precondition headers of the retries.
		first    func(t *testing.T) (e *env, path string, body, other []byte, pre, wrong map[string]string)
		method   string // "" is PUT
		wantCode int
	}{
		{name: "cluster_create_if-none-match", wantCode: 201, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e := newEnv(t)
			path := clusterPath("rg", "inm")
			e.cs.setCreateErr(status.Error(codes.Unavailable, "connection refused"))
			resp := e.do("PUT", path, mustJSON(minimalBody()), inm)
			e.cs.setCreateErr(nil)
			if resp.code != 503 {
				t.Fatalf("first attempt %d %s, want 503", resp.code, resp.body)
			}
			return e, path, mustJSON(minimalBody()), mustJSON(set(minimalBody(), "tags", map[string]any{"a": "b"})), inm, nil
		}},
		{name: "node_pool_create_if-none-match", wantCode: 201, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e, fake := newNodePoolEnv(t)
			e.readyCluster(t, "c1")
			path := poolPath("c1", "np1")
			fake.mu.Lock()
			fake.createErr = status.Error(codes.Unavailable, "connection refused")
			fake.mu.Unlock()
			resp := e.do("PUT", path, mustJSON(minimalPoolBody()), inm)
			fake.mu.Lock()
			fake.createErr = nil
			fake.mu.Unlock()
			if resp.code != 503 {
				t.Fatalf("first attempt %d %s, want 503", resp.code, resp.body)
			}
			return e, path, mustJSON(minimalPoolBody()), mustJSON(set(minimalPoolBody(), "properties.replicas", 3)), inm, nil
		}},
		{name: "cluster_update_if-match", wantCode: 200, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e, fake, _ := clusterRetryEnv(t)
			path := clusterPath("rg", "c1")
			_, doc := e.resource(path)
			im := with(map[string]string{arm.HeaderIfMatch: quoteETag(doc.ETag)})
			fake.failUpdates.Store(1)
			body := mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60))
			e.unconfirmedAfter503(t, "PUT", e.do("PUT", path, body, im), path)
			return e, path, body, mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 90)), im,
				with(map[string]string{arm.HeaderIfMatch: `"not-an-etag-it-ever-had"`})
		}},
		{name: "node_pool_update_if-match", wantCode: 200, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e, fake, _, path := poolRetryEnv(t)
			_, doc := e.resource(path)
			im := with(map[string]string{arm.HeaderIfMatch: quoteETag(doc.ETag)})
			fake.failUpdates.Store(1)
			body := mustJSON(set(minimalPoolBody(), "properties.replicas", 4))
			e.unconfirmedAfter503(t, "PUT", e.do("PUT", path, body, im), path)
			return e, path, body, mustJSON(set(minimalPoolBody(), "properties.replicas", 5)), im,
				with(map[string]string{arm.HeaderIfMatch: `"not-an-etag-it-ever-had"`})
		}},
		{name: "cluster_patch_if-match", method: "PATCH", wantCode: 202, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e, fake, _ := clusterRetryEnv(t)
			path := clusterPath("rg", "c1")
			_, doc := e.resource(path)
			im := with(map[string]string{arm.HeaderIfMatch: quoteETag(doc.ETag)})
			fake.failUpdates.Store(1)
			body := []byte(`{"properties":{"nodeDrainTimeoutMinutes":60}}`)
			e.unconfirmedAfter503(t, "PATCH", e.do("PATCH", path, body, im), path)
			return e, path, body, []byte(`{"properties":{"nodeDrainTimeoutMinutes":90}}`), im,
				with(map[string]string{arm.HeaderIfMatch: `"not-an-etag-it-ever-had"`})
		}},
		{name: "node_pool_patch_if-match", method: "PATCH", wantCode: 202, first: func(t *testing.T) (*env, string, []byte, []byte, map[string]string, map[string]string) {
			e, fake, _, path := poolRetryEnv(t)
			_, doc := e.resource(path)
			im := with(map[string]string{arm.HeaderIfMatch: quoteETag(doc.ETag)})
			fake.failUpdates.Store(1)
			body := []byte(`{"properties":{"replicas":4}}`)
			e.unconfirmedAfter503(t, "PATCH", e.do("PATCH", path, body, im), path)
			return e, path, body, []byte(`{"properties":{"replicas":5}}`), im,
				with(map[string]string{arm.HeaderIfMatch: `"not-an-etag-it-ever-had"`})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "PUT"
			}
			e, path, body, other, pre, wrong := tc.first(t)
			rd, _ := e.resource(path)
			pending := rd.ActiveOperationID
			if resp := e.do(method, path, other, pre); resp.code != 412 {
				t.Fatalf("a different body with the same precondition: %d %s, want 412", resp.code, resp.body)
			}
			if wrong != nil {
				if resp := e.do(method, path, body, wrong); resp.code != 412 {
					t.Fatalf("the same body with an ETag the resource never had: %d %s, want 412", resp.code, resp.body)
				}
			}
			retry := e.do(method, path, body, pre)
			if retry.code != tc.wantCode {
				t.Fatalf("retry of the same conditional %s: %d %s, want %d", method, retry.code, retry.body, tc.wantCode)
			}
			if got := opIDFrom(t, retry.header.Get("Azure-AsyncOperation")); got != pending {
				t.Fatalf("retry points at operation %s, want the first attempt's %s", got, pending)
			}
		})
	}
}
