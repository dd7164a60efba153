package gateway

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/session"
)

// TestGatewayRefusesBrowsers: a page of another site can make an SRE's browser send a request
// with their certificate, a WebSocket (exec, watch) included, which no CORS rule stops and the
// hosted kube-apiserver does not check; kubectl and client-go send neither Origin nor
// Sec-Fetch-Site. So every request that carries an Origin, or a Sec-Fetch-Site other than
// none, is refused with 403 and audited, before its session is read; the others are proxied.
func TestGatewayRefusesBrowsers(t *testing.T) {
	e := newEnv(t)
	live := e.open(t, "alice", session.AccessAdmin, time.Now().Add(time.Hour))
	review := "/apis/authentication.k8s.io/v1/selfsubjectreviews"
	websocket := []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", "v4.channel.k8s.io"}
	for _, tc := range []struct {
		name, method, session, path string
		header                      []string
		want                        int
	}{
		{"websocket_watch_with_a_foreign_origin_is_403", "GET", live.ID, "/api/v1/namespaces/default/configmaps?watch=1",
			append([]string{"Origin", "https://evil.example"}, websocket...), http.StatusForbidden},
		{"websocket_exec_with_a_foreign_origin_is_403", "GET", live.ID, "/api/v1/namespaces/default/pods/p/exec?command=sh&stdin=1&stdout=1",
			append([]string{"Origin", "https://evil.example"}, websocket...), http.StatusForbidden},
		{"get_with_an_origin_is_403", "GET", live.ID, "/api/v1/namespaces/default/configmaps", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"post_with_origin_null_is_403", "POST", live.ID, review, []string{"Origin", "null"}, http.StatusForbidden},
		{"sec_fetch_site_cross_site_is_403", "POST", live.ID, review, []string{"Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"sec_fetch_site_same_site_is_403", "POST", live.ID, review, []string{"Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"sec_fetch_site_same_origin_is_403", "POST", live.ID, review, []string{"Sec-Fetch-Site", "same-origin"}, http.StatusForbidden},
		{"origin_on_an_unknown_session_is_403_not_404", "GET", "no-such-session", "/api/v1/namespaces", []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"sec_fetch_site_none_is_proxied", "POST", live.ID, review, []string{"Sec-Fetch-Site", "none"}, http.StatusCreated},
		{"no_browser_headers_is_proxied", "POST", live.ID, review, nil, http.StatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "browser-" + tc.name
			var body *strings.Reader
			if tc.method == "POST" {
				body = strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
			} else {
				body = strings.NewReader("")
			}
			req, _ := http.NewRequest(tc.method, e.srv.URL+"/sessions/"+tc.session+tc.path, body)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(adminapi.HeaderCorrelationID, cid)
			for i := 0; i+1 < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := e.client("alice").Do(req)
			if err != nil {
				t.Fatal(err)
			}
			msg := readAll(t, resp)
			if resp.StatusCode != tc.want {
				t.Fatalf("answer %d %.300s, want %d", resp.StatusCode, msg, tc.want)
			}
			recs, _, err := e.audit.Query(context.Background(), audit.Filter{CorrelationID: cid})
			// A refusal is one record; a proxied request two (allowed before it is sent, then
			// its answer), newest first.
			records := map[bool]int{true: 1, false: 2}[tc.want == http.StatusForbidden]
			if err != nil || len(recs) != records || recs[0].Person != "alice" || recs[0].Status != tc.want {
				t.Fatalf("audit records %+v, %v: want %d naming alice, the newest with %d", recs, err, records, tc.want)
			}
			if tc.want == http.StatusForbidden && (recs[0].Outcome != audit.Forbidden || !strings.Contains(msg, "browser")) {
				t.Fatalf("refusal %.300s recorded as %q: want a forbidden record and a message naming the browser rule", msg, recs[0].Outcome)
			}
		})
	}
}
