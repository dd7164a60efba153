package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/access"
	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// routes is the admin API. docs/sre.md lists every route; TestRoutesAreDocumented keeps the
// two equal.
func (s *Server) routes() []route {
	return []route{
		{pattern: "GET /admin/v1/clusters", perm: access.ReadClusters, handle: s.listClusters},
		{pattern: "GET /admin/v1/clusters/{id...}", perm: access.ReadClusters, target: pathValue("id"), handle: s.describeCluster},
		{pattern: "GET /admin/v1/must-gather/{id...}", perm: access.MustGather, target: pathValue("id"), handle: s.mustGather},
		{pattern: "GET /admin/v1/operations", perm: access.ReadOperations, handle: s.listOperations},
		{pattern: "GET /admin/v1/shards", perm: access.ReadShards, handle: s.listShards},
		{pattern: "POST /admin/v1/shards/{name}/cordon", perm: access.WriteShards, target: pathValue("name"), mutates: true, handle: s.changeShard(shardCordon)},
		{pattern: "POST /admin/v1/shards/{name}/uncordon", perm: access.WriteShards, target: pathValue("name"), mutates: true, handle: s.changeShard(shardUncordon)},
		{pattern: "PUT /admin/v1/shards/{name}/status", perm: access.WriteShards, target: pathValue("name"), mutates: true, handle: s.changeShard(shardSetStatus)},
		{pattern: "GET /admin/v1/shards/{name}/drain-status", perm: access.ReadShards, target: pathValue("name"), handle: s.drainStatus},
		// Day-2 changes of a customer's cluster or node pool (dayops.go).
		{pattern: "POST /admin/v1/scale/{id...}", perm: access.WriteClusters, target: pathValue("id"), mutates: true, handle: s.scaleNodePool},
		{pattern: "POST /admin/v1/upgrade/{id...}", perm: access.WriteClusters, target: pathValue("id"), mutates: true, handle: s.upgrade},
		{pattern: "POST /admin/v1/cancel-upgrade/{id...}", perm: access.WriteClusters, target: pathValue("id"), mutates: true, handle: s.cancelUpgrade},
		{pattern: "POST /admin/v1/pause/{id...}", perm: access.WriteClusters, target: pathValue("id"), mutates: true, handle: s.pauseCluster(false)},
		{pattern: "POST /admin/v1/resume/{id...}", perm: access.WriteClusters, target: pathValue("id"), mutates: true, handle: s.pauseCluster(true)},
		// Maintenance tasks and campaigns (maintenance.go, docs/maintenance.md).
		{pattern: "GET /admin/v1/maintenance/tasks", perm: access.ReadClusters, handle: s.listMaintenanceTasks},
		{pattern: "GET /admin/v1/maintenance/campaigns", perm: access.ReadClusters, handle: s.listCampaigns},
		// SRE writes are requests the maintenance service carries out (202; follow the request).
		{pattern: "POST /admin/v1/maintenance/campaigns", perm: access.WriteMaintenance, mutates: true, bodyTarget: jsonTarget("id"), handle: s.createCampaign},
		{pattern: "POST /admin/v1/maintenance/campaigns/{id}/resume", perm: access.WriteMaintenance, target: pathValue("id"), mutates: true, handle: s.changeCampaign(maintenance.ActionResumeCampaign)},
		{pattern: "POST /admin/v1/maintenance/campaigns/{id}/cancel", perm: access.WriteMaintenance, target: pathValue("id"), mutates: true, handle: s.changeCampaign(maintenance.ActionCancelCampaign)},
		{pattern: "POST /admin/v1/maintenance/tasks", perm: access.WriteMaintenance, mutates: true, bodyTarget: jsonTarget("cluster"), handle: s.createTask},
		{pattern: "POST /admin/v1/maintenance/tasks/{id}/cancel", perm: access.WriteMaintenance, target: pathValue("id"), mutates: true, handle: s.cancelTask},
		{pattern: "GET /admin/v1/maintenance/windows/{cluster}", perm: access.ReadClusters, target: pathValue("cluster"), handle: s.getWindow},
		{pattern: "PUT /admin/v1/maintenance/windows/{cluster}", perm: access.WriteMaintenance, target: pathValue("cluster"), mutates: true, handle: s.setWindow},
		{pattern: "DELETE /admin/v1/maintenance/windows/{cluster}", perm: access.WriteMaintenance, target: pathValue("cluster"), mutates: true, handle: s.clearWindow},
		{pattern: "GET /admin/v1/maintenance/requests", perm: access.ReadClusters, handle: s.listMaintenanceRequests},
		{pattern: "GET /admin/v1/maintenance/requests/{id}", perm: access.ReadClusters, target: pathValue("id"), handle: s.getMaintenanceRequest},
		{pattern: "GET /admin/v1/audit", perm: access.ReadAudit, handle: s.listAudit},
		{pattern: "POST /admin/v1/revocations/{person}", perm: access.RevokeIdentities, target: pathValue("person"), mutates: true, handle: s.revoke},
		{pattern: "GET /admin/v1/revocations", perm: access.ReadAudit, handle: s.listRevocations},
		// SRE break-glass credentials for hosted clusters (breakglass.go).
		{pattern: "POST /admin/v1/breakglass/{id...}", perm: access.RequestBreakGlass, target: pathValue("id"), mutates: true, handle: s.requestBreakGlass},
		{pattern: "GET /admin/v1/breakglass", perm: access.ReadBreakGlass, handle: s.listBreakGlass},
		{pattern: "GET /admin/v1/breakglass-pending", perm: access.ReadBreakGlass, handle: s.pendingBreakGlass},
		{pattern: "POST /admin/v1/breakglass-approve/{id}", perm: access.ApproveBreakGlass, target: pathValue("id"), mutates: true, handle: s.approveBreakGlass},
		{pattern: "GET /admin/v1/breakglass-sessions/{id}", perm: access.ReadBreakGlass, target: pathValue("id"), handle: s.getBreakGlass},
		{pattern: "POST /admin/v1/breakglass-close/{id}", perm: access.RequestBreakGlass, target: pathValue("id"), mutates: true, handle: s.closeBreakGlass},
		{pattern: "POST /admin/v1/breakglass-revoke", perm: access.RevokeBreakGlass, mutates: true, bodyTarget: jsonTarget("session", "person"), handle: s.revokeBreakGlass},
		// The SRE portal: pages over the same data, through the same middleware.
		{pattern: "GET /portal/{$}", perm: access.ReadClusters, handle: s.portalFleet},
		{pattern: "GET /portal/clusters/{id...}", perm: access.ReadClusters, target: pathValue("id"), handle: s.portalCluster},
		{pattern: "GET /portal/shards", perm: access.ReadShards, handle: s.portalShards},
		{pattern: "POST /portal/shards/{name}/cordon", perm: access.WriteShards, target: pathValue("name"), mutates: true, handle: s.portalShardChange(shardCordon)},
		{pattern: "POST /portal/shards/{name}/uncordon", perm: access.WriteShards, target: pathValue("name"), mutates: true, handle: s.portalShardChange(shardUncordon)},
		{pattern: "GET /portal/audit", perm: access.ReadAudit, handle: s.portalAudit},
		{pattern: "GET /portal/breakglass", perm: access.ReadBreakGlass, handle: s.portalBreakGlass},
		{pattern: "POST /portal/breakglass/request", perm: access.RequestBreakGlass, mutates: true, bodyTarget: formTarget("cluster"), handle: s.portalRequestBreakGlass},
		{pattern: "POST /portal/breakglass/revoke", perm: access.RevokeBreakGlass, mutates: true, bodyTarget: formTarget("session"), handle: s.portalRevokeBreakGlass},
		// Every other path: identified and audited like the rest, then 404.
		{pattern: "/", target: func(r *http.Request) string { return r.URL.Path }, handle: func(w http.ResponseWriter, r *http.Request) error {
			return notFound(r.URL.Path, "no admin route %s %s", r.Method, r.URL.Path)
		}},
	}
}

