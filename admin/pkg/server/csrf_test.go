package server

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
)

var csrfFieldRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// portalToken is the anti-forgery token a portal page gives identity's forms.
func (e *env) portalToken(t *testing.T, identity string) string {
	t.Helper()
	code, _, body := e.call(t, identity, "GET", "/portal/shards", "")
	m := csrfFieldRE.FindSubmatch(body)
	if code != 200 || m == nil {
		t.Errorf("the shards page (%d) has no csrf field: %.400s", code, body)
		return strings.Repeat("A", 54)
	}
	return string(m[1])
}

// flipped is tok with one character of its MAC changed.
func flipped(tok string) string {
	c := byte('A')
	if tok[20] == 'A' {
		c = 'B'
	}
	return tok[:20] + string(c) + tok[21:]
}

// TestCrossSiteRequestsAreRefused plays a page of another site that makes an SRE's browser (or
// hcpctl portal, which adds the SRE's certificate) send a mutating request: every such request
// is a 403, recorded in the audit log, and changes nothing; hcpctl's calls and the portal's own
// forms still work.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	e := start(t)
	clusterID, _, _ := seedCluster(t, e)
	readyCluster(t, e, clusterID)
	origin := "https://" + strings.TrimPrefix(e.url, "https://")
	form := "application/x-www-form-urlencoded"
	token := e.portalToken(t, "alice")
	cordon := `{"reason":"forged"}`
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
	}{
		{"text_plain_json_without_client_header", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon,
			[]string{"Content-Type", "text/plain", adminapi.HeaderClient, ""}},
		{"json_without_client_header", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon,
			[]string{adminapi.HeaderClient, ""}},
		{"text_plain_with_client_header", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon,
			[]string{"Content-Type", "text/plain"}},
		{"cross_site_origin", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon,
			[]string{"Origin", "https://evil.example"}},
		{"sec_fetch_site_cross_site", "POST", "/admin/v1/shards/mgmt-1/cordon", cordon,
			[]string{"Sec-Fetch-Site", "cross-site"}},
		{"sec_fetch_site_same_site_from_elsewhere", "PUT", "/admin/v1/shards/mgmt-1/status", `{"reason":"forged","status":"offline"}`,
			[]string{"Sec-Fetch-Site", "same-site", "Origin", "https://other.example.test"}},
		{"breakglass_mint_text_plain", "POST", "/admin/v1/breakglass/" + clusterID, `{"reason":"forged","access":"admin"}`,
			[]string{"Content-Type", "text/plain", adminapi.HeaderClient, ""}},
		{"revocation_text_plain", "POST", "/admin/v1/revocations/bob", `{"reason":"forged"}`,
			[]string{"Content-Type", "text/plain", adminapi.HeaderClient, ""}},
		{"portal_form_without_token", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged",
			[]string{"Content-Type", form, "Origin", origin}},
		{"portal_form_with_a_made_up_token", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + flipped(token),
			[]string{"Content-Type", form, "Origin", origin}},
		{"portal_form_with_token_from_a_cross_site_page", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Content-Type", form, "Origin", origin, "Sec-Fetch-Site", "cross-site"}},
		{"portal_form_with_token_from_another_origin", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Content-Type", form, "Origin", "http://127.0.0.1:1"}},
		{"portal_form_with_null_origin_from_another_site", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Content-Type", form, "Origin", "null"}},
		{"portal_form_with_null_origin_cross_site", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Content-Type", form, "Origin", "null", "Sec-Fetch-Site", "cross-site"}},
		{"portal_breakglass_request_without_token", "POST", "/portal/breakglass/request", "reason=forged&access=admin&cluster=" + clusterID,
			[]string{"Content-Type", form, "Origin", origin}},
		{"unknown_route_post_without_client_header", "POST", "/admin/v1/nothing", cordon,
			[]string{adminapi.HeaderClient, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "csrf-" + tc.name
			code, _, body := e.call(t, "alice", tc.method, tc.path, tc.body, append(tc.hdr, adminapi.HeaderCorrelationID, cid)...)
			if code != http.StatusForbidden {
				t.Fatalf("status %d, want 403: %.300s", code, body)
			}
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) != 1 || recs[0].Outcome != audit.Forbidden || recs[0].Status != http.StatusForbidden || recs[0].Person != "alice" {
				t.Fatalf("audit records %+v, want one forbidden 403 by alice", recs)
			}
		})
	}
	if got := e.shardStatus(t, "mgmt-1"); got != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
		t.Fatalf("a forged call changed the shard: %s", got)
	}
	if code, _, body := e.call(t, "bob", "GET", "/admin/v1/shards", ""); code != 200 {
		t.Fatalf("a forged revocation took effect: bob gets %d %s", code, body)
	}
	var list adminapi.BreakGlassSessions
	if code, _, body := e.call(t, "alice", "GET", "/admin/v1/breakglass", ""); code != 200 || json.Unmarshal(body, &list) != nil || len(list.Sessions) != 0 {
		t.Fatalf("a forged break-glass request opened a session: %d %s", code, body)
	}

	t.Run("a_forged_breakglass_revoke_revokes_nothing", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		signed := make(chan struct{})
		go func() { defer close(signed); signPending(ctx, t, e.csdb) }()
		t.Cleanup(func() { cancel(); <-signed })
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/breakglass/"+clusterID, `{"reason":"incident","access":"read-only"}`)
		var cred adminapi.BreakGlassSession
		if code/100 != 2 || json.Unmarshal(body, &cred) != nil || cred.ID == "" {
			t.Fatalf("hcpctl-style request: %d %s", code, body)
		}
		for _, hdr := range [][]string{
			{"Content-Type", "text/plain", adminapi.HeaderClient, ""},
			{"Origin", "https://evil.example"},
		} {
			if code, _, body := e.call(t, "alice", "POST", "/admin/v1/breakglass-revoke", `{"session":"`+cred.ID+`","reason":"forged"}`, hdr...); code != 403 {
				t.Fatalf("forged revoke %v: %d %s", hdr, code, body)
			}
		}
		if code, _, body := e.call(t, "alice", "POST", "/portal/breakglass/revoke", "reason=forged&session="+cred.ID, "Content-Type", form, "Origin", origin); code != 403 {
			t.Fatalf("forged portal revoke: %d %s", code, body)
		} else if page := string(body); strings.Contains(page, "Your group may not do this") || !strings.Contains(page, "a form of its own page") {
			// alice's group may revoke: the page must say what was wrong, not blame the group.
			t.Fatalf("the forged portal revoke's page tells of the group's permission, not the forgery: %s", page)
		}
		code, _, body = e.call(t, "alice", "GET", "/admin/v1/breakglass", "")
		if code != 200 || !strings.Contains(string(body), cred.ID) {
			t.Fatalf("the session was revoked by a forged call: %d %s", code, body)
		}
	})

	t.Run("hcpctl_and_the_portal_forms_still_work", func(t *testing.T) {
		if code, _, body := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-2/cordon", `{"reason":"real"}`); code != 200 {
			t.Fatalf("hcpctl-style cordon: %d %s", code, body)
		}
		code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-2/uncordon", "reason=real&csrf="+token, "Content-Type", form, "Origin", origin, "Sec-Fetch-Site", "same-origin")
		if code != 200 || e.shardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
			t.Fatalf("portal uncordon: %d %.300s", code, body)
		}
		// As a browser posts the portal's own form under its no-referrer policy.
		code, _, body = e.call(t, "alice", "POST", "/portal/shards/mgmt-2/cordon", "reason=real&csrf="+token, "Content-Type", form, "Origin", "null", "Sec-Fetch-Site", "same-origin")
		if code != 200 || e.shardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
			t.Fatalf("portal cordon with Origin null from the same origin: %d %.300s", code, body)
		}
	})

	t.Run("another_sres_token_is_refused", func(t *testing.T) {
		bobs := e.portalToken(t, "bob")
		if code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf="+bobs, "Content-Type", form, "Origin", origin); code != 403 {
			t.Fatalf("%d %.300s", code, body)
		}
	})
}

