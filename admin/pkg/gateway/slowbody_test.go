package gateway

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestGatewayAnswersWithoutWaitingForAnUnreadBody: a request the gateway answers without
// reading its body (a refusal, an unknown path) is answered while the body is still coming,
// and its connection is closed. Before, net/http read what was left of the body (up to
// 256 KiB, with no read timeout on this listener) before it sent the answer, so a body sent a
// byte at a time held the connection for ever, and enough of them every connection of the
// replica, with any person certificate, a revoked one included.
func TestGatewayAnswersWithoutWaitingForAnUnreadBody(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, path string
		want       int
		noBody     bool
	}{
		{"unknown_session", "/sessions/no-such-session/api/v1/namespaces/default/configmaps", http.StatusNotFound, false},
		{"unknown_path", "/elsewhere", http.StatusNotFound, false},
		{"from_a_browser", "/sessions/no-such-session/api", http.StatusForbidden, false},
		// A refusal without a body ends its connection too: kept alive by one refused request
		// every idle period, enough of them held every connection of the replica.
		{"refused_get_on_a_kept_alive_connection", "/sessions/no-such-session/api", http.StatusNotFound, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.srv.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
			cfg.Certificates = []tls.Certificate{e.persons["alice"]}
			cfg.NextProtos = []string{"http/1.1"}
			conn, err := tls.Dial("tcp", e.srv.Listener.Addr().String(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			origin := ""
			if tc.want == http.StatusForbidden {
				origin = "Origin: https://evil.example\r\n"
			}
			// 100,000 bytes promised, 5 sent: the rest never comes.
			req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n%sContent-Length: 100000\r\n\r\n{\"a\":", tc.path, origin)
			if tc.noBody {
				req = fmt.Sprintf("GET %s HTTP/1.1\r\nHost: gateway\r\n%s\r\n", tc.path, origin)
			}
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			// Generous for a busy machine; the body would never end.
			_ = conn.SetReadDeadline(time.Now().Add(60 * time.Second))
			r := bufio.NewReader(conn)
			resp, err := http.ReadResponse(r, nil)
			if err != nil {
				t.Fatalf("no answer while the body is incomplete: %v", err)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatalf("read the answer: %v", err)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("answer %d, want %d", resp.StatusCode, tc.want)
			}
			if _, err := r.ReadByte(); err == nil {
				t.Fatal("the connection carries more after the answer; want it closed")
			} else if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatalf("the connection stays open after the answer: %v", err)
			}
		})
	}
}