func pathValue(name string) func(*http.Request) string {
	return func(r *http.Request) string { return r.PathValue(name) }
}

// jsonTarget names the target by the first of fields that is a non-empty string in a JSON body.
func jsonTarget(fields ...string) func(*http.Request, []byte) string {
	return func(_ *http.Request, body []byte) string {
		var m map[string]any
		if json.Unmarshal(body, &m) != nil {
			return ""
		}
		for _, f := range fields {
			if v, ok := m[f].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
}

// formTarget names the target by a field of a portal form.
func formTarget(field string) func(*http.Request, []byte) string {
	return func(r *http.Request, _ []byte) string { return r.PostForm.Get(field) }
}

// auditParams are the audit log's query parameters, of the API and of the portal's filter form.
var auditParams = []string{"person", "group", "outcome", "target", "correlationId", "method", "route", "since", "until", "pageSize", "pageToken"}

// parseAuditQuery reads an audit query (the API's and the portal's): a refusal is a 400 naming
// the parameter; def is the page size when none is asked for.
func parseAuditQuery(r *http.Request, def int) (audit.Filter, error) {
	if err := knownParams(r, auditParams...); err != nil {
		return audit.Filter{}, err
	}
	q := r.URL.Query()
	f := audit.Filter{Person: q.Get("person"), Group: q.Get("group"), Outcome: q.Get("outcome"), Target: q.Get("target"),
		CorrelationID: q.Get("correlationId"), Method: strings.ToUpper(q.Get("method")), RoutePrefix: q.Get("route"), PageToken: q.Get("pageToken")}
	if !slices.Contains(auditOutcomes, f.Outcome) && f.Outcome != "" {
		return f, badRequest("outcome", "outcome must be one of %s; got %q", strings.Join(auditOutcomes, ", "), f.Outcome)
	}
	var err error
	if f.Since, err = timeParam(r, "since"); err != nil {
		return f, err
	}
	if f.Until, err = timeParam(r, "until"); err != nil {
		return f, err
	}
	if f.Limit, err = pageSize(r, def, 1000); err != nil {
		return f, err
	}
	return f, nil
}

// auditOutcomes are the outcomes an audit record can have, in the order a call meets them.
var auditOutcomes = []string{audit.Unauthenticated, audit.Forbidden, audit.Allowed, audit.Completed}

// pageSize reads ?pageSize= (default def, 1..max); errors name the parameter.
func pageSize(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("pageSize")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest("pageSize", "pageSize must be an integer from 1 to %d, got %q", max, v)
	}
	return n, nil
}

// timeParam reads an RFC 3339 time parameter.
func timeParam(r *http.Request, name string) (time.Time, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, badRequest(name, "%s must be an RFC 3339 time (2026-01-02T15:04:05Z), got %q", name, v)
	}
	return t, nil
}

