package frontend

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// readyAtSpec plays Cluster Service having rolled out the cluster's spec: READY, observed at its
// spec revision.
func (f *unavailableClusterUpdates) readyAtSpec(csID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[csID]
	c.Status.State, c.Status.ObservedRevision = csv1.ClusterState_CLUSTER_STATE_READY, c.GetSpecRevision()
}

// notRecorded is the error the backend fails an update with when Cluster Service's answer was
// never recorded in it (backend/pkg/controller), after its grace.
var notRecorded = &armdoc.CloudErrorBody{Code: armdoc.CodeUpdateNotRecorded,
	Message: "The update was not confirmed by the service within 2m0s; it may or may not have been applied. Send the same request again."}

// TestClusterWriteAfterUnconfirmedUpdateSendsWhatClusterServiceLacks: a cluster PUT or PATCH
// whose UpdateCluster answer is lost (503), and whose operation the backend then fails
// UpdateNotRecorded, leaves a resource document that holds the new spec. Sending the same
// request again, as the error says, is compared with what Cluster Service holds, not with that
// document: when the lost call never reached Cluster Service the change is sent under a new
// Update operation that records the revision the backend ends it on; when Cluster Service took
// it, nothing is sent again: the new operation and the resource end Succeeded at once when
// Cluster Service reports the cluster READY at the revision that holds it, and otherwise the
// operation waits for that revision like any configuration change.
// (Before, the retry matched the document, made no Cluster Service call and left the resource
// Failed, with a spec Cluster Service may not hold.)
func TestClusterWriteAfterUnconfirmedUpdateSendsWhatClusterServiceLacks(t *testing.T) {
	path := clusterPath("rg", "c1")
	put := mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60))
	patch := []byte(`{"properties":{"nodeDrainTimeoutMinutes":60}}`)
	for _, tc := range []struct {
		name      string
		method    string
		body      []byte
		wantCode  int
		taken     bool // the lost call reached Cluster Service, which applied it
		ready     bool // and Cluster Service reports the cluster READY at the revision that holds it
		wantSends int  // UpdateCluster calls of the retry
	}{
		{name: "put_never_reached", method: "PUT", body: put, wantCode: 200, wantSends: 1},
		{name: "patch_never_reached", method: "PATCH", body: patch, wantCode: 202, wantSends: 1},
		{name: "put_taken", method: "PUT", body: put, wantCode: 200, taken: true, ready: true},
		{name: "patch_taken", method: "PATCH", body: patch, wantCode: 202, taken: true, ready: true},
		{name: "put_taken_still_rolling_out", method: "PUT", body: put, wantCode: 200, taken: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, _ := clusterRetryEnv(t)
			if tc.taken {
				fake.loseAnswers.Store(1)
			} else {
				fake.failUpdates.Store(1)
			}
			if first := e.do(tc.method, path, tc.body, nil); first.code != 503 {
				t.Fatalf("%s whose answer is lost: %d %s, want 503", tc.method, first.code, first.body)
			}
			rd, _ := e.resource(path)
			lost := rd.ActiveOperationID
			e.finish(lost, armdoc.StateFailed, notRecorded)
			fake.mu.Lock()
			revBefore := fake.clusters[rd.InternalID].GetSpecRevision()
			fake.mu.Unlock()
			if tc.ready {
				fake.readyAtSpec(rd.InternalID)
			}
			sentBefore := len(fake.sent())

			retry := e.do(tc.method, path, tc.body, nil)
			if retry.code != tc.wantCode {
				t.Fatalf("the same %s after UpdateNotRecorded: %d %s, want %d", tc.method, retry.code, retry.body, tc.wantCode)
			}
			opID := opIDFrom(t, retry.header.Get("Azure-AsyncOperation"))
			if opID == lost {
				t.Fatalf("retry points at the failed operation %s, want a new one", lost)
			}
			sent := fake.sent()[sentBefore:]
			if len(sent) != tc.wantSends {
				t.Fatalf("%d UpdateCluster calls for the retry, want %d: %v", len(sent), tc.wantSends, sent)
			}
			if tc.wantSends > 0 && (sent[0].GetOperationId() != opID || sent[0].GetUpdate().GetNodeDrainTimeoutMinutes() != 60) {
				t.Fatalf("UpdateCluster sent %v; want nodeDrainTimeoutMinutes 60 for operation %s", sent[0], opID)
			}
			fake.mu.Lock()
			held := fake.clusters[rd.InternalID].GetSpec().GetNodeDrainTimeoutMinutes()
			specRevision := fake.clusters[rd.InternalID].GetSpecRevision()
			fake.mu.Unlock()
			if held != 60 {
				t.Fatalf("Cluster Service holds nodeDrainTimeoutMinutes %d, want 60", held)
			}
			op, _ := e.operation(opID)
			rd, _ = e.resource(path)
			if tc.taken && specRevision != revBefore {
				t.Fatalf("Cluster Service's spec revision went from %d to %d: a second change for one it held", revBefore, specRevision)
			}
			if tc.ready {
				if op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
					t.Fatalf("after the retry: operation %s, resource %s (active %q); want both Succeeded", op.Status, rd.ProvisioningState, rd.ActiveOperationID)
				}
				return
			}
			// The revision recorded is what the backend ends the operation on (READY observed at
			// or after it), as for any update.
			if op.Request != armdoc.OperationUpdate || op.Status.Terminal() || op.InternalRevision == 0 || op.InternalRevision != specRevision {
				t.Fatalf("operation after the retry: %+v, want a running update at revision %d", op, specRevision)
			}
			if rd.ProvisioningState != armdoc.StateUpdating || rd.ActiveOperationID != opID {
				t.Fatalf("resource after the retry: %s (active %q), want Updating under %s", rd.ProvisioningState, rd.ActiveOperationID, opID)
			}
		})
	}
}

