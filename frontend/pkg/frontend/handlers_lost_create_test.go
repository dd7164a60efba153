package frontend

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// lostCreateKind is one resource kind as the lost-create tests drive it: a path under a ready
// cluster, a body, a second body that differs, and its fake Cluster Service's create calls.
type lostCreateKind struct {
	name string
	// setup returns the env, the resource's path, its body, another body, a way to fail (or, with
	// nil, to stop failing) the kind's CreateX, and the Cluster Service IDs CreateX got so far for
	// the path.
	setup func(t *testing.T) (e *env, path string, body, other map[string]any, failCreate func(error), creates func() []string)
}

var lostCreateKinds = []lostCreateKind{
	{name: "cluster", setup: func(t *testing.T) (*env, string, map[string]any, map[string]any, func(error), func() []string) {
		e := newEnv(t)
		path := clusterPath("rg", "lost")
		creates := func() []string {
			all, _, _ := e.cs.snapshot()
			var ids []string
			for _, c := range all {
				if c.GetCluster().GetArmResourceId() == path {
					ids = append(ids, c.GetCluster().GetId())
				}
			}
			return ids
		}
		return e, path, minimalBody(), set(minimalBody(), "tags", map[string]any{"team": "b"}), e.cs.setCreateErr, creates
	}},
	{name: "node_pool", setup: func(t *testing.T) (*env, string, map[string]any, map[string]any, func(error), func() []string) {
		e, fake := newNodePoolEnv(t)
		e.readyCluster(t, "c1")
		path := poolPath("c1", "np1")
		creates := func() []string {
			fake.mu.Lock()
			defer fake.mu.Unlock()
			var ids []string
			for _, c := range fake.creates {
				if c.GetNodePool().GetArmResourceId() == path {
					ids = append(ids, c.GetNodePool().GetId())
				}
			}
			return ids
		}
		fail := func(err error) { fake.mu.Lock(); fake.createErr = err; fake.mu.Unlock() }
		return e, path, minimalPoolBody(), set(minimalPoolBody(), "properties.replicas", 3), fail, creates
	}},
	{name: "external_auth", setup: func(t *testing.T) (*env, string, map[string]any, map[string]any, func(error), func() []string) {
		e, fake := newExternalAuthEnv(t)
		e.readyCluster(t, "c1")
		path := eaPath("c1", "ea1")
		creates := func() []string {
			all, _, _ := fake.calls()
			var ids []string
			for _, c := range all {
				if c.GetExternalAuth().GetArmResourceId() == path {
					ids = append(ids, c.GetExternalAuth().GetId())
				}
			}
			return ids
		}
		fail := func(err error) { fake.setErrs(err, nil, nil) }
		other := set(minimalExternalAuthBody(), "properties.claim.mappings.username.claim", "sub")
		return e, path, minimalExternalAuthBody(), other, fail, creates
	}},
}

// loseCreate PUTs body at path while the kind's CreateX fails without a definitive answer
// (503), so the create keeps its documents and its running operation, and returns the resource
// document; CreateX works again afterwards.
func loseCreate(t *testing.T, e *env, path string, body map[string]any, failCreate func(error)) *armdoc.ResourceDocument {
	t.Helper()
	failCreate(status.Error(codes.Unavailable, "connection refused"))
	first := e.put(path, body)
	failCreate(nil)
	if first.code != 503 {
		t.Fatalf("PUT while Cluster Service is unreachable = %d %s, want 503", first.code, first.body)
	}
	lost, _ := e.resource(path)
	if lost == nil || lost.ActiveOperationID == "" {
		t.Fatalf("the unclear create left no documents: %+v", lost)
	}
	return lost
}

