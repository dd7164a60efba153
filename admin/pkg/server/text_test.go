package server

import (
	"testing"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
)

// TestNULAndInvalidUTF8AreRecordedAndRefused pins what the admin API answers to a NUL or bytes
// that are not UTF-8 in a path, a query or a reason: the answer it gives any other caller (401
// without a credential) or a 400 naming the parameter, and an audit record of the call with the
// bytes escaped. PostgreSQL refused them: the record failed, every such call was a 503
// AuditUnavailable (no credential needed) and a query for them a 500.
func TestNULAndInvalidUTF8AreRecordedAndRefused(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name, identity, method, path, body string
		want                               int
		target                             string // the 400's
		outcome, recordedPath              string
	}{
		{"no_credential_NUL_in_an_id_is_401", "", "GET", "/admin/v1/clusters/a%00b", "", 401, "", audit.Unauthenticated, `/admin/v1/clusters/a\x00b`},
		{"no_credential_invalid_UTF-8_in_an_id_is_401", "", "GET", "/admin/v1/clusters/%ff%fe", "", 401, "", audit.Unauthenticated, `/admin/v1/clusters/\xff\xfe`},
		{"NUL_in_an_id_is_400_naming_it", "bob", "GET", "/admin/v1/clusters/a%00b", "", 400, "id", audit.Completed, `/admin/v1/clusters/a\x00b`},
		{"invalid_UTF-8_in_a_shard_name_is_400", "alice", "POST", "/admin/v1/shards/%ff/cordon", `{"reason":"r"}`, 400, "name", audit.Completed, `/admin/v1/shards/\xff/cordon`},
		{"NUL_in_a_query_value_is_400_naming_it", "bob", "GET", "/admin/v1/audit?person=a%00b", "", 400, "person", audit.Completed, "/admin/v1/audit"},
		{"invalid_UTF-8_in_a_query_value_is_400", "bob", "GET", "/admin/v1/audit?target=%ff%fe", "", 400, "target", audit.Completed, "/admin/v1/audit"},
		{"NUL_in_a_query_name_is_400", "bob", "GET", "/admin/v1/audit?a%00=1", "", 400, "query", audit.Completed, "/admin/v1/audit"},
		{"NUL_in_a_reason_is_400_naming_it", "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"disk\u0000"}`, 400, "reason", audit.Completed, "/admin/v1/shards/mgmt-1/cordon"},
		{"NUL_in_a_body_field_is_400_naming_it", "alice", "POST", "/admin/v1/maintenance/campaigns", `{"reason":"r","id":"c1","fromVersion":"4.19\u0000","channelGroup":"stable"}`, 400, "fromVersion", audit.Completed, "/admin/v1/maintenance/campaigns"},
		{"NUL_in_a_session_to_revoke_is_400_naming_it", "alice", "POST", "/admin/v1/breakglass-revoke", `{"reason":"r","session":"s\u0000"}`, 400, "session", audit.Completed, "/admin/v1/breakglass-revoke"},
		{"invalid_UTF-8_in_a_JSON_reason_is_400_naming_it", "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", "{\"reason\":\"disk\xff\"}", 400, "reason", audit.Completed, "/admin/v1/shards/mgmt-1/cordon"},
		{"invalid_UTF-8_in_another_body_field_is_400", "alice", "POST", "/admin/v1/maintenance/campaigns", "{\"reason\":\"r\",\"id\":\"c1\xff\",\"fromVersion\":\"4.19\",\"channelGroup\":\"stable\"}", 400, "id", audit.Completed, "/admin/v1/maintenance/campaigns"},
		{"half_a_surrogate_pair_in_a_JSON_reason_is_400_naming_it", "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"disk \ud800 full"}`, 400, "reason", audit.Completed, "/admin/v1/shards/mgmt-1/cordon"},
		{"a_reversed_surrogate_pair_in_a_key_is_400", "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"r","k\udc00\ud800":1}`, 400, "k\ufffd\ufffd", audit.Completed, "/admin/v1/shards/mgmt-1/cordon"},
		{"invalid_UTF-8_in_a_key_is_400_naming_it", "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", "{\"reason\":\"r\",\"k\xff\":1}", 400, "k\ufffd", audit.Completed, "/admin/v1/shards/mgmt-1/cordon"},
		{"unknown_route_with_NUL_is_404", "bob", "GET", "/admin/v1/no%00where", "", 404, "", audit.Completed, `/admin/v1/no\x00where`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "cid-" + tc.name
			code, ae, body := e.call(t, tc.identity, tc.method, tc.path, tc.body, adminapi.HeaderCorrelationID, cid)
			if code != tc.want || (code == 400 && ae.Target != tc.target) {
				t.Fatalf("status %d target %q, want %d %q: %s", code, ae.Target, tc.want, tc.target, body)
			}
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) == 0 || recs[0].Outcome != tc.outcome || recs[0].Path != tc.recordedPath {
				t.Fatalf("audit records %+v, want the newest %s with path %q", recs, tc.outcome, tc.recordedPath)
			}
			if tc.want != 401 && recs[0].Status != tc.want {
				t.Fatalf("recorded status %d, want %d", recs[0].Status, tc.want)
			}
		})
	}
	if got := e.shardStatus(t, "mgmt-1"); got.String() != "SHARD_STATUS_ACTIVE" {
		t.Fatalf("a refused cordon changed the shard: %s", got)
	}
}

// TestDecodesAsSent: a JSON text is refused when Go's decoder would read a character other
// than the one sent (U+FFFD for a byte that is not UTF-8 or for half a surrogate pair), and
// only then.
func TestDecodesAsSent(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       bool
	}{
		{"plain", `{"reason":"disk full"}`, true},
		{"a_surrogate_pair", `{"reason":"\ud83d\ude00"}`, true},
		{"other_escapes", `{"reason":"tab\t quote\" \u00e9 \u0041"}`, true},
		{"an_escaped_backslash_then_u", `{"reason":"C:\\ud800"}`, true},
		{"U+FFFD_sent_as_such", `{"reason":"\ufffd �"}`, true},
		{"a_byte_that_is_not_UTF-8", "{\"reason\":\"\xff\"}", false},
		{"a_high_half_alone", `{"reason":"\ud800"}`, false},
		{"a_high_half_at_the_end", `"\ud83d"`, false},
		{"a_low_half_alone", `{"reason":"x\udc00y"}`, false},
		{"a_reversed_pair", `{"reason":"\ude00\ud83d"}`, false},
		{"a_high_half_then_a_letter", `{"reason":"\ud83dA"}`, false},
		{"two_high_halves_then_a_low", `{"reason":"\ud83d\ud83d\ude00"}`, false},
		{"an_escaped_backslash_then_a_half", `{"reason":"\\\ud800"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodesAsSent([]byte(tc.json)); got != tc.want {
				t.Fatalf("decodesAsSent(%s) = %v, want %v", tc.json, got, tc.want)
			}
		})
	}
}