// TestNodePoolPutAfterUnconfirmedUpdateSendsItAgain: a node-pool PUT whose update answer is lost
// and whose operation then fails UpdateNotRecorded is, sent again, a new Update operation that
// sends the full update (Cluster Service merges it): Cluster Service holds the change, and the
// operation records the spec revision that holds it. When Cluster Service had taken it, that is
// the revision it already held (no second change), which a READY status has observed, so the
// backend ends the operation Succeeded. A failure for another reason (Cluster Service reported
// the update failed) is not taken for an unconfirmed one: the same PUT stays a write of the
// document only.
func TestNodePoolPutAfterUnconfirmedUpdateSendsItAgain(t *testing.T) {
	for _, tc := range []struct {
		name     string
		taken    bool
		failure  *armdoc.CloudErrorBody
		wantSent bool
	}{
		{name: "never_reached", failure: notRecorded, wantSent: true},
		{name: "taken", taken: true, failure: notRecorded, wantSent: true},
		{name: "failed_in_cluster_service", taken: true, failure: &armdoc.CloudErrorBody{Code: "UpdateFailed", Message: "The node pool reported a failure."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, fake, csID, path := poolRetryEnv(t)
			scaled := set(minimalPoolBody(), "properties.replicas", 3)

			if tc.taken {
				fake.loseAnswers.Store(1)
			} else {
				fake.failUpdates.Store(1)
			}
			if first := e.put(path, scaled); first.code != 503 {
				t.Fatalf("PUT whose answer is lost: %d %s, want 503", first.code, first.body)
			}
			rd, _ := e.resource(path)
			lost := rd.ActiveOperationID
			e.finish(lost, armdoc.StateFailed, tc.failure)
			revBefore := fake.pool(csID).GetSpecRevision()
			fake.mu.Lock()
			calls := len(fake.updates)
			fake.mu.Unlock()

			retry := e.put(path, scaled)
			if retry.code != 200 {
				t.Fatalf("the same PUT after the failure: %d %s, want 200", retry.code, retry.body)
			}
			fake.mu.Lock()
			sent := fake.updates[calls:]
			fake.mu.Unlock()
			rd, _ = e.resource(path)
			if !tc.wantSent {
				if len(sent) != 0 || rd.ProvisioningState != armdoc.StateFailed {
					t.Fatalf("%d updates sent, resource %s; want none and the resource still Failed", len(sent), rd.ProvisioningState)
				}
				return
			}
			if len(sent) != 1 || sent[0].GetUpdate().GetReplicas() != 3 {
				t.Fatalf("updates sent for the retry: %v, want one with replicas 3", sent)
			}
			opID := opIDFrom(t, retry.header.Get("Azure-AsyncOperation"))
			p := fake.pool(csID)
			if opID == lost || rd.ActiveOperationID != opID || rd.ProvisioningState != armdoc.StateUpdating {
				t.Fatalf("resource after the retry: %s (active %q), want Updating under a new operation (not %s)", rd.ProvisioningState, rd.ActiveOperationID, lost)
			}
			if p.GetSpec().GetReplicas() != 3 {
				t.Fatalf("Cluster Service holds replicas %d, want 3", p.GetSpec().GetReplicas())
			}
			if tc.taken && p.GetSpecRevision() != revBefore {
				t.Fatalf("spec revision went from %d to %d: a second change for one Cluster Service held", revBefore, p.GetSpecRevision())
			}
			if op, _ := e.operation(opID); op.InternalRevision == 0 || op.InternalRevision != p.GetSpecRevision() || op.Status.Terminal() {
				t.Fatalf("operation after the retry: %+v, want revision %d recorded", op, p.GetSpecRevision())
			}
		})
	}
}