// TestCrossSiteLoadsAreRefused: a page of another site that makes the SRE's browser load an
// admin URL (an <img>, fetch with no-cors) gets 403, audited as forbidden; a top-level
// navigation from elsewhere and a client without Sec-Fetch headers are served.
func TestCrossSiteLoadsAreRefused(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"img_from_another_site", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "no-cors"}, http.StatusForbidden},
		{"fetch_from_another_site", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "cors"}, http.StatusForbidden},
		{"link_followed_from_another_site", []string{"Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"}, http.StatusOK},
		{"own_page", []string{"Sec-Fetch-Site", "same-origin", "Sec-Fetch-Mode", "cors"}, http.StatusOK},
		{"hcpctl", nil, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.call(t, "bob", http.MethodGet, "/admin/v1/shards", "", tc.hdr...)
			if code != tc.want {
				t.Fatalf("%d, want %d: %.300s", code, tc.want, body)
			}
		})
	}
}

// TestOversizedFormIsTooLarge: a portal form (or an API body) larger than the admin API reads is
// 413 saying the form is too large, whatever its token and wherever the token sits in it, and
// does nothing; it is not taken for a forgery (the check would read a truncated form).
func TestOversizedFormIsTooLarge(t *testing.T) {
	e := start(t)
	origin := "https://" + strings.TrimPrefix(e.url, "https://")
	form := "application/x-www-form-urlencoded"
	token := e.portalToken(t, "alice")
	pad := strings.Repeat("x", maxBody)
	for _, tc := range []struct {
		name, path, body string
		hdr              []string
	}{
		{"portal_token_first", "/portal/shards/mgmt-1/cordon", "csrf=" + token + "&reason=r&pad=" + pad, []string{"Content-Type", form, "Origin", origin}},
		{"portal_token_last", "/portal/shards/mgmt-1/cordon", "reason=r&pad=" + pad + "&csrf=" + token, []string{"Content-Type", form, "Origin", origin}},
		{"portal_reason_too_large", "/portal/shards/mgmt-1/cordon", "csrf=" + token + "&reason=" + pad, []string{"Content-Type", form, "Origin", "null", "Sec-Fetch-Site", "same-origin"}},
		{"api_body", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"` + pad + `"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.call(t, "alice", "POST", tc.path, tc.body, tc.hdr...)
			if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "too large") || strings.Contains(string(body), "token") {
				t.Fatalf("%d %.400s; want 413 saying the form is too large", code, body)
			}
			if st := e.shardStatus(t, "mgmt-1"); st != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
				t.Fatalf("an oversized form acted: shard mgmt-1 is %s", st)
			}
		})
	}
}

