package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/internal/api"
	"github.com/openhcp/openhcp/internal/store"
)

// listOperations serves GET /admin/v1/operations?all=true&pageSize=&pageToken=: the region's
// operations across every subscription; by default the active (non-terminal) ones only, oldest
// first within a page, each with its age and what it waits on.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r, "all", "pageSize", "pageToken"); err != nil {
		return err
	}
	q := r.URL.Query()
	all := false
	if v := q.Get("all"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return badRequest("all", "all must be true or false, got %q", v)
		}
		all = b
	}
	size, err := pageSize(r, 100, 1000)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	out, err := s.operations(ctx, all, size, q.Get("pageToken"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// operations returns one page of the region's operations (active ones only unless all).
func (s *Server) operations(ctx context.Context, all bool, size int, token string) (adminapi.OperationList, error) {
	page, err := s.cfg.Store.Query(ctx, store.Query{Type: store.TypeOperation, Limit: size, Continuation: token})
	if errors.Is(err, store.ErrInvalidContinuation) {
		return adminapi.OperationList{}, badRequest("pageToken", "pageToken was not issued by this API")
	}
	if err != nil {
		return adminapi.OperationList{}, fmt.Errorf("query operations: %w", err)
	}
	out := adminapi.OperationList{Operations: []adminapi.Operation{}, NextPageToken: page.Continuation}
	for _, d := range page.Documents {
		op, err := s.operation(d)
		if err != nil {
			return adminapi.OperationList{}, err
		}
		if !all && api.ProvisioningState(op.Status).Terminal() {
			continue
		}
		if !api.ProvisioningState(op.Status).Terminal() {
			op.WaitingOn = s.waitingOn(ctx, op)
		}
		out.Operations = append(out.Operations, op)
	}
	sort.SliceStable(out.Operations, func(i, j int) bool { return out.Operations[i].StartTime.Before(out.Operations[j].StartTime) })
	return out, nil
}

// waitingOn says which step an active operation waits on, from Cluster Service's view of its
// resource (a cluster's or a node pool's state and message).
func (s *Server) waitingOn(ctx context.Context, op adminapi.Operation) string {
	if op.InternalID == "" {
		return "Cluster Service: no internal ID recorded yet"
	}
	if c, err := s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: op.InternalID}); err == nil {
		return fmt.Sprintf("Cluster Service: cluster %s (applied=%t) %s", stateName(c.GetStatus().GetState().String()), c.GetStatus().GetApplied(), c.GetStatus().GetMessage())
	}
	if np, err := s.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: op.InternalID}); err == nil {
		return fmt.Sprintf("Cluster Service: node pool %s (applied=%t) %s", stateName(np.GetStatus().GetState().String()), np.GetStatus().GetApplied(), np.GetStatus().GetMessage())
	}
	return "Cluster Service: no cluster or node pool " + op.InternalID
}