// TestSendingAgainAfterTheEndedMeanwhileConflictSucceeds: a retry that re-sends an unconfirmed
// cluster update while the backend fails its operation UpdateNotRecorded is a 409 naming that
// operation (TestClusterRetryDoesNotReviveAnUpdateThatEndedMeanwhile), although Cluster Service
// took the change. The request sent once more then finds Cluster Service holding it, rolled out:
// nothing is sent again, and a new operation and the resource end Succeeded at once (before, it
// made no call and the resource stayed Failed).
func TestSendingAgainAfterTheEndedMeanwhileConflictSucceeds(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path := clusterPath("rg", "c1")
	body := mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60))
	pending := fake.lostWrite(t, e, "PUT", path, body, false)

	hookErr := make(chan error, 1)
	fake.mu.Lock()
	fake.beforeUpdateAnswer = func(*csv1.UpdateClusterRequest) {
		fake.mu.Lock()
		fake.beforeUpdateAnswer = nil
		fake.mu.Unlock()
		// The backend, meanwhile: the grace has passed. It writes the operation and the
		// resource in one transaction (backend/pkg/controller).
		op, opDoc := e.operation(pending)
		res, resDoc := e.resource(path)
		now := time.Now().UTC()
		op.Status, op.EndTime, op.LastTransitionTime, op.Error = armdoc.StateFailed, &now, now, notRecorded
		res.ProvisioningState, res.ActiveOperationID = armdoc.StateFailed, ""
		_, err := e.store.Transact(context.Background(), opDoc.PartitionKey, []docstore.TxOp{
			{Kind: docstore.TxReplace, Doc: mustWithBody(opDoc, op), IfMatch: opDoc.ETag},
			{Kind: docstore.TxReplace, Doc: mustWithBody(resDoc, res), IfMatch: resDoc.ETag},
		})
		hookErr <- err
	}
	fake.mu.Unlock()
	if retry := e.do("PUT", path, body, nil); retry.code != 409 {
		t.Fatalf("retry while the backend failed the update: %d %s, want 409", retry.code, retry.body)
	}
	if err := <-hookErr; err != nil {
		t.Fatalf("fail the operation as the backend does: %v", err)
	}
	sent := len(fake.sent())
	rd, _ := e.resource(path)
	fake.readyAtSpec(rd.InternalID)

	again := e.do("PUT", path, body, nil)
	if again.code != 200 {
		t.Fatalf("the same PUT after the 409: %d %s, want 200", again.code, again.body)
	}
	opID := opIDFrom(t, again.header.Get("Azure-AsyncOperation"))
	if n := len(fake.sent()) - sent; n != 0 {
		t.Fatalf("%d UpdateCluster calls for a change Cluster Service holds, want 0", n)
	}
	op, _ := e.operation(opID)
	rd, _ = e.resource(path)
	if opID == pending || op.Status != armdoc.StateSucceeded || rd.ProvisioningState != armdoc.StateSucceeded || rd.ActiveOperationID != "" {
		t.Fatalf("after sending again: operation %s %s, resource %s (active %q); want a new operation and the resource Succeeded",
			opID, op.Status, rd.ProvisioningState, rd.ActiveOperationID)
	}
}

