package adminapi

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls the admin API. HTTP must present an SRE's client certificate and trust the
// admin API's CA.
type Client struct {
	BaseURL string
	HTTP    *http.Client
	// CorrelationID, when set, is sent with every call (HeaderCorrelationID).
	CorrelationID string
}

// do sends one call and decodes a 2xx answer into out (a *[]byte takes the body as is); any
// other answer is an *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, hdr http.Header, body, out any) error {
	u := strings.TrimRight(c.BaseURL, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set(HeaderClient, "hcpctl")
	}
	if c.CorrelationID != "" {
		req.Header.Set(HeaderCorrelationID, c.CorrelationID)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(raw, e) != nil || e.Code == "" {
			e.Code, e.Message = http.StatusText(resp.StatusCode), strings.TrimSpace(string(raw))
		}
		return e
	}
	if out == nil {
		return nil
	}
	if b, ok := out.(*[]byte); ok {
		*b = raw
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// ClusterFilter selects clusters (GET /admin/v1/clusters).
type ClusterFilter struct {
	Subscription, Shard, State, Version, Health string
	PageSize                                    int
	PageToken                                   string
}

func (f ClusterFilter) values() url.Values {
	q := url.Values{}
	set(q, "subscription", f.Subscription)
	set(q, "shard", f.Shard)
	set(q, "state", f.State)
	set(q, "version", f.Version)
	set(q, "health", f.Health)
	set(q, "pageToken", f.PageToken)
	if f.PageSize > 0 {
		q.Set("pageSize", fmt.Sprint(f.PageSize))
	}
	return q
}

func set(q url.Values, k, v string) {
	if v != "" {
		q.Set(k, v)
	}
}

// ListClusters returns one page of clusters.
func (c *Client) ListClusters(ctx context.Context, f ClusterFilter) (ClusterList, error) {
	var out ClusterList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/clusters", f.values(), nil, nil, &out)
}

// DescribeCluster describes a cluster by Cluster Service ID or ARM resource ID.
func (c *Client) DescribeCluster(ctx context.Context, id string) (ClusterDescription, error) {
	var out ClusterDescription
	return out, c.do(ctx, http.MethodGet, "/admin/v1/clusters/"+strings.TrimPrefix(id, "/"), nil, nil, nil, &out)
}

// MustGather returns a cluster's must-gather tarball (gzip).
func (c *Client) MustGather(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	return out, c.do(ctx, http.MethodGet, "/admin/v1/must-gather/"+strings.TrimPrefix(id, "/"), nil, nil, nil, &out)
}

// ListOperations returns one page of operations; all includes the finished ones.
func (c *Client) ListOperations(ctx context.Context, all bool, pageSize int, pageToken string) (OperationList, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if pageSize > 0 {
		q.Set("pageSize", fmt.Sprint(pageSize))
	}
	set(q, "pageToken", pageToken)
	var out OperationList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/operations", q, nil, nil, &out)
}

// ListShards returns every provision shard.
func (c *Client) ListShards(ctx context.Context) (ShardList, error) {
	var out ShardList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/shards", nil, nil, nil, &out)
}

// Shard status changes (ChangeShard's action).
const (
	ShardCordon    = "cordon"
	ShardUncordon  = "uncordon"
	ShardSetStatus = "status"
)

// ChangeShard cordons, uncordons or sets the status of a shard; a non-empty etag (a shard's
// ETag) makes the change conditional.
func (c *Client) ChangeShard(ctx context.Context, name, action string, change ShardChange, etag string) (Shard, error) {
	method := http.MethodPost
	if action == ShardSetStatus {
		method = http.MethodPut
	}
	var out Shard
	return out, c.do(ctx, method, "/admin/v1/shards/"+url.PathEscape(name)+"/"+action, nil, ifMatch(etag), change, &out)
}

// AuditFilter selects audit records (GET /admin/v1/audit).
type AuditFilter struct {
	Person, Group, Outcome, Target, CorrelationID, Method, Route, Since, Until string
	PageSize                                                                   int
	PageToken                                                                  string
}

// Audit returns one page of audit records, newest first.
func (c *Client) Audit(ctx context.Context, f AuditFilter) (AuditList, error) {
	q := url.Values{}
	for k, v := range map[string]string{"person": f.Person, "group": f.Group, "outcome": f.Outcome, "target": f.Target,
		"correlationId": f.CorrelationID, "method": f.Method, "route": f.Route, "since": f.Since, "until": f.Until, "pageToken": f.PageToken} {
		set(q, k, v)
	}
	if f.PageSize > 0 {
		q.Set("pageSize", fmt.Sprint(f.PageSize))
	}
	var out AuditList
	return out, c.do(ctx, http.MethodGet, "/admin/v1/audit", q, nil, nil, &out)
}

// Revoke puts person on the SRE revocation list: every certificate of theirs issued before now
// is refused. The answer is the revocation as stored.
func (c *Client) Revoke(ctx context.Context, person, reason string) (map[string]any, error) {
	var out map[string]any
	return out, c.do(ctx, http.MethodPost, "/admin/v1/revocations/"+url.PathEscape(person), nil, nil, map[string]string{"reason": reason}, &out)
}

// Revocations returns the SRE revocation list, newest first.
func (c *Client) Revocations(ctx context.Context) (map[string]any, error) {
	var out map[string]any
	return out, c.do(ctx, http.MethodGet, "/admin/v1/revocations", nil, nil, nil, &out)
}

// ReadMustGather reads a must-gather tarball (gzip-compressed tar, as MustGather returns it)
// into its files by name.
func ReadMustGather(r io.Reader) (map[string][]byte, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("read must-gather: %w", err)
	}
	tr := tar.NewReader(zr)
	out := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read must-gather: %w", err)
		}
		if out[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("read must-gather file %s: %w", h.Name, err)
		}
	}
}

