package armclient

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// step is one answer of the test server: status, Retry-After (empty: none) and body.
type step struct {
	status     int
	retryAfter string
	body       string
}

// TestRetryDo runs the retry policy against a real HTTP server on loopback that answers a
// scripted sequence, and checks what the caller gets back and what the server saw.
func TestRetryDo(t *testing.T) {
	for _, tc := range []struct {
		name         string
		steps        []step
		retryFor     time.Duration
		wantStatus   int
		wantAttempts int
		wantUnseen   bool
		wantErr      string
	}{
		{name: "429_with_retry_after_is_sent_again", steps: []step{{429, "1", `{"error":{}}`}, {201, "", `{"id":"x"}`}}, retryFor: time.Minute, wantStatus: 201, wantAttempts: 2},
		{name: "503_is_sent_again_and_may_have_taken_effect", steps: []step{{503, "", ""}, {200, "", `{"id":"x"}`}}, retryFor: time.Minute, wantStatus: 200, wantAttempts: 2, wantUnseen: true},
		{name: "a_client_error_is_not_sent_again", steps: []step{{400, "", `{"error":{"code":"InvalidRequestContent"}}`}}, retryFor: time.Minute, wantStatus: 400, wantAttempts: 1},
		{name: "after_the_retry_time_the_last_answer_is_returned", steps: []step{{500, "", ""}}, retryFor: 0, wantStatus: 500, wantAttempts: 1},
		{name: "a_body_that_is_not_json_is_an_error", steps: []step{{200, "", "<html>"}}, retryFor: time.Minute, wantStatus: 200, wantAttempts: 1, wantErr: "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var reqs []*http.Request
			var bodies []map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				n := len(reqs)
				reqs = append(reqs, r)
				var b map[string]any
				_ = json.NewDecoder(r.Body).Decode(&b)
				bodies = append(bodies, b)
				mu.Unlock()
				s := tc.steps[min(n, len(tc.steps)-1)]
				if s.retryAfter != "" {
					w.Header().Set("Retry-After", s.retryAfter)
				}
				w.WriteHeader(s.status)
				_, _ = w.Write([]byte(s.body))
			}))
			defer srv.Close()
			var seen []int
			p := Retry{For: tc.retryFor, First: 10 * time.Millisecond, Max: 40 * time.Millisecond, Seen: func(r Response) { seen = append(seen, r.Status) }}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r, unseen := p.Do(ctx, srv.Client(), http.MethodPut, srv.URL+"/c?api-version=x", map[string]any{"location": "eastus"})
			if r.Status != tc.wantStatus || unseen != tc.wantUnseen || len(reqs) != tc.wantAttempts || len(seen) != tc.wantAttempts {
				t.Fatalf("status %d, unseen %v, %d attempts (%d seen); want %d, %v, %d", r.Status, unseen, len(reqs), len(seen), tc.wantStatus, tc.wantUnseen, tc.wantAttempts)
			}
			if tc.wantErr != "" {
				if r.Err == nil || !strings.Contains(r.Err.Error(), tc.wantErr) {
					t.Fatalf("Err = %v, want one containing %q", r.Err, tc.wantErr)
				}
			} else if r.Err != nil {
				t.Fatalf("Err = %v", r.Err)
			}
			if tc.wantErr == "" && tc.wantStatus < 300 && r.Body["id"] != "x" {
				t.Errorf("Body = %v, want the answer's JSON object", r.Body)
			}
			ids := map[string]bool{}
			for i, req := range reqs {
				id := req.Header.Get("x-ms-client-request-id")
				if id == "" || ids[id] || req.Header.Get("x-ms-correlation-request-id") == "" || req.Header.Get("Content-Type") != "application/json" {
					t.Errorf("attempt %d headers %v: want new request and correlation IDs and a JSON content type", i, req.Header)
				}
				ids[id] = true
				if bodies[i]["location"] != "eastus" {
					t.Errorf("attempt %d body %v, want the request's body each time", i, bodies[i])
				}
			}
		})
	}
}

// TestNoAnswer: a port nobody listens on gives status 0, the reason, and a retryable answer
// that may have taken effect.
func TestNoAnswer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := Do(context.Background(), &http.Client{Timeout: 10 * time.Second}, http.MethodGet, "http://"+addr+"/", nil)
	if r.Status != 0 || r.Err == nil || r.Raw == "" || !r.Retryable() || !r.Unseen() {
		t.Fatalf("answer %+v, want status 0 with the error, retryable and unseen", r)
	}
}

func TestClusterBody(t *testing.T) {
	b := ClusterBody("eastus", "sub", "rg", map[string]string{"purpose": "test"})
	raw, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"location":"eastus"`, `"managedResourceGroup":"managed-rg"`, `"purpose":"test"`,
		`/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/service`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("body %s lacks %s", raw, want)
		}
	}
	if _, ok := ClusterBody("eastus", "sub", "rg", nil)["tags"]; ok {
		t.Error("a body without tags has a tags property")
	}
	if got := ClusterPath("s", "r", "c"); got != "/subscriptions/s/resourceGroups/r/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c" {
		t.Errorf("ClusterPath = %s", got)
	}
}
