package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// CampaignCreate is the body of POST /admin/v1/maintenance/campaigns: a z-stream upgrade
// campaign as maintenance.CampaignSpec holds it, its bake a Go duration ("30m"), and the reason.
// Target is "clusters" (control planes, the default) or "nodepools".
type CampaignCreate struct {
	Reason           string   `json:"reason"`
	ID               string   `json:"id"`
	FromVersion      string   `json:"fromVersion"`
	ChannelGroup     string   `json:"channelGroup"`
	CanaryShard      string   `json:"canaryShard,omitempty"`
	Target           string   `json:"target,omitempty"`
	MaxInFlight      int      `json:"maxInFlight,omitempty"`
	Bake             string   `json:"bake,omitempty"`
	FailureThreshold *float64 `json:"failureThreshold,omitempty"`
}

// MaintenanceRequest is an SRE's write to maintenance as the maintenance service carries it
// out: Pending, then Done or Failed (with the reason in Message).
type MaintenanceRequest = maintenance.Request

// MaintenanceRequests is GET /admin/v1/maintenance/requests.
type MaintenanceRequests struct {
	Requests []MaintenanceRequest `json:"requests"`
}

// CreateCampaign asks for a campaign; the answer is the pending request.
func (c *Client) CreateCampaign(ctx context.Context, req CampaignCreate) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodPost, "/admin/v1/maintenance/campaigns", nil, nil, req, &out)
}

// ChangeCampaign asks to resume or cancel campaign id (action "resume" or "cancel").
func (c *Client) ChangeCampaign(ctx context.Context, id, action, reason string) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodPost, "/admin/v1/maintenance/campaigns/"+url.PathEscape(id)+"/"+url.PathEscape(action), nil, nil,
		map[string]string{"reason": reason}, &out)
}

// GetMaintenanceRequest reads one request.
func (c *Client) GetMaintenanceRequest(ctx context.Context, id string) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodGet, "/admin/v1/maintenance/requests/"+url.PathEscape(id), nil, nil, nil, &out)
}

// ListMaintenanceRequests returns every request, oldest first.
func (c *Client) ListMaintenanceRequests(ctx context.Context) (MaintenanceRequests, error) {
	var out MaintenanceRequests
	return out, c.do(ctx, http.MethodGet, "/admin/v1/maintenance/requests", nil, nil, nil, &out)
}

// TaskCreate is the body of POST /admin/v1/maintenance/tasks: a single task of any type the
// maintenance service runs (maintenance.TaskTypes) on a cluster, its parameters, and the reason.
type TaskCreate struct {
	Reason  string            `json:"reason"`
	Type    string            `json:"type"`
	Cluster string            `json:"cluster"`
	Params  map[string]string `json:"params,omitempty"`
}

// WindowSet is the body of PUT /admin/v1/maintenance/windows/{cluster}: the days it opens on
// ("Sat", "Sun"; none: every day), its start "HH:MM" UTC, its length a duration ("4h"), and the
// reason (maintenance.ParseWindow reads it).
type WindowSet struct {
	Reason string   `json:"reason"`
	Days   []string `json:"days,omitempty"`
	Start  string   `json:"start"`
	Length string   `json:"length"`
}

// Window is GET /admin/v1/maintenance/windows/{cluster}: the window as WindowSet writes it, and
// in words.
type Window struct {
	Cluster     string   `json:"cluster"`
	Days        []string `json:"days,omitempty"`
	Start       string   `json:"start"`
	Length      string   `json:"length"`
	Description string   `json:"description"`
}

// WindowOf is cluster's window win as the admin API shows it.
func WindowOf(cluster string, win *maintenance.Window) Window {
	out := Window{Cluster: cluster, Start: fmt.Sprintf("%02d:%02d", int(win.Start.Hours()), int(win.Start.Minutes())%60),
		Length: win.Length.String(), Description: win.String()}
	for _, d := range win.Days {
		out.Days = append(out.Days, d.String()[:3])
	}
	return out
}

// GetWindow reads cluster's maintenance window (a 404 when it has none).
func (c *Client) GetWindow(ctx context.Context, cluster string) (Window, error) {
	var out Window
	return out, c.do(ctx, http.MethodGet, "/admin/v1/maintenance/windows/"+url.PathEscape(cluster), nil, nil, nil, &out)
}

// CreateTask asks for a single task; the answer is the pending request (its taskId is the
// task's ID).
func (c *Client) CreateTask(ctx context.Context, req TaskCreate) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodPost, "/admin/v1/maintenance/tasks", nil, nil, req, &out)
}

// CancelTask asks to cancel task id.
func (c *Client) CancelTask(ctx context.Context, id, reason string) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodPost, "/admin/v1/maintenance/tasks/"+url.PathEscape(id)+"/cancel", nil, nil,
		map[string]string{"reason": reason}, &out)
}

// SetWindow asks to set cluster's maintenance window.
func (c *Client) SetWindow(ctx context.Context, cluster string, req WindowSet) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodPut, "/admin/v1/maintenance/windows/"+url.PathEscape(cluster), nil, nil, req, &out)
}

// ClearWindow asks to remove cluster's maintenance window.
func (c *Client) ClearWindow(ctx context.Context, cluster, reason string) (MaintenanceRequest, error) {
	var out MaintenanceRequest
	return out, c.do(ctx, http.MethodDelete, "/admin/v1/maintenance/windows/"+url.PathEscape(cluster), nil, nil,
		map[string]string{"reason": reason}, &out)
}
