package operations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/store"
)

// External auth operations are documents like a node pool's, on the resource
// …/hcpOpenShiftClusters/{c}/externalAuths/{n}, with the Cluster Service external auth ID as
// InternalID. They are observed through GetExternalAuth and WatchExternalAuths and end by
// mapExternalAuth. A finished cluster delete removes their documents (childResourceDeletes).

// isExternalAuth reports whether an ARM resource ID (any casing) names an external auth.
func isExternalAuth(rid string) bool {
	rid = strings.ToLower(rid)
	i := strings.Index(rid, "/providers/")
	if i < 0 {
		return false
	}
	parts := strings.Split(strings.Trim(rid[i+len("/providers/"):], "/"), "/")
	return len(parts) == 5 && parts[0]+"/"+parts[1] == clusterType && parts[3] == "externalauths"
}

func (c *Controller) observeExternalAuth(ctx context.Context, op *api.OperationDocument) (observation, error) {
	if c.cfg.ExternalAuths == nil {
		return observation{}, fmt.Errorf("external auth operation %s: the backend has no Cluster Service external auth client", op.ID)
	}
	ea, err := c.cfg.ExternalAuths.GetExternalAuth(ctx, &csv1.GetExternalAuthRequest{Id: op.InternalID})
	if status.Code(err) == codes.NotFound {
		ea, err = nil, nil
	}
	if err != nil {
		return observation{}, fmt.Errorf("get external auth %s from cluster service: %w", op.InternalID, err)
	}
	return observation{out: mapExternalAuth(op, ea), known: ea != nil, updated: ea.GetUpdateTime()}, nil
}

// mapExternalAuth derives the outcome of op from the external auth's Cluster Service state
// (docs/cluster-service.md, "External auth states"): PENDING → Accepted, INSTALLING →
// Provisioning, UPDATING → Updating, READY → Succeeded, ERROR → Failed, UNINSTALLING → Deleting
// (or Canceled for a create or update it interrupts). A nil external auth is unknown to Cluster
// Service: a finished delete, or a create or update that can no longer finish.
func mapExternalAuth(op *api.OperationDocument, ea *csv1.ExternalAuth) outcome {
	if op.Request == api.OperationDelete {
		if ea == nil {
			return outcome{status: api.StateSucceeded, gone: true}
		}
		return outcome{status: api.StateDeleting}
	}
	if ea == nil {
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{
			Code:    "InternalServerError",
			Message: fmt.Sprintf("The external auth %s is no longer known to the service.", op.ExternalID),
		}}
	}
	st := ea.GetStatus()
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY:
		// Cluster Service sets UPDATING in the same write as a new spec, so a READY read after
		// the update was accepted (and at or after its revision) is about the new spec.
		if op.Request == api.OperationUpdate && ea.GetRevision() < op.InternalRevision {
			return outcome{status: api.StateUpdating}
		}
		return outcome{status: api.StateSucceeded}
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR:
		code := st.GetErrorCode()
		if code == "" {
			code = "ProvisioningFailed"
		}
		msg := st.GetMessage()
		if msg == "" {
			msg = "The external auth could not be applied."
		}
		return outcome{status: api.StateFailed, err: &api.CloudErrorBody{Code: code, Message: msg}}
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNINSTALLING:
		return outcome{status: api.StateCanceled, err: &api.CloudErrorBody{
			Code:    "Canceled",
			Message: "The operation was canceled because the external auth, or its cluster, is being deleted.",
		}}
	}
	if op.Request == api.OperationUpdate {
		return outcome{status: api.StateUpdating}
	}
	switch st.GetState() {
	case csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_PENDING, csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_UNSPECIFIED:
		return outcome{status: api.StateAccepted}
	}
	return outcome{status: api.StateProvisioning}
}

// followExternalAuths follows Cluster Service's external auth watch as followClusters follows
// clusters: it enqueues the operations of every external auth that changed, reconnects from the
// last revision it saw, and starts over from 0 when that revision is compacted away.
func (c *Controller) followExternalAuths(ctx context.Context) {
	if c.cfg.ExternalAuths == nil {
		return
	}
	var since int64
	backoff := 500 * time.Millisecond
	for ctx.Err() == nil {
		stream, err := c.cfg.ExternalAuths.WatchExternalAuths(ctx, &csv1.WatchExternalAuthsRequest{SinceRevision: since})
		if err == nil {
			for {
				ev, rerr := stream.Recv()
				if rerr != nil {
					err = rerr
					break
				}
				backoff = 500 * time.Millisecond
				since = max(since, ev.GetRevision())
				if id := ev.GetExternalAuth().GetId(); id != "" {
					for _, k := range c.opsForCluster(id) {
						c.queue.add(k)
					}
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.OutOfRange {
			since = 0
		}
		if err != io.EOF {
			c.log.Warn("external auth watch broken; reconnecting", "since", since, "error", err, "backoff", backoff)
		}
		sleep(ctx, backoff)
		backoff = min(backoff*2, 10*time.Second)
	}
}

// cascadeExternalAuth handles an external auth of a Deleted subscription: it goes with its
// cluster (Cluster Service removes it with the cluster, and the cluster's finished delete removes
// its document). One whose cluster document is already gone is removed at once. It reports
// whether the external auth is still there.
func (c *Controller) cascadeExternalAuth(ctx context.Context, d *store.Document) (bool, error) {
	parent := d.ResourceID[:strings.LastIndex(strings.TrimSuffix(d.ResourceID, "/"), "/externalauths/")]
	_, err := c.store.Get(ctx, d.PartitionKey, parent)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("get cluster %s of external auth %s: %w", parent, d.ID, err)
	}
	wctx, cancel, err := c.guard(ctx)
	defer cancel()
	if err != nil {
		return false, err
	}
	if err := c.store.Delete(wctx, d.PartitionKey, d.ID, d.ETag); err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, fmt.Errorf("remove external auth %s of a deleted cluster: %w", d.ID, err)
	}
	var rd api.ResourceDocument
	_ = json.Unmarshal(d.Body, &rd)
	c.log.Info("removed external auth whose cluster is gone", "resource", rd.ResourceID)
	return false, nil
}
