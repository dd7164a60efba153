package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/admin/pkg/refusallimit"
)

// TestAuditFloodIsBounded plays a caller that tries to fill the audit table: over-long
// reasons are refused with 400 and recorded truncated, refused callers' records are limited
// per source (the rest only counted), and an SRE's allowed calls are still each recorded
// before they act.
func TestAuditFloodIsBounded(t *testing.T) {
	e := start(t, func(c *Config) {
		c.RefusalAudit = refusallimit.Rates{PerSource: refusallimit.TokenBucket{PerSecond: 0.001, Burst: 6}, Total: refusallimit.Default().Total}
	})
	long := strings.Repeat("x", 100_000)
	for _, tc := range []struct {
		name, identity string
		want           int
	}{
		{"sre_with_an_over_long_reason_is_400", "bob", http.StatusBadRequest},
		{"no_certificate_with_an_over_long_reason_is_401", "", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "long-" + tc.name
			code, _, body := e.call(t, tc.identity, "GET", "/admin/v1/shards", "", adminapi.HeaderReason, long, adminapi.HeaderCorrelationID, cid)
			if code != tc.want || strings.Contains(string(body), "mgmt-1") {
				t.Fatalf("status %d, want %d: %.300s", code, tc.want, body)
			}
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) != 1 || recs[0].Status != tc.want || len(recs[0].Reason) > maxReason+len(truncatedMark) || !strings.HasSuffix(recs[0].Reason, truncatedMark) {
				t.Fatalf("want one record of the refusal with a truncated reason, got %d: %.300v", len(recs), recs)
			}
		})
	}
	t.Run("refused_callers_records_are_rate_limited_and_counted", func(t *testing.T) {
		for range 20 {
			if code, _, _ := e.call(t, "", "GET", "/admin/v1/shards", "", adminapi.HeaderCorrelationID, "flood"); code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", code)
			}
		}
		// One token of the source's bucket went to the over-long reason without a certificate;
		// bob's 400 took one of bob's own bucket (an identified person's refusals are bounded per
		// person, refusallimit.AllowRefusal), not the source's.
		if recs := e.lastAudit(t, audit.Filter{CorrelationID: "flood"}); len(recs) != 5 {
			t.Fatalf("%d records of 20 refused calls, want 5 (the bucket's rest)", len(recs))
		}
		ts := httptest.NewServer(e.srv.MetricsHandler())
		defer ts.Close()
		resp, err := ts.Client().Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "admin_audit_refusals_dropped_total 15") {
			t.Fatalf("metrics lack admin_audit_refusals_dropped_total 15:\n%s", grepLines(string(b), "admin_audit"))
		}
	})
	t.Run("an_sres_allowed_call_is_still_recorded_before_it_acts", func(t *testing.T) {
		code, _, _ := e.call(t, "alice", "POST", "/admin/v1/shards/mgmt-1/cordon", `{"reason":"after the flood"}`, adminapi.HeaderCorrelationID, "after-flood")
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "after-flood"})
		if code != 200 || len(recs) != 2 || recs[1].Outcome != audit.Allowed {
			t.Fatalf("%d %+v", code, recs)
		}
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestAuditMethodIsBounded: the catch-all route takes any method token, so a caller with or
// without a certificate could put a method of a megabyte into the audit record; it is recorded
// cut at maxMethod (with truncatedMark), in the call's record and its completion's, while an
// extension method is recorded whole.
func TestAuditMethodIsBounded(t *testing.T) {
	e := start(t)
	long := strings.Repeat("X", 100_000)
	for _, tc := range []struct {
		name, identity, method, want string
	}{
		{"no_certificate_long_method_is_cut", "", long, long[:maxMethod] + truncatedMark},
		{"sre_long_method_is_cut", "bob", long, long[:maxMethod] + truncatedMark},
		{"sre_extension_method_is_whole", "bob", "PROPFIND", "PROPFIND"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "method-" + tc.name
			code, _, _ := e.call(t, tc.identity, tc.method, "/admin/v1/nowhere", "", adminapi.HeaderCorrelationID, cid)
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) == 0 || recs[0].Status != code {
				t.Fatalf("status %d; want its record, got %.300v", code, recs)
			}
			for _, rec := range recs { // an allowed call's record and its completion's
				if rec.Method != tc.want {
					t.Fatalf("recorded the method %.60q… (%d bytes), want %.60q…", rec.Method, len(rec.Method), tc.want)
				}
			}
		})
	}
}

