package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore"
)

// The maintenance views read and change the backend's maintenance documents in the document
// store the admin API already reads (docs/maintenance.md); campaigns are created elsewhere.

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

// changeCampaign serves POST /admin/v1/maintenance/campaigns/{id}/resume and .../cancel; the
// middleware has checked and audited the body's reason.
func (s *Server) changeCampaign(resume bool) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := knownParams(r); err != nil {
			return err
		}
		var body struct {
			Reason string `json:"reason"`
		}
		if err := decodeStrict(r, &body); err != nil {
			return err
		}
		id := r.PathValue("id")
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		m := maintenance.NewCampaigns(maintenance.NewTasks(s.cfg.Store), nil, s.cfg.Now)
		by := identityFrom(r.Context()).Person + ": " + body.Reason
		var c *maintenance.Campaign
		var err error
		if resume {
			c, err = m.Resume(ctx, id, by)
		} else {
			c, err = m.Cancel(ctx, id, by)
		}
		switch {
		case errors.Is(err, docstore.ErrNotFound):
			return notFound(id, "no maintenance campaign %s", id)
		case errors.Is(err, maintenance.ErrCampaignState):
			return errorf(http.StatusConflict, adminapi.CodeBusy, id, "%v", err)
		case err != nil:
			return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, id, "change campaign %s: %v", id, err)
		}
		writeJSON(w, http.StatusOK, c)
		return nil
	}
}
