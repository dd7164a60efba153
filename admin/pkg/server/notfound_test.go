package server

import (
	"strings"
	"testing"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
)

// TestUnknownIDsAre404NamingThem: every route that takes an ID answers an unknown one — a
// Cluster Service ID, an ARM resource ID, a shard name — with 404 NotFound whose target and
// message name it, for readers and writers alike, before any change; the one exception is a
// change of an unknown shard, a 400 naming the field.
func TestUnknownIDsAre404NamingThem(t *testing.T) {
	e := start(t)
	const csID = "000000000000000000000000000000vv"
	armID := "subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/nope"
	poolARM := armID + "/nodePools/nope"
	for _, tc := range []struct {
		name, identity, method, path, body, id string
	}{
		{"describe_cluster_service_id", "bob", "GET", "/admin/v1/clusters/" + csID, "", csID},
		{"describe_arm_id", "bob", "GET", "/admin/v1/clusters/" + armID, "", armID},
		{"must_gather", "bob", "GET", "/admin/v1/must-gather/" + csID, "", csID},
		{"scale_node_pool_arm_id", "alice", "POST", "/admin/v1/scale/" + poolARM, `{"replicas":2,"reason":"r"}`, poolARM},
		{"upgrade_arm_id", "alice", "POST", "/admin/v1/upgrade/" + armID, `{"version":"4.20.3","reason":"r"}`, armID},
		{"cancel_upgrade", "alice", "POST", "/admin/v1/cancel-upgrade/" + armID, `{"reason":"r"}`, armID},
		{"pause", "alice", "POST", "/admin/v1/pause/" + csID, `{"reason":"r"}`, csID},
		{"resume", "alice", "POST", "/admin/v1/resume/" + armID, `{"reason":"r"}`, armID},
		{"drain_status", "bob", "GET", "/admin/v1/shards/mgmt-404/drain-status", "", "mgmt-404"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, ae, body := e.call(t, tc.identity, tc.method, tc.path, tc.body)
			if code != 404 || ae.Code != adminapi.CodeNotFound || !strings.EqualFold(strings.TrimPrefix(ae.Target, "/"), tc.id) || !strings.Contains(strings.ToLower(ae.Message), strings.ToLower(tc.id)) {
				t.Fatalf("%s %s: %d %+v, want 404 NotFound naming %s: %s", tc.method, tc.path, code, ae, tc.id, body)
			}
		})
	}
	// A change of a shard names the shard it acts on: an unknown one is bad input, 400 naming
	// the field, with the shard in the message (a cordon of an unknown shard).
	for _, tc := range []struct{ name, method, path, body string }{
		{"cordon", "POST", "/admin/v1/shards/mgmt-404/cordon", `{"reason":"r"}`},
		{"uncordon", "POST", "/admin/v1/shards/mgmt-404/uncordon", `{"reason":"r"}`},
		{"set_status", "PUT", "/admin/v1/shards/mgmt-404/status", `{"status":"offline","reason":"r"}`},
	} {
		t.Run(tc.name+"_of_an_unknown_shard_is_400", func(t *testing.T) {
			code, ae, body := e.call(t, "alice", tc.method, tc.path, tc.body)
			if code != 400 || ae.Target != "name" || !strings.Contains(ae.Message, "mgmt-404") {
				t.Fatalf("%s %s: %d %+v, want 400 naming name and mgmt-404: %s", tc.method, tc.path, code, ae, body)
			}
		})
	}
	t.Run("malformed_cluster_service_id_is_400_naming_it", func(t *testing.T) {
		const bad = "0000000000000000000000000000000z" // z is not in Cluster Service's alphabet
		code, ae, body := e.call(t, "bob", "GET", "/admin/v1/clusters/"+bad, "")
		if code != 400 || ae.Target != bad || !strings.Contains(ae.Message, bad) {
			t.Fatalf("%d %+v %s", code, ae, body)
		}
	})
	t.Run("portal_cluster_page", func(t *testing.T) {
		code, _, body := e.call(t, "bob", "GET", "/portal/clusters/"+csID, "")
		if code != 404 || !strings.Contains(string(body), csID) || !strings.Contains(string(body), "NotFound") {
			t.Fatalf("%d %s", code, body)
		}
	})
}
