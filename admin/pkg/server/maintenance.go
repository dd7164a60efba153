package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore"
)

// The maintenance views read the backend's maintenance documents in the document store the
// admin API already reads (docs/maintenance.md). The maintenance documents are the maintenance
// service's: an SRE's create, resume or cancel of a campaign, create or cancel of a single task,
// and set or clear of a cluster's maintenance window is a *request* document, the one
// kind of document the admin API's store login may insert (row-level security, docs/security.md),
// which the maintenance service carries out and records the outcome in. The routes answer 202
// with the request; GET /admin/v1/maintenance/requests/{id} follows it.

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

// createCampaign serves POST /admin/v1/maintenance/campaigns.
func (s *Server) createCampaign(w http.ResponseWriter, r *http.Request) error {
	req, err := parseCampaignCreate(r)
	if err != nil {
		return err
	}
	return s.submitMaintenance(w, r, req)
}

// parseCampaignCreate reads the body of a campaign create into a request; a field the campaign
// cannot take is a 400 naming it (maintenance.CampaignSpec.Validate, the one check of a spec).
func parseCampaignCreate(r *http.Request) (*maintenance.Request, error) {
	var b adminapi.CampaignCreate
	if err := decodeStrict(r, &b); err != nil {
		return nil, err
	}
	spec := &maintenance.CampaignSpec{ID: b.ID, FromVersion: b.FromVersion, ChannelGroup: b.ChannelGroup, CanaryShard: b.CanaryShard,
		Target: b.Target, MaxInFlight: b.MaxInFlight, FailureThreshold: b.FailureThreshold}
	if b.Bake != "" {
		d, err := time.ParseDuration(b.Bake)
		if err != nil {
			return nil, badRequest("bake", "bake must be a duration such as 30m or 2h, got %q", truncate(b.Bake, 64))
		}
		spec.Bake = d
	}
	if err := fieldRefusal(spec.Validate()); err != nil {
		return nil, err
	}
	return &maintenance.Request{Action: maintenance.ActionCreateCampaign, Campaign: b.ID, Spec: spec}, nil
}

// fieldRefusal is a maintenance validation error as a 400 naming its field.
func fieldRefusal(err error) error {
	var fe *maintenance.FieldError
	if errors.As(err, &fe) {
		return badRequest(fe.Field, "%s", fe.Message)
	}
	return err
}

// changeCampaign serves POST /admin/v1/maintenance/campaigns/{id}/resume and .../cancel.
func (s *Server) changeCampaign(action maintenance.RequestAction) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := decodeReasonOnly(r); err != nil {
			return err
		}
		return s.submitMaintenance(w, r, &maintenance.Request{Action: action, Campaign: r.PathValue("id")})
	}
}

// createTask serves POST /admin/v1/maintenance/tasks: a single task of any type the maintenance
// service runs. An unknown type, or a parameter the type does not take, is a 400 naming it
// (Submit checks the request against maintenance.TaskTypes before it signs).
func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	req, err := parseTaskCreate(r, taskTypes())
	if err != nil {
		return err
	}
	return s.submitMaintenance(w, r, req)
}

// taskTypes are the task types the maintenance service runs, by name and parameters only.
func taskTypes() []maintenance.TaskType {
	return maintenance.TaskTypes(nil, maintenance.ZStreamConfig{}, maintenance.RegionCertConfig{})
}

// parseTaskCreate reads the body of a task create into a request; a type not in types, or a
// field the task cannot take, is a 400 naming it (Request.CheckAsked, the one check).
func parseTaskCreate(r *http.Request, types []maintenance.TaskType) (*maintenance.Request, error) {
	var b adminapi.TaskCreate
	if err := decodeStrict(r, &b); err != nil {
		return nil, err
	}
	req := &maintenance.Request{Action: maintenance.ActionCreateTask, Cluster: b.Cluster, Task: &maintenance.TaskSpec{Type: b.Type, Params: b.Params}}
	if err := fieldRefusal(req.CheckAsked(types)); err != nil {
		return nil, err
	}
	return req, nil
}

// cancelTask serves POST /admin/v1/maintenance/tasks/{id}/cancel.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request) error {
	if err := decodeReasonOnly(r); err != nil {
		return err
	}
	return s.submitMaintenance(w, r, &maintenance.Request{Action: maintenance.ActionCancelTask, TaskID: r.PathValue("id")})
}

// setWindow serves PUT /admin/v1/maintenance/windows/{cluster}; a window that never opens is a
// 400 naming the field (maintenance.ParseWindow, the one reader of a window as SREs write it).
func (s *Server) setWindow(w http.ResponseWriter, r *http.Request) error {
	req, err := parseWindowSet(r, r.PathValue("cluster"))
	if err != nil {
		return err
	}
	return s.submitMaintenance(w, r, req)
}

