package frontend

import (
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/arm"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestRequestIDHeadersAreBounded: x-ms-correlation-request-id and x-ms-client-request-id are
// kept when they are a GUID or a short token, and otherwise replaced by a fresh GUID (logged,
// naming the header and the length): the value that reaches the logs, the operation document,
// Cluster Service's metadata and the response headers is always bounded.
func TestRequestIDHeadersAreBounded(t *testing.T) {
	long := strings.Repeat("x", 100000)
	for _, tc := range []struct {
		name     string
		value    string
		replaced bool
	}{
		{"guid_is_kept", "6f1c0d6e-3f3a-4c55-9b58-1f5a3c1b2a9e", false},
		{"upper_case_guid_is_kept", "6F1C0D6E-3F3A-4C55-9B58-1F5A3C1B2A9E", false},
		{"short_token_is_kept", "corr-1", false},
		{"token_at_the_limit_is_kept", strings.Repeat("a", maxRequestIDLength), false},
		{"token_over_the_limit_is_replaced", strings.Repeat("a", maxRequestIDLength+1), true},
		{"100k_value_is_replaced", long, true},
		{"spaces_are_replaced", "corr id", true},
		{"non_ascii_is_replaced", "corr-ünïcode", true},
		{"quotes_are_replaced", `corr"1`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			e := newEnv(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
			path := clusterPath("rg", "ids")
			resp := e.do("PUT", path, mustJSON(minimalBody()), map[string]string{
				"x-ms-correlation-request-id": tc.value, "x-ms-client-request-id": tc.value,
			})
			if resp.code != 201 {
				t.Fatalf("PUT: %d %s", resp.code, resp.body)
			}
			corr, client := resp.header.Get("x-ms-correlation-request-id"), resp.header.Get("x-ms-client-request-id")
			op, _ := e.operation(opIDFrom(t, resp.header.Get("Azure-AsyncOperation")))
			_, _, mds := e.cs.snapshot()
			md := mds[len(mds)-1]
			if tc.replaced {
				if !guidRE.MatchString(corr) || !guidRE.MatchString(client) || corr == client {
					t.Fatalf("response IDs %.60q, %.60q; want two fresh GUIDs", corr, client)
				}
				if !strings.Contains(logs.String(), `"header":"X-Ms-Correlation-Request-Id"`) || !strings.Contains(logs.String(), `"header":"X-Ms-Client-Request-Id"`) {
					t.Fatalf("no log line names the replaced headers:\n%.3000s", logs.String())
				}
				if len(tc.value) > 8 && strings.Contains(logs.String(), tc.value) {
					t.Fatal("the unusable value reached the log")
				}
			} else if corr != tc.value || client != tc.value {
				t.Fatalf("response IDs %.60q, %.60q; want %.60q kept", corr, client, tc.value)
			}
			if op == nil || op.CorrelationID != corr {
				t.Fatalf("operation document correlation ID %.60v, want %.60q", op, corr)
			}
			if got := md.Get("x-ms-correlation-request-id"); len(got) != 1 || got[0] != corr {
				t.Fatalf("Cluster Service metadata correlation ID %v, want %q", got, corr)
			}
			if got := md.Get("x-ms-client-request-id"); len(got) != 1 || got[0] != client {
				t.Fatalf("Cluster Service metadata client request ID %v, want %q", got, client)
			}
			if !strings.Contains(logs.String(), `"correlationRequestID":"`+corr+`"`) {
				t.Fatalf("request log lacks the correlation ID %q", corr)
			}
		})
	}
}

// TestHomeTenantHeader: x-ms-home-tenant-id must be a GUID; one that differs from the
// registration's tenant is served (ARO HCP does not compare them; docs/api.md) and logged.
func TestHomeTenantHeader(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnv(t, func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	registered := "72f988bf-0000-0000-0000-000000000000" // newEnv's registration
	for _, tc := range []struct {
		name     string
		value    string
		wantCode int
	}{
		{"registered_tenant_is_served", registered, 404},
		{"registered_tenant_in_upper_case_is_served", strings.ToUpper(registered), 404},
		{"absent_header_is_served", "", 404},
		{"other_tenant_guid_is_served_and_logged", "0b1e9a5c-1111-4222-8333-944455556666", 404},
		{"not_a_guid_is_refused", "tenant-one", 400},
		{"overlong_value_is_refused", strings.Repeat("7", 5000), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do("GET", clusterPath("rg", "absent"), nil, map[string]string{"x-ms-home-tenant-id": tc.value})
			if resp.code != tc.wantCode {
				t.Fatalf("GET: %d %s, want %d", resp.code, resp.body, tc.wantCode)
			}
			if tc.wantCode == 400 {
				if code, _ := resp.armError(t); code != "InvalidParameter" || strings.Contains(string(resp.body), tc.value) {
					t.Fatalf("refusal %s; want InvalidParameter without the value", resp.body)
				}
			}
		})
	}
	if !strings.Contains(logs.String(), `"homeTenantID":"0b1e9a5c-1111-4222-8333-944455556666"`) {
		t.Fatalf("the differing tenant was not logged:\n%.3000s", logs.String())
	}
}

// FuzzRequestIDHeader: whatever the header holds, what goes further is usable and bounded; a
// kept value is the header's own, and a replacement is a GUID.
func FuzzRequestIDHeader(f *testing.F) {
	for _, s := range []string{"", "corr-1", "6f1c0d6e-3f3a-4c55-9b58-1f5a3c1b2a9e", "{6f1c0d6e}", "a b", "ü", strings.Repeat("a", 129)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header[arm.HeaderCorrelationRequestID] = []string{v}
		id, replacedLen := requestIDHeader(r, arm.HeaderCorrelationRequestID)
		if !usableRequestID(id) || len(id) > maxRequestIDLength {
			t.Fatalf("requestIDHeader(%q) = %q, not usable", v, id)
		}
		if replacedLen == 0 && id != v || replacedLen > 0 && (!isGUID(id) || replacedLen != len(v)) {
			t.Fatalf("requestIDHeader(%q) = %q, %d", v, id, replacedLen)
		}
		if isGUID(v) && replacedLen != 0 {
			t.Fatalf("GUID %q replaced", v)
		}
	})
}