// TestAuditTargetFromThePathIsBounded: a route's target taken from the path (a cluster ID, a
// must-gather's) is recorded cut at maxPath, as the path is, in the call's record and its
// completion's: a probe of a running region had any SRE, read-only included, store 60,000
// characters of target twice per call, past the path's own bound. The 400 that refuses such an
// ID does not echo it whole either.
func TestAuditTargetFromThePathIsBounded(t *testing.T) {
	e := start(t)
	long := strings.Repeat("b", 60_000)
	for _, tc := range []struct {
		name, path string
	}{
		{"cluster", "/admin/v1/clusters/" + long},
		{"must_gather", "/admin/v1/must-gather/" + long},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cid := "target-" + tc.name
			code, _, body := e.call(t, "alice", "GET", tc.path, "", adminapi.HeaderCorrelationID, cid)
			if code != http.StatusBadRequest {
				t.Fatalf("GET of a 60,000-character ID: %d %.200s, want 400", code, body)
			}
			if len(body) > 4*maxPath {
				t.Fatalf("the 400 is %d bytes: it echoes the ID", len(body))
			}
			recs := e.lastAudit(t, audit.Filter{CorrelationID: cid})
			if len(recs) == 0 {
				t.Fatal("no audit record")
			}
			for _, rec := range recs {
				if want := long[:maxPath] + truncatedMark; rec.Target != want {
					t.Fatalf("recorded a target of %d bytes (%.40q…), want it cut at %d with the mark", len(rec.Target), rec.Target, maxPath)
				}
			}
		})
	}
}

// TestRefusalRecordsAreBoundedWhateverTheSources: a local user can send from any of
// 127.0.0.0/8 and a host may hold an IPv6 /64, so a bucket per address alone does not bound
// the records a caller without a certificate can make. Loopback is one source and IPv6 counts
// by its /64; and all sources together get at most the total bucket's records (the clock
// stands still here, so that is its burst).
func TestRefusalRecordsAreBoundedWhateverTheSources(t *testing.T) {
	fixed := time.Now()
	rates := refusallimit.Default()
	for _, tc := range []struct {
		name    string
		sources int
		addr    func(i int) string
		atMost  int
	}{
		{"20000_loopback_addresses_are_one_source", 20_000, func(i int) string {
			return fmt.Sprintf("127.%d.%d.%d:40000", (i>>16)&255, (i>>8)&255, i&255)
		}, rates.PerSource.Burst},
		{"2000_addresses_of_one_ipv6_64_are_one_source", 2_000, func(i int) string { return fmt.Sprintf("[2001:db8::%x]:40000", i+1) }, rates.PerSource.Burst},
		{"20000_ipv4_addresses_get_the_total_bucket", 20_000, func(i int) string {
			return fmt.Sprintf("10.%d.%d.%d:40000", (i>>16)&255, (i>>8)&255, i&255)
		}, rates.Total.Burst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, func(c *Config) { c.Now = func() time.Time { return fixed } })
			h := e.srv.Handler()
			for i := range tc.sources {
				r := httptest.NewRequest(http.MethodGet, "/admin/v1/shards", nil)
				r.RemoteAddr = tc.addr(i)
				r.Header.Set(adminapi.HeaderCorrelationID, "sources")
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusUnauthorized {
					t.Fatalf("request %d: %d, want 401", i, w.Code)
				}
			}
			got := countAudit(t, e, audit.Filter{CorrelationID: "sources"})
			if got == 0 || got > tc.atMost {
				t.Fatalf("%d refused requests from %d addresses left %d audit records, want 1 to %d", tc.sources, tc.sources, got, tc.atMost)
			}
		})
	}
}

// countAudit counts the records matching f, page by page.
func countAudit(t *testing.T, e *env, f audit.Filter) int {
	t.Helper()
	f.Limit = 1000
	n := 0
	for {
		page, next, err := e.log.Query(context.Background(), f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page)
		if next == "" {
			return n
		}
		f.PageToken = next
	}
}

// TestUnidentifiedRefusalEndsItsConnection: a refused caller without an identity gets its
// answer and the end of its connection, so it cannot hold connections with one refused call
// every idle period; an SRE's calls keep theirs.
func TestUnidentifiedRefusalEndsItsConnection(t *testing.T) {
	e := start(t)
	for _, tc := range []struct {
		name, identity string
		status         int
		closed         bool
	}{
		{"no_certificate", "", http.StatusUnauthorized, true},
		{"sre", "bob", http.StatusOK, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", e.url+"/admin/v1/shards", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := e.as(t, tc.identity).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || resp.Close != tc.closed {
				t.Fatalf("status %d, connection closed %v; want %d, %v", resp.StatusCode, resp.Close, tc.status, tc.closed)
			}
		})
	}
}
