package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

// refusedWith400 fails t unless err is a 400 naming a target with a message; it says whether
// err was a refusal at all.
func refusedWith400(t *testing.T, err error, input ...string) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var ae *apiError
	if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
		t.Fatalf("refusal %v of %q: want a 400 naming its target", err, input)
	}
	return true
}

// FuzzClusterListQuery feeds arbitrary query strings to the cluster list's parser: no panic; a
// refusal is a 400 naming the parameter; what it accepts has a known state and health, a
// subscription ID that is a UUID, a page size within bounds and no parameter given twice.
func FuzzClusterListQuery(f *testing.F) {
	for _, s := range []string{"", "state=installing", "state=Ready&health=DEGRADED", "health=sick", "subscription=not-a-uuid",
		"subscription=00000000-0000-0000-0000-000000000001&shard=mgmt-1&version=4.19.7", "pageSize=0", "pageSize=1000&pageToken=x",
		"shard=", "=x", "state=%zz", "colour=red", "state=ready&state=error"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{URL: &url.URL{Path: "/admin/v1/clusters", RawQuery: raw}}
		c, err := parseClusterFilter(r)
		if refusedWith400(t, err, raw) {
			return
		}
		if (c.state != "" && !slices.Contains(clusterStates, c.state)) || (c.health != "" && !slices.Contains(clusterHealths, c.health)) ||
			(c.subscription != "" && !uuidRE.MatchString(c.subscription)) || c.pageSize < 1 || c.pageSize > 1000 {
			t.Fatalf("%q accepted as %+v", raw, c)
		}
		for k, vs := range r.URL.Query() {
			if len(vs) > 1 {
				t.Fatalf("%q accepted with %s given %d times", raw, k, len(vs))
			}
		}
	})
}

// FuzzOperationsQuery: the operations list's parser never panics, refuses with a 400 naming
// the parameter, and accepts only a page size within bounds.
func FuzzOperationsQuery(f *testing.F) {
	for _, s := range []string{"", "all=true", "all=1", "all=yes", "pageSize=1001", "pageSize=-1", "all=false&pageSize=5&pageToken=abc", "since=1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{URL: &url.URL{Path: "/admin/v1/operations", RawQuery: raw}}
		_, size, err := parseOperationsQuery(r)
		if !refusedWith400(t, err, raw) && (size < 1 || size > 1000) {
			t.Fatalf("%q accepted with page size %d", raw, size)
		}
	})
}

// FuzzShardRequest feeds arbitrary statuses and If-Match headers to a shard change of each
// kind: no panic; a refusal is a 400 naming status or If-Match; an accepted change has a known
// status (the route's own for cordon and uncordon) and is conditional exactly when If-Match
// was sent.
func FuzzShardRequest(f *testing.F) {
	for _, s := range [][3]string{{"\x00", "", `"active"`}, {"\x01", "", ""}, {"\x02", "offline", `"maintenance"`}, {"\x02", "OFFLINE", ""},
		{"\x02", "unspecified", ""}, {"\x00", "offline", ""}, {"\x01", "", `W/"active"`}, {"\x02", "active", `"Active"`}, {"\x02", "", ""}} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, kindByte, status, ifMatch string) {
		kind := shardCordon
		if kindByte != "" {
			kind = shardChange(int(kindByte[0]) % 3)
		}
		req, err := shardRequest("mgmt-1", kind, status, ifMatch)
		if refusedWith400(t, err, status, ifMatch) {
			return
		}
		if req.GetStatus() == csv1.ShardStatus_SHARD_STATUS_UNSPECIFIED || (req.GetIfStatus() == 0) != (ifMatch == "") ||
			(kind == shardCordon && req.GetStatus() != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE) ||
			(kind == shardUncordon && req.GetStatus() != csv1.ShardStatus_SHARD_STATUS_ACTIVE) {
			t.Fatalf("kind %d status %q If-Match %q accepted as %v", kind, status, ifMatch, req)
		}
	})
}

// FuzzPortalForm feeds arbitrary form bodies and Origin headers to the checks of a portal
// post: no panic; a post from another origin is a 403 naming Origin (forgeryCheck); a refusal
// of the form is a 400; an accepted form has a trimmed, bounded reason and its fields in
// PostForm.
func FuzzPortalForm(f *testing.F) {
	for _, s := range [][2]string{{"reason=INC-1&etag=%22active%22", "https://example.test"}, {"reason=", "https://example.test"},
		{"reason=x", "https://evil.test"}, {"reason=x", ""}, {"%zz", "https://example.test"}, {"reason=%20&etag=x", "https://example.test"},
		{"reason=" + strings.Repeat("r", 1100), "https://example.test"}, {"etag=x;reason=y", "https://example.test"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, body, origin string) {
		r := httptest.NewRequest(http.MethodPost, "https://example.test/portal/shards/mgmt-1/cordon", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", origin)
		if err := forgeryCheck(r, origins{"https://example.test": true}); err != nil || origin != "https://example.test" {
			if err == nil || err.status != http.StatusForbidden || err.body.Target != "Origin" {
				t.Fatalf("post from %q: %+v, want 403 naming Origin", origin, err)
			}
			return
		}
		reason, _, err := readReason(r)
		if err != nil {
			if err.status != http.StatusBadRequest || err.body.Message == "" {
				t.Fatalf("form %q refused as %+v", body, err)
			}
			return
		}
		if reason == "" || reason != strings.TrimSpace(reason) || len(reason) > 1024 ||
			strings.TrimSpace(r.PostForm.Get("reason")) != reason {
			t.Fatalf("form %q from %q accepted with reason %q", body, origin, reason)
		}
	})
}

// FuzzTargetID feeds arbitrary path IDs to the parser that tells an ARM resource ID from a
// Cluster Service ID: no panic; an ID without "/" is a Cluster Service ID; a parsed ARM ID
// names a subscription.
func FuzzTargetID(f *testing.F) {
	for _, s := range []string{"0000000000000000000000000000000v", "subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1",
		"/subscriptions/x/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c1/nodePools/np1", "/", "//", "subscriptions/", "a/b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		rid, isARM := armResourceID(id)
		if isARM != strings.Contains(id, "/") {
			t.Fatalf("%q: isARM %t", id, isARM)
		}
		if rid != nil && rid.SubscriptionID == "" {
			t.Fatalf("%q parsed without a subscription: %v", id, rid)
		}
	})
}
