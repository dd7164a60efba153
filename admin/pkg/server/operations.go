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
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
)

// listOperations serves GET /admin/v1/operations?all=true&pageSize=&pageToken=: the region's
// operations across every subscription; by default the active (non-terminal) ones only, oldest
// first within a page, each with its age and what it waits on.
func (s *Server) listOperations(w http.ResponseWriter, r *http.Request) error {
	all, size, err := parseOperationsQuery(r)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	out, err := s.operations(ctx, all, size, r.URL.Query().Get("pageToken"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// parseOperationsQuery reads ?all= and ?pageSize= of the operations list; an error names the
// parameter.
func parseOperationsQuery(r *http.Request) (all bool, size int, err error) {
	if err := knownParams(r, "all", "pageSize", "pageToken"); err != nil {
		return false, 0, err
	}
	if v := r.URL.Query().Get("all"); v != "" {
		if all, err = strconv.ParseBool(v); err != nil {
			return false, 0, badRequest("all", "all must be true or false, got %q", v)
		}
	}
	if size, err = pageSize(r, 100, 1000); err != nil {
		return false, 0, err
	}
	return all, size, nil
}

// operations returns one page of the region's operations (active ones only unless all).
func (s *Server) operations(ctx context.Context, all bool, size int, token string) (adminapi.OperationList, error) {
	page, err := s.cfg.Store.Query(ctx, docstore.Query{Type: docstore.TypeOperation, Limit: size, Continuation: token})
	if errors.Is(err, docstore.ErrInvalidContinuation) {
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
		if !all && armdoc.ProvisioningState(op.Status).Terminal() {
			continue
		}
		if !armdoc.ProvisioningState(op.Status).Terminal() {
			op.WaitingOn = s.waitingOn(ctx, op)
		}
		out.Operations = append(out.Operations, op)
	}
	sort.SliceStable(out.Operations, func(i, j int) bool { return out.Operations[i].StartTime.Before(out.Operations[j].StartTime) })
	return out, nil
}

// waitingOn says which step an active operation waits on (waitStep), from Cluster Service's
// view of its resource: state, applied, message and the HyperShift conditions last reported.
func (s *Server) waitingOn(ctx context.Context, op adminapi.Operation) string {
	if op.InternalID == "" {
		return "Cluster Service: no internal ID recorded yet"
	}
	if c, err := s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: op.InternalID}); err == nil {
		st := c.GetStatus()
		return waitStep(progress{kind: "cluster", state: stateName(st.GetState().String()), applied: st.GetApplied(), message: st.GetMessage(),
			shard: c.GetShard(), conds: st.GetConditions()})
	}
	if np, err := s.cfg.NodePools.GetNodePool(ctx, &csv1.GetNodePoolRequest{Id: op.InternalID}); err == nil {
		st := np.GetStatus()
		return waitStep(progress{kind: "node pool", state: stateName(st.GetState().String()), applied: st.GetApplied(), message: st.GetMessage(),
			conds: st.GetConditions()})
	}
	return "Cluster Service: no cluster or node pool " + op.InternalID
}