// parseWindowSet reads the body of a window set for cluster into a request; a refusal is a 400
// naming the field.
func parseWindowSet(r *http.Request, cluster string) (*maintenance.Request, error) {
	var b adminapi.WindowSet
	if err := decodeStrict(r, &b); err != nil {
		return nil, err
	}
	win, err := maintenance.ParseWindow(b.Days, b.Start, b.Length)
	if err != nil {
		return nil, fieldRefusal(err)
	}
	req := &maintenance.Request{Action: maintenance.ActionSetWindow, Cluster: cluster, Window: win}
	if err := fieldRefusal(req.CheckAsked(nil)); err != nil {
		return nil, err
	}
	return req, nil
}

// getWindow serves GET /admin/v1/maintenance/windows/{cluster}: the cluster's window, 404 when it
// has none (its tasks may start at any time outside blackouts).
func (s *Server) getWindow(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	cluster := r.PathValue("cluster")
	win, err := maintenance.NewWindows(s.cfg.Store, nil).Get(ctx, cluster)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "read the maintenance window of %s: %v", cluster, err)
	}
	if win == nil {
		return notFound(cluster, "cluster %s has no maintenance window: its tasks may start at any time outside region blackouts", cluster)
	}
	writeJSON(w, http.StatusOK, adminapi.WindowOf(cluster, win))
	return nil
}

// clearWindow serves DELETE /admin/v1/maintenance/windows/{cluster}.
func (s *Server) clearWindow(w http.ResponseWriter, r *http.Request) error {
	if err := decodeReasonOnly(r); err != nil {
		return err
	}
	return s.submitMaintenance(w, r, &maintenance.Request{Action: maintenance.ActionClearWindow, Cluster: r.PathValue("cluster")})
}

// decodeReasonOnly reads a body that holds the reason and nothing else.
func decodeReasonOnly(r *http.Request) error {
	var b struct {
		Reason string `json:"reason"`
	}
	return decodeStrict(r, &b)
}

// maintenanceRequests is the request store as the admin API uses it: it submits (signed, checked
// against the task types the maintenance service runs) and reads; it carries nothing out.
func (s *Server) maintenanceRequests() *maintenance.Requests {
	return maintenance.NewRequests(s.cfg.Store, nil, s.cfg.Now, s.cfg.Logger).SignWith(s.cfg.StatementKey).WithTypes(taskTypes())
}

// submitMaintenance stores req in the caller's name, as the middleware verified and audited it,
// and answers 202 with it. Its checks are the maintenance package's (a 400 names the field);
// what depends on the fleet and the campaign's state the maintenance service checks and records
// in the request.
func (s *Server) submitMaintenance(w http.ResponseWriter, r *http.Request, req *maintenance.Request) error {
	id := identityFrom(r.Context())
	req.RequestedBy, req.Group, req.Reason = id.Person, id.Group, auditReason(r)
	req.CorrelationID = w.Header().Get(adminapi.HeaderCorrelationID)
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	// The request is signed with the statement key, so the maintenance service takes the
	// person's name from the admin API's word, not from whoever can write the document.
	out, err := s.maintenanceRequests().Submit(ctx, req)
	if errors.Is(err, maintenance.ErrNoSigningKey) {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "maintenance writes need the admin API's statement key (--sre-statement-key)")
	}
	if err := fieldRefusal(err); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return ae
		}
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "store the maintenance request: %v", err)
	}
	w.Header().Set("Location", "/admin/v1/maintenance/requests/"+out.ID)
	writeJSON(w, http.StatusAccepted, out)
	return nil
}

// getMaintenanceRequest serves GET /admin/v1/maintenance/requests/{id}.
func (s *Server) getMaintenanceRequest(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	id := r.PathValue("id")
	out, err := maintenance.NewRequests(s.cfg.Store, nil, s.cfg.Now, s.cfg.Logger).Get(ctx, id)
	if errors.Is(err, docstore.ErrNotFound) {
		return notFound(id, "no maintenance request %s", id)
	}
	if err != nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "read maintenance request %s: %v", id, err)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listMaintenanceRequests serves GET /admin/v1/maintenance/requests.
func (s *Server) listMaintenanceRequests(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	rs, err := maintenance.NewRequests(s.cfg.Store, nil, s.cfg.Now, s.cfg.Logger).List(ctx)
	if err != nil {
		return errorf(http.StatusServiceUnavailable, adminapi.CodeUpstream, "", "list maintenance requests: %v", err)
	}
	if rs == nil {
		rs = []*maintenance.Request{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"requests": rs})
	return nil
}