// TestPutAfterLostCreateCreatesAgain: a create whose Cluster Service call failed without a
// definitive answer keeps its documents; when no retry comes, the backend fails it (Cluster
// Service does not know the resource). A PUT then, with the same body or another, is a create
// again: a new Create operation, CreateX with the stored Cluster Service ID and the PUT's body,
// and the resource follows it to Succeeded. Before, the same body answered 200 Failed without
// any Cluster Service call, and another body an update of what Cluster Service never had.
func TestPutAfterLostCreateCreatesAgain(t *testing.T) {
	for _, k := range lostCreateKinds {
		for _, again := range []string{"same_body", "other_body"} {
			t.Run(k.name+"/"+again, func(t *testing.T) {
				e, path, body, other, failCreate, creates := k.setup(t)
				lost := loseCreate(t, e, path, body, failCreate)
				// The backend, past its grace for a create Cluster Service does not know.
				e.finish(lost.ActiveOperationID, armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "InternalServerError", Message: "no longer known to the service"})

				sent := body
				if again == "other_body" {
					sent = other
				}
				resp := e.put(path, sent)
				if resp.code != 201 {
					t.Fatalf("PUT after the lost create = %d %s, want 201 (a create again)", resp.code, resp.body)
				}
				async := resp.header.Get("Azure-AsyncOperation")
				if async == "" {
					t.Fatalf("no Azure-AsyncOperation: %v", resp.header)
				}
				opID := opIDFrom(t, async)
				if opID == lost.ActiveOperationID {
					t.Fatal("the create again points at the failed operation")
				}
				if ids := creates(); len(ids) != 2 || ids[1] != lost.InternalID {
					t.Fatalf("CreateX IDs for the resource %v; want a second call with the stored ID %s", ids, lost.InternalID)
				}
				op, _ := e.operation(opID)
				rd, _ := e.resource(path)
				if op == nil || op.Request != armdoc.OperationCreate || op.Status != armdoc.StateAccepted || op.InternalID != lost.InternalID {
					t.Fatalf("new operation %+v", op)
				}
				if rd.ProvisioningState != armdoc.StateAccepted || rd.ActiveOperationID != opID || rd.InternalID != lost.InternalID {
					t.Fatalf("resource after the create again %+v", rd)
				}
				if props := resp.json(t)["properties"].(map[string]any); props["provisioningState"] != "Accepted" {
					t.Fatalf("answer's provisioningState %v, want Accepted", props["provisioningState"])
				}
				e.finish(opID, armdoc.StateSucceeded, nil)
				if got := e.do("GET", path, nil, nil); got.code != 200 || got.json(t)["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
					t.Fatalf("GET after the create again: %d %s", got.code, got.body)
				}
			})
		}
	}
}

// TestPutOnFailedResourceClusterServiceKnowsIsNotACreate: a resource that Cluster Service has
// (its create reached it, then failed there) is written as before: the same body answers 200
// Failed without another create call.
func TestPutOnFailedResourceClusterServiceKnowsIsNotACreate(t *testing.T) {
	for _, k := range lostCreateKinds {
		t.Run(k.name, func(t *testing.T) {
			e, path, body, _, _, creates := k.setup(t)
			first := e.put(path, body)
			if first.code != 201 {
				t.Fatalf("PUT = %d %s", first.code, first.body)
			}
			e.finish(opIDFrom(t, first.header.Get("Azure-AsyncOperation")), armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "ProvisioningFailed", Message: "failed"})
			resp := e.put(path, body)
			if resp.code != 200 {
				t.Fatalf("PUT on the failed resource = %d %s, want 200", resp.code, resp.body)
			}
			if props := resp.json(t)["properties"].(map[string]any); props["provisioningState"] != "Failed" {
				t.Fatalf("provisioningState %v, want Failed", props["provisioningState"])
			}
			if ids := creates(); len(ids) != 1 {
				t.Fatalf("CreateX calls for the resource %v; want only the first", ids)
			}
		})
	}
}

// TestLostCreateRefusedAgainRestoresTheFailedResource: when Cluster Service refuses the create
// again definitively (a 400 naming the field), the create again is taken back: the resource
// document is the Failed one it replaced, and the new operation is gone.
func TestLostCreateRefusedAgainRestoresTheFailedResource(t *testing.T) {
	for _, k := range lostCreateKinds {
		t.Run(k.name, func(t *testing.T) {
			e, path, body, _, failCreate, creates := k.setup(t)
			lost := loseCreate(t, e, path, body, failCreate)
			e.finish(lost.ActiveOperationID, armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "InternalServerError", Message: "no longer known to the service"})
			failed, failedDoc := e.resource(path)

			failCreate(status.Error(codes.InvalidArgument, "refused"))
			resp := e.put(path, body)
			failCreate(nil)
			if resp.code != 400 {
				t.Fatalf("PUT refused by Cluster Service = %d %s, want 400", resp.code, resp.body)
			}
			if ids := creates(); len(ids) != 2 || ids[1] != lost.InternalID {
				t.Fatalf("CreateX IDs for the resource %v; want a second call with the stored ID %s", ids, lost.InternalID)
			}
			rd, doc := e.resource(path)
			if rd == nil || rd.ProvisioningState != armdoc.StateFailed || rd.ActiveOperationID != "" || string(doc.Body) != string(failedDoc.Body) {
				t.Fatalf("resource after the refused create again: %+v, want the Failed one restored %+v", rd, failed)
			}
			// Only the first create's operation is left for the resource: the refused one's is gone.
			page, err := e.store.Query(context.Background(), docstore.Query{Partition: doc.PartitionKey, Type: docstore.TypeOperation, Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			var createOps []string
			for _, d := range page.Documents {
				var op armdoc.OperationDocument
				if err := json.Unmarshal(d.Body, &op); err != nil {
					t.Fatal(err)
				}
				if op.ExternalID == path && op.Request == armdoc.OperationCreate {
					createOps = append(createOps, op.ID)
				}
			}
			if len(createOps) != 1 || createOps[0] != lost.ActiveOperationID {
				t.Fatalf("create operations of the resource %v, want only the first %s", createOps, lost.ActiveOperationID)
			}
		})
	}
}

// TestPutOnFailedClusterWhileClusterServiceCannotSayAsksAgain: when Cluster Service cannot say
// whether it knows a Failed cluster, a PUT is neither a create again nor a write of the document
// alone: it is the 503 of the unanswered call, and nothing is written, so the client's retry
// decides once Cluster Service answers.
func TestPutOnFailedClusterWhileClusterServiceCannotSayAsksAgain(t *testing.T) {
	e, path, body, _, failCreate, creates := lostCreateKinds[0].setup(t)
	failCreate(status.Error(codes.Unavailable, "connection refused"))
	if first := e.put(path, body); first.code != 503 {
		t.Fatalf("PUT while Cluster Service is unreachable = %d %s, want 503", first.code, first.body)
	}
	failCreate(nil)
	lost, _ := e.resource(path)
	e.finish(lost.ActiveOperationID, armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "InternalServerError", Message: "no longer known to the service"})
	_, before := e.resource(path)

	e.cs.setStatusErr(status.Error(codes.Unavailable, "connection refused"))
	resp := e.put(path, set(body, "tags", map[string]any{"a": "b"}))
	e.cs.setStatusErr(nil)
	if resp.code != 503 {
		t.Fatalf("PUT while Cluster Service cannot answer = %d %s, want 503", resp.code, resp.body)
	}
	if _, after := e.resource(path); after.ETag != before.ETag {
		t.Fatal("the PUT wrote the resource without Cluster Service's answer")
	}
	if ids := creates(); len(ids) != 1 {
		t.Fatalf("CreateCluster calls %v, want only the first", ids)
	}
}

