package server

import (
	"context"
	"net/http"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// The maintenance views read the backend's maintenance documents in the document store the
// admin API already reads (docs/maintenance.md). They only read: the maintenance documents are
// the maintenance service's, and the admin API's store login may not insert (it may update
// existing documents for day-2 changes only), so creating, resuming or cancelling a campaign is
// not an admin route yet.

// listMaintenanceTasks serves GET /admin/v1/maintenance/tasks.
func (s *Server) listMaintenanceTasks(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	ts, err := maintenance.NewTasks(s.cfg.Store).List(ctx)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "list maintenance tasks: %v", err)
	}
	if ts == nil {
		ts = []*maintenance.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": ts})
	return nil
}

// listCampaigns serves GET /admin/v1/maintenance/campaigns.
func (s *Server) listCampaigns(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cs, err := maintenance.NewCampaigns(maintenance.NewTasks(s.cfg.Store), nil, s.cfg.Now).List(ctx)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "list maintenance campaigns: %v", err)
	}
	if cs == nil {
		cs = []*maintenance.Campaign{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"campaigns": cs})
	return nil
}
