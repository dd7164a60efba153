package server

import (
	"context"
	"net/http"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// nodePoolUpgradeNotCancelable answers a cancel-upgrade of a node pool. A node-pool upgrade has
// no pending phase to cancel: Cluster Service writes the new release into the NodePool's spec
// at once (UpdateNodePool), and HyperShift starts replacing machines as soon as it sees it.
// Undoing that is not a cancel but a second rollout to the older release — a downgrade, which
// Cluster Service refuses for SREs as for customers. What an SRE can do is stop the rollout
// where it stands: pause the cluster (HyperShift's pausedUntil reaches every NodePool), look,
// and resume. The answer is a 409 that says so, naming the node pool and, when it is still
// rolling, the version it comes from.
func (s *Server) nodePoolUpgradeNotCancelable(ctx context.Context, id string) error {
	np, _, err := s.findNodePool(ctx, id)
	if err != nil {
		return err
	}
	want, have := np.GetSpec().GetVersionId(), np.GetStatus().GetCurrentVersion()
	if have == "" || have == want {
		return errorf(http.StatusConflict, adminapi.CodeNotCancelable, id,
			"node pool %s has no upgrade to cancel (it runs %s); cancel-upgrade cancels a cluster's control-plane upgrade that has not started", id, want)
	}
	return errorf(http.StatusConflict, adminapi.CodeNotCancelable, id,
		"node pool %s is rolling from %s to %s: a node-pool upgrade starts at once and cannot be canceled (going back to %s is a downgrade, refused); to stop the rollout where it stands, pause the cluster (hcpctl cluster pause <cluster ID>) and resume it later", id, have, want, have)
}

// cancelRefused is Cluster Service's refusal of a control-plane cancel: FailedPrecondition (the
// upgrade has started, or ended) is NotCancelable — retrying will not help — and every other
// refusal is what refused makes of it.
func cancelRefused(id string, err error) error {
	if status.Code(err) == codes.FailedPrecondition {
		return errorf(http.StatusConflict, adminapi.CodeNotCancelable, id,
			"cancel upgrade: %s; a started rollout is stopped where it stands by a pause (hcpctl cluster pause), not undone", status.Convert(err).Message())
	}
	return refused("cancel upgrade", id, false, err)
}