// TestExternalAuthPatchAfterUnconfirmedUpdateSendsItAgain: the same rule for an external auth
// PATCH, whose update is otherwise only what the patch changes: after UpdateNotRecorded the same
// PATCH (which changes nothing in the document) sends the full update under a new operation, and
// Cluster Service holds the change.
func TestExternalAuthPatchAfterUnconfirmedUpdateSendsItAgain(t *testing.T) {
	e, fake := newExternalAuthEnv(t)
	e.readyCluster(t, "c1")
	csID := e.readyExternalAuth(t, "c1", "ea1", minimalExternalAuthBody())
	path := eaPath("c1", "ea1")
	body := []byte(`{"properties":{"issuer":{"audiences":["aud-2"]}}}`)

	fake.mu.Lock()
	fake.updateErr = status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: connect: connection refused\"")
	fake.mu.Unlock()
	if first := e.do("PATCH", path, body, nil); first.code != 503 {
		t.Fatalf("PATCH while Cluster Service is unreachable: %d %s, want 503", first.code, first.body)
	}
	fake.mu.Lock()
	fake.updateErr = nil
	calls := len(fake.updates)
	fake.mu.Unlock()
	rd, _ := e.resource(path)
	lost := rd.ActiveOperationID
	e.finish(lost, armdoc.StateFailed, notRecorded)

	retry := e.do("PATCH", path, body, nil)
	if retry.code != 202 {
		t.Fatalf("the same PATCH after UpdateNotRecorded: %d %s, want 202", retry.code, retry.body)
	}
	opID := opIDFrom(t, retry.header.Get("Azure-AsyncOperation"))
	fake.mu.Lock()
	sent := fake.updates[calls:]
	held := proto.Clone(fake.auths[csID]).(*csv1.ExternalAuth)
	fake.mu.Unlock()
	if len(sent) != 1 || !slices.Equal(sent[0].GetUpdate().GetIssuer().GetAudiences(), []string{"aud-2"}) {
		t.Fatalf("updates sent for the retry: %v, want one with the audiences", sent)
	}
	if got := held.GetSpec().GetIssuer().GetAudiences(); !slices.Equal(got, []string{"aud-2"}) {
		t.Fatalf("Cluster Service holds audiences %v, want [aud-2]", got)
	}
	op, _ := e.operation(opID)
	rd, _ = e.resource(path)
	if opID == lost || rd.ActiveOperationID != opID || op.InternalRevision != held.GetSpecRevision() || op.Status.Terminal() {
		t.Fatalf("after the retry: operation %s %+v, resource active %q; want a new running operation at revision %d",
			opID, op, rd.ActiveOperationID, held.GetSpecRevision())
	}
}