// TestOwnOriginIsConfiguredNotTheHostHeader: the admin API's own origin is its configured URL,
// not the request's Host. A page of another name made to resolve to the admin API's address
// (DNS rebinding) reaches it with that name in Host and in Origin, and the browser says
// same-origin: its form or API call is refused all the same and does nothing.
func TestOwnOriginIsConfiguredNotTheHostHeader(t *testing.T) {
	e := start(t)
	form := "application/x-www-form-urlencoded"
	token := e.portalToken(t, "alice")
	_, port, _ := strings.Cut(strings.TrimPrefix(e.url, "https://"), ":")
	evil := "rebound.evil.example:" + port
	for _, tc := range []struct {
		name, path, body string
		hdr              []string
	}{
		{"portal_form", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Host", evil, "Origin", "https://" + evil, "Sec-Fetch-Site", "same-origin", "Content-Type", form, adminapi.HeaderClient, ""}},
		{"api_call", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"forged"}`,
			[]string{"Host", evil, "Origin", "https://" + evil, "Sec-Fetch-Site", "same-origin"}},
		// The rebound page chooses its own Referrer-Policy: under no-referrer the browser sends
		// "Origin: null" on its same-origin POST, and Sec-Fetch-Site still says same-origin
		// (same as the page's own origin, which is the rebound name in Host).
		{"portal_form_origin_null", "/portal/shards/mgmt-1/cordon", "reason=forged&csrf=" + token,
			[]string{"Host", evil, "Origin", "null", "Sec-Fetch-Site", "same-origin", "Content-Type", form, adminapi.HeaderClient, ""}},
		{"api_call_origin_null", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"forged"}`,
			[]string{"Host", evil, "Origin", "null", "Sec-Fetch-Site", "same-origin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.call(t, "alice", "POST", tc.path, tc.body, tc.hdr...)
			if code != http.StatusForbidden || !strings.Contains(string(body), "Origin") {
				t.Fatalf("%d %.300s; want 403 naming Origin", code, body)
			}
			if st := e.shardStatus(t, "mgmt-1"); st != csv1.ShardStatus_SHARD_STATUS_ACTIVE {
				t.Fatalf("a rebound request acted: shard mgmt-1 is %s", st)
			}
		})
	}
	// The configured origin still posts.
	code, _, body := e.call(t, "alice", "POST", "/portal/shards/mgmt-2/cordon", "reason=real&csrf="+token, "Content-Type", form, "Origin", e.url, "Sec-Fetch-Site", "same-origin")
	if code != 200 || e.shardStatus(t, "mgmt-2") != csv1.ShardStatus_SHARD_STATUS_MAINTENANCE {
		t.Fatalf("portal cordon from the configured origin: %d %.300s", code, body)
	}
}
