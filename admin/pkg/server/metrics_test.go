package server

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetrics drives calls of each outcome through the real middleware and reads them back
// from /metrics in the Prometheus text format.
func TestMetrics(t *testing.T) {
	e := start(t)
	scrape := func(t *testing.T) string {
		t.Helper()
		ts := httptest.NewServer(e.srv.MetricsHandler())
		defer ts.Close()
		resp, err := ts.Client().Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	e.call(t, "", "GET", "/admin/v1/shards", "")
	e.call(t, "bob", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"r"}`)
	e.call(t, "bob", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"r"}`)
	e.call(t, "bob", "GET", "/admin/v1/shards", "")
	e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{}`)
	before := scrape(t)
	for _, want := range []string{
		`admin_http_requests_total{code="401",method="GET",outcome="unauthenticated",route="GET /admin/v1/shards"} 1`,
		`admin_http_requests_total{code="403",method="POST",outcome="forbidden",route="POST /admin/v1/shards/{name}/cordon"} 2`,
		`admin_http_requests_total{code="200",method="GET",outcome="allowed",route="GET /admin/v1/shards"} 1`,
		`admin_http_requests_total{code="400",method="POST",outcome="completed",route="POST /admin/v1/shards/{name}/cordon"} 1`,
		`admin_http_request_duration_seconds_count{code="200",method="GET",route="GET /admin/v1/shards"} 1`,
		`admin_refusals_total{code="401"} 1`,
		`admin_refusals_total{code="403"} 2`,
		`admin_audit_write_failures_total{stage="before"} 0`,
	} {
		if !strings.Contains(before, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("metrics:\n%s", before)
	}
	// The audit database is gone: the call is refused and counted. (An SRE's call meets the
	// unreadable revocation list first, and then cannot be audited either: the same 503.)
	e.log.Close()
	if code, _, _ := e.call(t, "", "GET", "/admin/v1/shards", ""); code != 503 {
		t.Fatalf("status %d, want 503", code)
	}
	after := scrape(t)
	for _, want := range []string{
		`admin_audit_write_failures_total{stage="before"} 1`,
		`admin_http_requests_total{code="503",method="GET",outcome="audit_unavailable",route="GET /admin/v1/shards"} 1`,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("metrics lack %s:\n%s", want, after)
		}
	}
	if code, _, _ := e.call(t, "alice", "GET", "/admin/v1/shards", ""); code != 503 {
		t.Fatalf("status %d, want 503", code)
	}
	after = scrape(t)
	for _, want := range []string{
		`admin_http_requests_total{code="503",method="GET",outcome="audit_unavailable",route="GET /admin/v1/shards"} 2`,
	} {
		if !strings.Contains(after, want) {
			t.Errorf("metrics lack %s:\n%s", want, after)
		}
	}
	// A method of the caller's own, sent without a credential, adds no series of its own: the
	// method is any token a caller sends.
	e.call(t, "", "NOCERT1", "/admin/v1/shards", "")
	e.call(t, "", "NOCERT2", "/x", "")
	if after = scrape(t); strings.Contains(after, "NOCERT") || !strings.Contains(after, `method="other"`) {
		t.Errorf("metrics take a method of the caller's own as a label:\n%s", after)
	}
}