// clusterAt419 creates cluster name on 4.19.16 and ends its create: Cluster Service's ID.
func clusterAt419(t *testing.T, e *env, name string) (path, csID string) {
	t.Helper()
	path = clusterPath("rg", name)
	resp := e.put(path, set(minimalBody(), "properties.version.id", "4.19.16"))
	if resp.code != 201 {
		t.Fatalf("create: %d %s", resp.code, resp.body)
	}
	e.finish(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")), armdoc.StateSucceeded, nil)
	rd, _ := e.resource(path)
	return path, rd.InternalID
}

// TestUnconfirmedUpdateSentAgainLeavesWhatClusterServiceMovedAlone: Cluster Service's spec may
// differ from the resource document for reasons of its own (a maintenance z-stream upgrade moved
// the version to 4.19.17; the document still says 4.19.16). Sending the same PATCH again after
// UpdateNotRecorded sends what the lost update and the request name (the drain timeout), not the
// document's version, which Cluster Service would refuse as a downgrade. Before, the whole
// difference from Cluster Service's spec was sent: a 400 "cannot downgrade", and the resource
// stayed Failed whatever was sent.
func TestUnconfirmedUpdateSentAgainLeavesWhatClusterServiceMovedAlone(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path, csID := clusterAt419(t, e, "c2")
	fake.mu.Lock()
	fake.clusters[csID].Spec.VersionId = "4.19.17"
	fake.mu.Unlock()
	p := withVersion(path, "2026-06-30-preview")
	body := []byte(`{"properties":{"nodeDrainTimeoutMinutes":60}}`)
	e.finish(fake.lostWrite(t, e, "PATCH", p, body, false), armdoc.StateFailed, notRecorded)
	sentBefore := len(fake.sent())
	r := e.do("PATCH", p, body, nil)
	if r.code != 202 {
		t.Fatalf("the same PATCH after UpdateNotRecorded: %d %s, want 202", r.code, r.body)
	}
	sent := fake.sent()[sentBefore:]
	if len(sent) != 1 || sent[0].GetUpdate().GetVersionId() != "" || sent[0].GetUpdate().GetNodeDrainTimeoutMinutes() != 60 {
		t.Fatalf("UpdateCluster calls %v; want one with nodeDrainTimeoutMinutes 60 and no version", sent)
	}
	fake.mu.Lock()
	spec := fake.clusters[csID].GetSpec()
	fake.mu.Unlock()
	if spec.GetVersionId() != "4.19.17" || spec.GetNodeDrainTimeoutMinutes() != 60 {
		t.Fatalf("Cluster Service holds version %s, drain %d; want 4.19.17 and 60", spec.GetVersionId(), spec.GetNodeDrainTimeoutMinutes())
	}
}

// TestUnconfirmedUpgradeSentAgainWhileItRunsIsAConflict: the lost update was a version change
// that Cluster Service took (its upgrade policy runs, STARTED: the spec already names the new
// version); sending it again must not be reported done while that upgrade runs. It is a 409 naming
// the version, with no new operation. Before, the version resolved to the one in the spec, the
// update ended at once and the operation and resource were Succeeded while the upgrade ran.
func TestUnconfirmedUpgradeSentAgainWhileItRunsIsAConflict(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path, csID := clusterAt419(t, e, "c2")
	p := withVersion(path, "2026-06-30-preview")
	body := []byte(`{"properties":{"version":{"id":"4.20"}}}`)
	lost := fake.lostWrite(t, e, "PATCH", p, body, true)
	e.finish(lost, armdoc.StateFailed, notRecorded)
	fake.mu.Lock()
	c := fake.clusters[csID]
	if c.Status.GetUpgrade().GetOperationId() != lost {
		fake.mu.Unlock()
		t.Fatalf("no upgrade policy under the lost operation %s: %v", lost, c.Status.GetUpgrade())
	}
	c.Spec.VersionId = c.Status.Upgrade.ToVersion
	c.Status.Upgrade.State = csv1.UpgradePolicyState_UPGRADE_POLICY_STATE_STARTED
	c.Status.State = csv1.ClusterState_CLUSTER_STATE_UPDATING
	fake.mu.Unlock()
	r := e.do("PATCH", p, body, nil)
	if r.code != 409 || !strings.Contains(string(r.body), "properties.version.id") || r.header.Get("Azure-AsyncOperation") != "" {
		t.Fatalf("the same PATCH while the upgrade runs: %d %s (Azure-AsyncOperation %q), want 409 naming properties.version.id and no operation",
			r.code, r.body, r.header.Get("Azure-AsyncOperation"))
	}
	rd, _ := e.resource(path)
	if rd.ProvisioningState != armdoc.StateFailed || rd.ActiveOperationID != "" {
		t.Fatalf("resource after the 409: %s (active %q), want Failed as it was", rd.ProvisioningState, rd.ActiveOperationID)
	}
}

// TestRetryOfAnEmptyUpdateWaitsForTheRollout: after UpdateNotRecorded, a write of what Cluster
// Service already took (still rolling out) is an update with nothing to send, which waits for
// the revision that holds it. When that operation's revision was never recorded (the frontend
// stopped) and the caller retries, the retry reads Cluster Service again and the operation still
// waits for the rollout. Before, it ended Succeeded at once with the cluster not READY.
func TestRetryOfAnEmptyUpdateWaitsForTheRollout(t *testing.T) {
	e, fake, _ := clusterRetryEnv(t)
	path := clusterPath("rg", "c1")
	put := mustJSON(set(minimalBody(), "properties.nodeDrainTimeoutMinutes", 60))
	e.finish(fake.lostWrite(t, e, "PUT", path, put, true), armdoc.StateFailed, notRecorded)
	r := e.do("PUT", path, put, nil)
	if r.code != 200 {
		t.Fatalf("the same PUT after UpdateNotRecorded: %d %s, want 200", r.code, r.body)
	}
	b := opIDFrom(t, r.header.Get("Azure-AsyncOperation"))
	op, opDoc := e.operation(b)
	op.InternalRevision = 0 // the frontend stopped before recording it
	if _, err := e.store.Replace(context.Background(), mustWithBody(opDoc, op), opDoc.ETag); err != nil {
		t.Fatal(err)
	}
	if r = e.do("PUT", path, put, nil); r.code != 200 || opIDFrom(t, r.header.Get("Azure-AsyncOperation")) != b {
		t.Fatalf("retry: %d %s, want 200 pointing at %s", r.code, r.body, b)
	}
	op, _ = e.operation(b)
	rd, _ := e.resource(path)
	fake.mu.Lock()
	st, rev := fake.clusters[rd.InternalID].Status.State, fake.clusters[rd.InternalID].GetSpecRevision()
	fake.mu.Unlock()
	if st == csv1.ClusterState_CLUSTER_STATE_READY {
		t.Fatalf("the fake reports READY; the test needs a rollout in progress")
	}
	if op.Status.Terminal() || op.InternalRevision != rev {
		t.Fatalf("operation after the retry: %s at revision %d, want running, waiting for revision %d", op.Status, op.InternalRevision, rev)
	}
}