// TestCreateRetryTooLateIsNotSentToClusterService: a client's retry of a create whose answer was
// lost joins the running Create operation; it asks Cluster Service again only while that call
// would end within the backend's grace (armdoc.NotFoundGrace from the operation's start). A call
// sent later could land after the backend failed the create for Cluster Service not knowing it:
// a DELETE meanwhile then ended leaving an object no document names, and a PUT meanwhile created
// it again under the same ID with another body, which Cluster Service answered with the object
// the late call made. The late retry is answered with the operation, without a call. The call
// must end resendMargin before the grace (the backend's clock is not the frontend's); a retry
// well before that is sent (the control).
func TestCreateRetryTooLateIsNotSentToClusterService(t *testing.T) {
	for _, k := range lostCreateKinds {
		for _, age := range []struct {
			name string
			age  func(timeout time.Duration) time.Duration // the operation's age at the retry
			sent bool
		}{
			// Written in seconds, not from resendMargin, so that the margin cannot shrink
			// unseen: a call ending 10 s before the grace is too late, one ending a minute
			// before is not.
			{"well_within_the_grace", func(timeout time.Duration) time.Duration {
				return armdoc.NotFoundGrace - timeout - time.Minute
			}, true},
			{"its_call_ending_10s_before_the_grace", func(timeout time.Duration) time.Duration {
				return armdoc.NotFoundGrace - timeout - 10*time.Second
			}, false},
			{"its_call_ending_after_the_grace", func(timeout time.Duration) time.Duration {
				return armdoc.NotFoundGrace - timeout/2
			}, false},
		} {
			t.Run(k.name+"/"+age.name, func(t *testing.T) {
				lateCreateRetry(t, k, age.age, age.sent)
			})
		}
	}
}

// lateCreateRetry loses a create of kind k, ages its operation by age, retries the PUT and checks
// it joins the operation, calling Cluster Service again only if sent.
func lateCreateRetry(t *testing.T, k lostCreateKind, age func(timeout time.Duration) time.Duration, sent bool) {
	t.Helper()
	e, path, body, _, failCreate, creates := k.setup(t)
	lost := loseCreate(t, e, path, body, failCreate)
	op, opDoc := e.operation(lost.ActiveOperationID)
	op.StartTime = time.Now().UTC().Add(-age(e.srv.cfg.ClusterServiceTimeout))
	if _, err := e.store.Transact(context.Background(), opDoc.PartitionKey,
		[]docstore.TxOp{{Kind: docstore.TxReplace, Doc: mustWithBody(opDoc, op), IfMatch: opDoc.ETag}}); err != nil {
		t.Fatal(err)
	}
	before := len(creates())
	resp := e.put(path, body)
	if resp.code != 201 {
		t.Fatalf("the retry of the create = %d %s, want 201 (the running create)", resp.code, resp.body)
	}
	if got := opIDFrom(t, resp.header.Get("Azure-AsyncOperation")); got != lost.ActiveOperationID {
		t.Fatalf("the retry points at operation %s, want the running create %s", got, lost.ActiveOperationID)
	}
	if after := len(creates()); (after != before) != sent {
		t.Fatalf("the retry sent the create to Cluster Service: %v, want %v (%d calls, %d before)", after != before, sent, after, before)
	}
}
