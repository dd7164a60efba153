package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/cluster-service/pkg/manifests"
	"github.com/openhcp/openhcp/internal/arm"
	"github.com/openhcp/openhcp/internal/armdoc"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/healthdoc"
)

// clusterStates are the state filter's values: Cluster Service's states, lowercase.
var clusterStates = func() []string {
	var out []string
	for v, name := range csv1.ClusterState_name {
		if v != 0 {
			out = append(out, stateName(name))
		}
	}
	sort.Strings(out)
	return out
}()

func stateName(enum string) string {
	_, after, _ := strings.Cut(enum, "_STATE_")
	return strings.ToLower(after)
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func summarize(c *csv1.Cluster) adminapi.ClusterSummary {
	s := adminapi.ClusterSummary{
		ID: c.GetId(), ARMResourceID: c.GetArmResourceId(), Shard: c.GetShard(), State: stateName(c.GetStatus().GetState().String()),
		Version: c.GetSpec().GetVersionId(), CurrentVersion: c.GetStatus().GetCurrentVersion(), Applied: c.GetStatus().GetApplied(),
		Message: c.GetStatus().GetMessage(), Revision: c.GetRevision(), ETag: revisionETag(c.GetSpecRevision()), CreateTime: c.GetCreateTime().AsTime(),
	}
	if id, err := arm.ParseResourceID(c.GetArmResourceId()); err == nil {
		s.Subscription = strings.ToLower(id.SubscriptionID)
	}
	s.Health = health(c.GetStatus().GetConditions())
	return s
}

// Cluster health values (ClusterSummary.Health).
var clusterHealths = []string{"healthy", "degraded", "unknown"}

// health reads the HostedCluster conditions Cluster Service last received.
func health(conds []*csv1.Condition) string {
	available, degraded := "", false
	for _, c := range conds {
		switch c.GetType() {
		case "Available":
			available = c.GetStatus()
		case "Degraded":
			degraded = c.GetStatus() == "True"
		}
	}
	switch {
	case degraded || available == "False":
		return "degraded"
	case available == "True":
		return "healthy"
	}
	return "unknown"
}

// clusterFilter is GET /admin/v1/clusters' query: the filters, applied to each page of Cluster
// Service's list, and the page.
type clusterFilter struct {
	subscription, shard, state, version, health string
	pageSize                                    int
	pageToken                                   string
}

// parseClusterFilter reads and checks the cluster list's query; an error names the parameter.
func parseClusterFilter(r *http.Request) (clusterFilter, error) {
	if err := knownParams(r, "subscription", "shard", "state", "version", "health", "pageSize", "pageToken"); err != nil {
		return clusterFilter{}, err
	}
	q := r.URL.Query()
	f := clusterFilter{subscription: strings.ToLower(q.Get("subscription")), shard: q.Get("shard"), state: strings.ToLower(q.Get("state")),
		version: q.Get("version"), health: strings.ToLower(q.Get("health")), pageToken: q.Get("pageToken")}
	if f.health != "" && !slices.Contains(clusterHealths, f.health) {
		return clusterFilter{}, badRequest("health", "health must be one of %s; got %q", strings.Join(clusterHealths, ", "), f.health)
	}
	if f.subscription != "" && !uuidRE.MatchString(f.subscription) {
		return clusterFilter{}, badRequest("subscription", "subscription must be a subscription ID (a UUID), got %q", f.subscription)
	}
	if f.state != "" && !slices.Contains(clusterStates, f.state) {
		return clusterFilter{}, badRequest("state", "state must be one of %s; got %q", strings.Join(clusterStates, ", "), f.state)
	}
	var err error
	if f.pageSize, err = pageSize(r, 100, 1000); err != nil {
		return clusterFilter{}, err
	}
	return f, nil
}

// admits says whether a cluster passes the filters.
func (f clusterFilter) admits(sum adminapi.ClusterSummary) bool {
	return (f.shard == "" || sum.Shard == f.shard) && (f.state == "" || sum.State == f.state) &&
		(f.version == "" || sum.Version == f.version || sum.CurrentVersion == f.version) && (f.health == "" || sum.Health == f.health)
}

// listClusters serves GET /admin/v1/clusters?subscription=&shard=&state=&version=&health=&pageSize=&pageToken=.
func (s *Server) listClusters(w http.ResponseWriter, r *http.Request) error {
	f, err := parseClusterFilter(r)
	if err != nil {
		return err
	}
	req := &csv1.ListClustersRequest{PageSize: int32(f.pageSize), PageToken: f.pageToken}
	if f.subscription != "" {
		req.ArmResourceIdPrefix = "/subscriptions/" + f.subscription + "/"
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	if err := s.knownShard(ctx, f.shard); err != nil {
		return err
	}
	resp, err := s.cfg.Clusters.ListClusters(ctx, req)
	if err != nil {
		return upstream("list clusters in Cluster Service", "pageToken", err)
	}
	out := adminapi.ClusterList{Clusters: []adminapi.ClusterSummary{}, NextPageToken: resp.GetNextPageToken()}
	for _, c := range resp.GetClusters() {
		if sum := summarize(c); f.admits(sum) {
			out.Clusters = append(out.Clusters, sum)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// describeCluster serves GET /admin/v1/clusters/{id...}: id is a Cluster Service ID or an ARM
// resource ID (with or without its leading "/").
func (s *Server) describeCluster(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	d, _, _, err := s.describe(ctx, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// describe builds the description of the cluster id names (a Cluster Service ID or an ARM
// resource ID), and returns Cluster Service's cluster and its ARM document (nil if none) too.
func (s *Server) describe(ctx context.Context, id string) (adminapi.ClusterDescription, *csv1.Cluster, *docstore.Document, error) {
	c, doc, err := s.findCluster(ctx, id)
	if err != nil {
		return adminapi.ClusterDescription{}, nil, nil, err
	}
	d := adminapi.ClusterDescription{Summary: summarize(c)}
	if b, err := protojson.Marshal(c); err == nil {
		d.ClusterService = b
	}
	if nps, err := s.cfg.NodePools.ListNodePools(ctx, &csv1.ListNodePoolsRequest{ClusterId: c.GetId()}); err != nil {
		d.Unavailable = append(d.Unavailable, fmt.Sprintf("node pools: %v", err))
	} else {
		for _, np := range nps.GetNodePools() {
			if b, err := protojson.Marshal(np); err == nil {
				d.NodePools = append(d.NodePools, b)
			}
		}
	}
	var ops []adminapi.Operation
	if doc != nil {
		ops, err = s.resourceOperations(ctx, doc, c.GetId())
		if err != nil {
			d.Unavailable = append(d.Unavailable, fmt.Sprintf("ARM operations: %v", err))
		}
		d.ARM = &adminapi.ARMView{Resource: doc.Body, Operations: ops}
	} else {
		d.Unavailable = append(d.Unavailable, "ARM resource document: none in the document store for "+c.GetArmResourceId())
	}
	if s.cfg.Maestro == nil {
		d.Unavailable = append(d.Unavailable, "Maestro: the admin API was started without --maestro-rest")
	} else {
		names := []string{manifests.WorkName(c.GetId())}
		for _, np := range d.NodePools {
			var v struct{ ID string }
			if json.Unmarshal(np, &v) == nil {
				names = append(names, manifests.NodePoolWorkName(v.ID))
			}
		}
		if d.Maestro, err = s.cfg.Maestro.BundlesNamed(ctx, names); err != nil {
			d.Unavailable = append(d.Unavailable, fmt.Sprintf("Maestro resource bundles: %v", err))
		}
	}
	if h, err := healthdoc.Get(ctx, s.cfg.Store, c.GetId()); err != nil {
		d.Unavailable = append(d.Unavailable, fmt.Sprintf("Monitor verdict: %v", err))
	} else if h != nil {
		d.Monitor = monitorHealth(h)
	}
	d.Diagnosis = diagnose(doc, ops, c, d.Maestro)
	if line := s.shardLine(ctx, c.GetShard()); line != "" {
		d.Diagnosis = append(d.Diagnosis, line)
	}
	return d, c, doc, nil
}

// findCluster resolves id (a Cluster Service ID or an ARM resource ID) to Cluster Service's
// cluster and, when there is one, its ARM resource document.
func (s *Server) findCluster(ctx context.Context, id string) (*csv1.Cluster, *docstore.Document, error) {
	if id == "" {
		return nil, nil, badRequest("id", "a cluster ID (Cluster Service ID or ARM resource ID) is required")
	}
	if strings.Contains(id, "/") {
		if !strings.HasPrefix(id, "/") {
			id = "/" + id
		}
		rid, err := arm.ParseResourceID(id)
		if err != nil || !strings.EqualFold(rid.ResourceType(), "Microsoft.RedHatOpenShift/hcpOpenShiftClusters") {
			return nil, nil, badRequest("id", "%q is neither a Cluster Service ID nor the ARM resource ID of an hcpOpenShiftCluster", cut(id, maxTarget))
		}
		doc, err := s.cfg.Store.Get(ctx, strings.ToLower(rid.SubscriptionID), rid.Lower())
		switch {
		case errors.Is(err, docstore.ErrNotFound):
			doc = nil
		case err != nil:
			return nil, nil, fmt.Errorf("read ARM document %s: %w", id, err)
		}
		var internal string
		if doc != nil {
			var rd armdoc.ResourceDocument
			if err := json.Unmarshal(doc.Body, &rd); err != nil {
				return nil, nil, fmt.Errorf("decode ARM document %s: %w", id, err)
			}
			internal = rd.InternalID
		}
		if internal == "" {
			// No document (or none with an ID yet): ask Cluster Service by ARM ID.
			resp, err := s.cfg.Clusters.ListClusters(ctx, &csv1.ListClustersRequest{ArmResourceIdPrefix: id, PageSize: 10})
			if err != nil {
				return nil, nil, upstream("find cluster in Cluster Service", id, err)
			}
			for _, c := range resp.GetClusters() {
				if strings.EqualFold(c.GetArmResourceId(), id) {
					return c, doc, nil
				}
			}
			return nil, nil, notFound(id, "no cluster %s in Cluster Service or the ARM document store", id)
		}
		c, err := s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: internal})
		if err != nil {
			return nil, nil, upstream("get cluster from Cluster Service", id, err)
		}
		return c, doc, nil
	}
	c, err := s.cfg.Clusters.GetCluster(ctx, &csv1.GetClusterRequest{Id: id})
	if err != nil {
		return nil, nil, upstream("get cluster from Cluster Service", id, err)
	}
	rid, err := arm.ParseResourceID(c.GetArmResourceId())
	if err != nil {
		return c, nil, nil
	}
	doc, err := s.cfg.Store.Get(ctx, strings.ToLower(rid.SubscriptionID), rid.Lower())
	if err != nil && !errors.Is(err, docstore.ErrNotFound) {
		return nil, nil, fmt.Errorf("read ARM document %s: %w", rid, err)
	}
	return c, doc, nil
}

// recentOperations is how many of a resource's operations describe shows, newest first.
const recentOperations = 10

// resourceOperations returns the newest operations of the resource in doc and of its
// children (node pools), by ARM resource ID prefix within its subscription.
func (s *Server) resourceOperations(ctx context.Context, doc *docstore.Document, clusterID string) ([]adminapi.Operation, error) {
	var ops []adminapi.Operation
	token := ""
	for {
		page, err := s.cfg.Store.Query(ctx, docstore.Query{Partition: doc.PartitionKey, Type: docstore.TypeOperation, Continuation: token})
		if err != nil {
			return nil, fmt.Errorf("query operations: %w", err)
		}
		for _, d := range page.Documents {
			op, err := s.operation(d)
			if err != nil {
				return nil, err
			}
			lower := strings.ToLower(op.ResourceID)
			if lower == doc.ID || strings.HasPrefix(lower, doc.ID+"/") || op.InternalID == clusterID {
				ops = append(ops, op)
			}
		}
		if token = page.Continuation; token == "" {
			break
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].StartTime.After(ops[j].StartTime) })
	if len(ops) > recentOperations {
		ops = ops[:recentOperations]
	}
	return ops, nil
}

// operation converts an operation document.
func (s *Server) operation(d *docstore.Document) (adminapi.Operation, error) {
	var od armdoc.OperationDocument
	if err := json.Unmarshal(d.Body, &od); err != nil {
		return adminapi.Operation{}, fmt.Errorf("decode operation %s/%s: %w", d.PartitionKey, d.ID, err)
	}
	op := adminapi.Operation{ID: od.ID, Subscription: d.PartitionKey, Request: string(od.Request), ResourceID: od.ExternalID,
		InternalID: od.InternalID, Status: string(od.Status), StartTime: od.StartTime, EndTime: od.EndTime, CorrelationID: od.CorrelationID}
	end := s.cfg.Now()
	if od.EndTime != nil {
		end = *od.EndTime
	}
	op.AgeSeconds = int64(end.Sub(od.StartTime).Seconds())
	if od.Error != nil {
		op.Error = od.Error.Code + ": " + od.Error.Message
	}
	return op, nil
}

// diagnose says, stage by stage along the request path, what each part last reported.
func diagnose(doc *docstore.Document, ops []adminapi.Operation, c *csv1.Cluster, bundles []adminapi.Bundle) []string {
	var out []string
	if doc != nil {
		var rd armdoc.ResourceDocument
		_ = json.Unmarshal(doc.Body, &rd)
		line := fmt.Sprintf("ARM: provisioningState %s", rd.ProvisioningState)
		for _, op := range ops {
			if !armdoc.ProvisioningState(op.Status).Terminal() {
				line += fmt.Sprintf("; operation %s (%s) %s for %ds", op.ID, op.Request, op.Status, op.AgeSeconds)
				break
			}
		}
		out = append(out, line)
	} else {
		out = append(out, "ARM: no resource document")
	}
	st := c.GetStatus()
	line := fmt.Sprintf("Cluster Service: %s on shard %q at revision %d", stateName(st.GetState().String()), c.GetShard(), c.GetRevision())
	if st.GetMessage() != "" {
		line += ": " + st.GetMessage()
	}
	out = append(out, line)
	found := false
	for _, b := range bundles {
		if b.Name != manifests.WorkName(c.GetId()) {
			continue
		}
		found = true
		line := fmt.Sprintf("Maestro: bundle %s on consumer %s, version %d", b.Name, b.Consumer, b.Version)
		if b.DeletedAt != nil {
			line += fmt.Sprintf(", deleting since %s", b.DeletedAt.Format("15:04:05"))
		}
		line += fmt.Sprintf("; Cluster Service sees it applied=%t", st.GetApplied())
		out = append(out, line)
	}
	if !found && bundles != nil {
		out = append(out, "Maestro: no resource bundle "+manifests.WorkName(c.GetId()))
	}
	var conds []string
	for _, cd := range st.GetConditions() {
		if cd.GetType() == "Available" || cd.GetType() == "Degraded" || cd.GetStatus() == "False" {
			conds = append(conds, fmt.Sprintf("%s=%s (%s)", cd.GetType(), cd.GetStatus(), cd.GetReason()))
		}
	}
	if len(st.GetConditions()) == 0 {
		out = append(out, "HyperShift: no HostedCluster conditions reported yet")
	} else {
		out = append(out, "HyperShift: "+strings.Join(conds, ", "))
	}
	return out
}

// monitorHealth is the Monitor's health document as the admin API shows it.
func monitorHealth(h *healthdoc.Cluster) *adminapi.MonitorHealth {
	out := &adminapi.MonitorHealth{Health: h.Health, Reason: h.Reason, Since: h.Since, CheckedAt: h.CheckedAt, Replica: h.Replica}
	for _, np := range h.NodePools {
		out.NodePools = append(out.NodePools, adminapi.NodePoolHealth{ID: np.ID, Health: np.Health, Reason: np.Reason})
	}
	return out
}