// ifMatch is the If-Match header of a conditional change ("" for none); a bare value is quoted.
func ifMatch(v string) http.Header {
	hdr := http.Header{}
	if v != "" {
		if !strings.HasPrefix(v, `"`) {
			v = `"` + v + `"`
		}
		hdr.Set("If-Match", v)
	}
	return hdr
}

// ScaleNodePool sets a node pool's replicas or autoscaling range (id: Cluster Service ID or ARM
// resource ID); a non-empty etag (Change.ETag, the spec revision) makes the change conditional.
func (c *Client) ScaleNodePool(ctx context.Context, id string, scale NodePoolScale, etag string) (Change, error) {
	var out Change
	return out, c.do(ctx, http.MethodPost, "/admin/v1/scale/"+strings.TrimPrefix(id, "/"), nil, ifMatch(etag), scale, &out)
}

// StartUpgrade upgrades a cluster's control plane or a node pool (id: Cluster Service ID or ARM
// resource ID of either) to a version; a non-empty etag makes it conditional.
func (c *Client) StartUpgrade(ctx context.Context, id string, up Upgrade, etag string) (Change, error) {
	var out Change
	return out, c.do(ctx, http.MethodPost, "/admin/v1/upgrade/"+strings.TrimPrefix(id, "/"), nil, ifMatch(etag), up, &out)
}

// DrainStatus says which clusters remain on a shard and what runs on them.
func (c *Client) DrainStatus(ctx context.Context, shard string) (DrainStatus, error) {
	var out DrainStatus
	return out, c.do(ctx, http.MethodGet, "/admin/v1/shards/"+url.PathEscape(shard)+"/drain-status", nil, nil, nil, &out)
}

// PauseCluster pauses HyperShift's reconciliation of a cluster and its node pools (until: an
// RFC 3339 time, or "" until resumed); ResumeCluster ends the pause. A non-empty etag makes
// either conditional.
func (c *Client) PauseCluster(ctx context.Context, id string, p Pause, etag string) (Change, error) {
	var out Change
	return out, c.do(ctx, http.MethodPost, "/admin/v1/pause/"+strings.TrimPrefix(id, "/"), nil, ifMatch(etag), p, &out)
}

// ResumeCluster ends a cluster's pause.
func (c *Client) ResumeCluster(ctx context.Context, id, reason, etag string) (Change, error) {
	var out Change
	return out, c.do(ctx, http.MethodPost, "/admin/v1/resume/"+strings.TrimPrefix(id, "/"), nil, ifMatch(etag), Pause{Reason: reason}, &out)
}

// CancelUpgrade cancels a cluster's control-plane upgrade that has not started.
func (c *Client) CancelUpgrade(ctx context.Context, id, reason string) (Change, error) {
	var out Change
	return out, c.do(ctx, http.MethodPost, "/admin/v1/cancel-upgrade/"+strings.TrimPrefix(id, "/"), nil, nil, Pause{Reason: reason}, &out)
}
