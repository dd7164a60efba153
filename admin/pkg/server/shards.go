package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// shardStatusName is a shard status as the admin API spells it ("active", "maintenance",
// "offline"); it is also the shard's ETag.
func shardStatusName(st csv1.ShardStatus) string {
	return strings.ToLower(strings.TrimPrefix(st.String(), "SHARD_STATUS_"))
}

func parseShardStatus(v string) (csv1.ShardStatus, bool) {
	st, ok := csv1.ShardStatus_value["SHARD_STATUS_"+strings.ToUpper(v)]
	if !ok || st == 0 || v != strings.ToLower(v) {
		return 0, false
	}
	return csv1.ShardStatus(st), true
}

func shardView(sh *csv1.ProvisionShard) adminapi.Shard {
	v := adminapi.Shard{Name: sh.GetName(), Status: shardStatusName(sh.GetStatus()), MaxClusters: sh.GetMaxClusters(),
		ClusterCount: sh.GetClusterCount(), Labels: sh.GetLabels(), ETag: `"` + shardStatusName(sh.GetStatus()) + `"`}
	if v.MaxClusters > 0 {
		v.Load = float64(v.ClusterCount) / float64(v.MaxClusters)
	}
	return v
}

// listShards serves GET /admin/v1/shards.
func (s *Server) listShards(w http.ResponseWriter, r *http.Request) error {
	if err := knownParams(r); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
	defer cancel()
	out, err := s.shards(ctx)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// shards returns every provision shard, by name.
func (s *Server) shards(ctx context.Context) (adminapi.ShardList, error) {
	resp, err := s.cfg.Shards.ListShards(ctx, &csv1.ListShardsRequest{})
	if err != nil {
		return adminapi.ShardList{}, upstream("list provision shards in Cluster Service", "", err)
	}
	out := adminapi.ShardList{Shards: []adminapi.Shard{}}
	for _, sh := range resp.GetShards() {
		out.Shards = append(out.Shards, shardView(sh))
	}
	sort.Slice(out.Shards, func(i, j int) bool { return out.Shards[i].Name < out.Shards[j].Name })
	s.probeShards(ctx, out.Shards)
	return out, nil
}

type shardChange int

const (
	shardCordon    shardChange = iota // no new clusters: maintenance
	shardUncordon                     // back to active
	shardSetStatus                    // the body's status
)

// changeShard serves the shard status changes. The middleware has checked the body's reason;
// an If-Match header (a shard's ETag) makes the change conditional in Cluster Service itself.
func (s *Server) changeShard(kind shardChange) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := knownParams(r); err != nil {
			return err
		}
		var body adminapi.ShardChange
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			return badRequest("", "decode the body: %v", err)
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		sh, err := s.setShard(ctx, r.PathValue("name"), kind, body.Status, r.Header.Get("If-Match"))
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, sh)
		return nil
	}
}

// setShard changes a shard's status: kind says to which (status for shardSetStatus); a
// non-empty ifMatch (an ETag) makes the change conditional.
func (s *Server) setShard(ctx context.Context, name string, kind shardChange, status, ifMatch string) (adminapi.Shard, error) {
	req, err := shardRequest(name, kind, status, ifMatch)
	if err != nil {
		return adminapi.Shard{}, err
	}
	sh, err := s.cfg.Shards.SetShardStatus(ctx, req)
	if err != nil {
		e := upstream("set the status of shard "+name, name, err)
		if e.status == http.StatusNotFound {
			// A change names the shard to act on, so an unknown one is bad input (400 naming
			// the field), where a read of it is a 404.
			return adminapi.Shard{}, badRequest("name", "no provision shard %q; hcpctl shard list shows the shards", name)
		}
		if e.status == http.StatusPreconditionFailed {
			e.body.Target = "If-Match"
		}
		return adminapi.Shard{}, e
	}
	return shardView(sh), nil
}

// shardRequest turns a shard change (its route's kind, the body's status, the If-Match header)
// into Cluster Service's request; an error names the field or header at fault.
func shardRequest(name string, kind shardChange, status, ifMatch string) (*csv1.SetShardStatusRequest, error) {
	var want csv1.ShardStatus
	switch kind {
	case shardCordon:
		want = csv1.ShardStatus_SHARD_STATUS_MAINTENANCE
	case shardUncordon:
		want = csv1.ShardStatus_SHARD_STATUS_ACTIVE
	case shardSetStatus:
		st, ok := parseShardStatus(status)
		if !ok {
			return nil, badRequest("status", "status must be active, maintenance or offline; got %q", status)
		}
		want = st
	}
	if kind != shardSetStatus && status != "" {
		return nil, badRequest("status", "status is implied by this route; leave it out (or use PUT /admin/v1/shards/{name}/status)")
	}
	req := &csv1.SetShardStatusRequest{Name: name, Status: want}
	if ifMatch != "" {
		st, ok := parseShardStatus(strings.Trim(ifMatch, `"`))
		if !ok {
			return nil, badRequest("If-Match", "If-Match must be a shard ETag (\"active\", \"maintenance\" or \"offline\"), got %s", ifMatch)
		}
		req.IfStatus = st
	}
	return req, nil
}
