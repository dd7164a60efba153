package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/protobuf/proto"
	workv1 "open-cluster-management.io/api/work/v1"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/maestro"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/cluster-service/pkg/store"
)

// A work Maestro refuses as invalid (maestro.RefusedError: over the ManifestWork validator's
// 500 KiB, say) is refused again on every apply until its spec changes, and the work Maestro
// holds stays the one applied before. Retrying it with the reconcile backoff left its cluster
// or node pool UPDATING for ever and the customer's operation waiting for its deadline.
// Instead the reconcile that sees the refusal writes ERROR ErrorCodeWorkRefused, remembers the
// refused work's spec hash (refused), and applies nothing while the work built has that hash:
// each later reconcile keeps the ERROR, and only a new spec (a new hash) is sent. The client
// validates in this process, so the same work gets the same answer until a restart forgets
// the hash and sends it once more. The statuses are not derived from Maestro's work meanwhile:
// its feedback is that of the old spec.

// ErrorCodeWorkRefused is the code for an object whose work Maestro refused as invalid.
const ErrorCodeWorkRefused = "ManifestWorkRefused"

// refusedWork is what a reconcile remembers of a refused work: its spec hash and the message
// its status carries.
type refusedWork struct {
	hash, message string
}

// refusedMessage is what the status of the noun ("cluster", "node pool") whose work Maestro
// refused tells the customer: what happened and what to change (reduce, the spec's fields
// that make a work large).
//
// The message is the customer's: it names no internal part. A refusal for size is the
// customer's to mend (the spec's large fields make the work large); any other refusal is of
// manifests Cluster Service itself built, which no change of the customer's mends, so it says
// so, and the validator's words go to the log only (applyOrRefused).
func refusedMessage(noun, reduce string, work *workv1.ManifestWork) string {
	if n := manifests.ManifestsSize(work); n > manifests.ManifestsLimit {
		return fmt.Sprintf("The configuration cannot be applied: the %s's configuration would take %d bytes once deployed, over the limit of %d. Reduce %s.",
			noun, n, manifests.ManifestsLimit, reduce)
	}
	return fmt.Sprintf("The configuration cannot be applied: the service could not deploy the %s's configuration. This is a service error; contact support.", noun)
}

// refusedFor is the refusal remembered for key when the work built now has hash; nil when
// there is none, or it was of another spec.
func (c *Controller) refusedFor(key, hash string) *refusedWork {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.refused[key]
	if !ok {
		return nil
	}
	if r.hash != hash {
		delete(c.refused, key)
		return nil
	}
	return &r
}

// applyOrRefused applies work for key (hash, its spec hash) unless it is the work Maestro last
// refused for key. It returns the refusal (nil when the work was applied) with the message
// built for noun, or the apply's other error to retry with backoff.
func (c *Controller) applyOrRefused(ctx context.Context, log *slog.Logger, key, shard, hash, noun, reduce string, work *workv1.ManifestWork) (*refusedWork, error) {
	if r := c.refusedFor(key, hash); r != nil {
		return r, nil
	}
	err := c.works.Apply(ctx, shard, work)
	var re *maestro.RefusedError
	if !errors.As(err, &re) {
		return nil, err
	}
	r := refusedWork{hash: hash, message: refusedMessage(noun, reduce, work)}
	c.mu.Lock()
	c.refused[key] = r
	c.mu.Unlock()
	log.Warn("maestro refused the work; it is not sent again until its spec changes",
		"work", work.Name, "size", manifests.ManifestsSize(work), "reason", re.Reason, "error", err)
	return &r, nil
}

// writeClusterRefused writes ERROR ErrorCodeWorkRefused with r's message on cluster cl, the
// rest of its status as stored. Its external auth (ea, nil if none) travels in the refused
// work: one not READY (its change waits for this work, and an operation on it with it) turns
// ERROR with the same code and message; a READY one keeps its status, since what it reports
// is still what the management cluster runs. A deleting one is not in the work.
func (c *Controller) writeClusterRefused(ctx context.Context, log *slog.Logger, cl *store.Cluster, ea *store.ExternalAuth, r *refusedWork) error {
	st := &csv1.ClusterStatus{}
	if cl.Status != nil {
		st = proto.Clone(cl.Status).(*csv1.ClusterStatus)
	}
	st.State, st.ErrorCode, st.Message = csv1.ClusterState_CLUSTER_STATE_ERROR, ErrorCodeWorkRefused, r.message
	if _, err := c.writeStatus(ctx, cl, st); err != nil {
		return err
	}
	if ea == nil || ea.Deleting || ea.Status.GetState() == csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_READY {
		return nil
	}
	est := &csv1.ExternalAuthStatus{}
	if ea.Status != nil {
		est = proto.Clone(ea.Status).(*csv1.ExternalAuthStatus)
	}
	est.State, est.ErrorCode, est.Message = csv1.ExternalAuthState_EXTERNAL_AUTH_STATE_ERROR, ErrorCodeWorkRefused, r.message
	if proto.Equal(ea.Status, est) {
		return nil
	}
	out, err := c.st.ExternalAuths().UpdateStatus(ctx, ea.ID, ea.Revision, est)
	if err != nil {
		return fmt.Errorf("write status of external auth %s: %w", ea.ID, err)
	}
	log.Info("external auth status changed", "externalAuthID", ea.ID, "state", est.State.String(), "from", ea.Status.GetState().String(),
		"error_code", est.ErrorCode, "revision", out.Revision)
	return nil
}

// writeNodePoolRefused writes ERROR ErrorCodeWorkRefused with r's message on node pool np, the
// rest of its status as stored.
func (c *Controller) writeNodePoolRefused(ctx context.Context, np *store.NodePool, r *refusedWork) error {
	st := &csv1.NodePoolStatus{}
	if np.Status != nil {
		st = proto.Clone(np.Status).(*csv1.NodePoolStatus)
	}
	st.State, st.ErrorCode, st.Message = csv1.NodePoolState_NODE_POOL_STATE_ERROR, ErrorCodeWorkRefused, r.message
	_, err := c.writeNodePoolStatus(ctx, np, st)
	return err
}