// knownParams is every route's check of its query (names: the parameters it takes). It refuses
// a parameter the route does not take, so a typo is not a silent "no filter", and one given more
// than once, so ?state=ready&state=error is not silently read as its first value. A name ending
// in "..." is a parameter the route takes any number of times. The first problem, in parameter
// name order, is a 400 naming the parameter.
func knownParams(r *http.Request, names ...string) error {
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		repeatable, found := false, false
		for _, n := range names {
			if base, many := strings.CutSuffix(n, "..."); base == k {
				found, repeatable = true, many
				break
			}
		}
		switch {
		case !found:
			target := k
			if target == "" {
				target = "query" // "?=x": a parameter without a name
			}
			if len(names) == 0 {
				return badRequest(target, "unknown query parameter %q; this route takes none", k)
			}
			return badRequest(target, "unknown query parameter %q; this route takes %s", k, describeParams(names))
		case len(q[k]) > 1 && !repeatable:
			return badRequest(k, "query parameter %q is given %d times; this route takes it once", k, len(q[k]))
		}
	}
	return nil
}

// describeParams lists knownParams' names for a message: "a, b, c (repeatable)".
func describeParams(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		if base, many := strings.CutSuffix(n, "..."); many {
			n = base + " (repeatable)"
		}
		out[i] = n
	}
	return strings.Join(out, ", ")
}

// listAudit serves GET /admin/v1/audit?person=&group=&outcome=&target=&correlationId=&method=&route=&since=&until=&pageSize=&pageToken=.
func (s *Server) listAudit(w http.ResponseWriter, r *http.Request) error {
	f, err := parseAuditQuery(r, 100)
	if err != nil {
		return err
	}
	entries, next, err := s.cfg.Audit.Query(r.Context(), f)
	if err == audit.ErrInvalidPageToken {
		return badRequest("pageToken", "pageToken %q was not issued by this API", f.PageToken)
	}
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []audit.Entry{}
	}
	writeJSON(w, http.StatusOK, adminapi.AuditList{Entries: entries, NextPageToken: next})
	return nil
}
