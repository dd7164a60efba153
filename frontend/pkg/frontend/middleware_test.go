package frontend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/internal/armdoc"
)

func TestMiddleware(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name   string
		method string
		path   string
		status int
		code   string
	}{
		{"missing_api_version_returns_400_InvalidParameter", "GET", clusterPath("rg", "x") + "?", 400, "InvalidParameter"},
		{"unknown_api_version_returns_400_InvalidResourceType", "GET", clusterPath("rg", "x") + "?api-version=2020-01-01", 400, "InvalidResourceType"},
		{"malformed_api_version_returns_400_InvalidResourceType", "GET", clusterPath("rg", "x") + "?api-version=latest", 400, "InvalidResourceType"},
		{"subscription_api_needs_2.0", "GET", "/subscriptions/" + testSub + "?api-version=" + testVersion, 400, "InvalidResourceType"},
		{"unknown_path_returns_404_arm_body", "GET", "/subscriptions/" + testSub + "/resourceGroups/rg/providers/Microsoft.Compute/virtualMachines/vm", 404, "NotFound"},
		{"wrong_method_returns_405_arm_body", "POST", clusterPath("rg", "x"), 405, "MethodNotAllowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(tc.method, tc.path, nil, nil)
			if resp.code != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.code, tc.status, resp.body)
			}
			if code, _ := resp.armError(t); code != tc.code {
				t.Fatalf("code %s, want %s", code, tc.code)
			}
		})
	}

	t.Run("request_id_is_returned_and_client_ids_echoed", func(t *testing.T) {
		a := e.do("GET", "/healthz", nil, nil)
		b := e.do("GET", "/healthz", nil, nil)
		if a.code != 200 || a.header.Get("x-ms-request-id") == b.header.Get("x-ms-request-id") {
			t.Fatalf("request IDs %q %q", a.header.Get("x-ms-request-id"), b.header.Get("x-ms-request-id"))
		}
		if a.header.Get("x-ms-correlation-request-id") != "corr-1" || a.header.Get("x-ms-client-request-id") != "client-1" {
			t.Fatalf("headers %v", a.header)
		}
	})

	t.Run("panic_returns_500_arm_body", func(t *testing.T) {
		h := chain(func(w http.ResponseWriter, r *http.Request) { panic("boom") },
			e.srv.middlewareRequestID, e.srv.middlewareLogging, e.srv.middlewarePanic)
		rec := httptest.NewRecorder()
		h(rec, httptest.NewRequest("GET", "/x", nil))
		resp := response{code: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
		if resp.code != 500 || resp.header.Get("x-ms-request-id") == "" {
			t.Fatalf("status %d headers %v", resp.code, resp.header)
		}
		if code, _ := resp.armError(t); code != "InternalServerError" || strings.Contains(string(resp.body), "boom") {
			t.Fatalf("body leaks or wrong code: %s", resp.body)
		}
	})

	t.Run("a_method_of_the_callers_own_adds_no_series", func(t *testing.T) {
		// The method is any token a caller sends, before any credential is checked: each
		// distinct one must not become a series of its own.
		for _, m := range []string{"NOCERT1", "NOCERT2", "get"} {
			e.do(m, "/x", nil, nil)
		}
		rec := httptest.NewRecorder()
		e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		for _, m := range []string{"NOCERT1", "NOCERT2", `"get"`} {
			if strings.Contains(string(body), m) {
				t.Errorf("metrics have a series for the method %s", m)
			}
		}
		if !strings.Contains(string(body), `method="other"`) {
			t.Errorf("metrics lack method=\"other\":\n%.2000s", body)
		}
	})

	t.Run("metrics_count_requests_by_route_and_code", func(t *testing.T) {
		rec := httptest.NewRecorder()
		e.srv.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		body, _ := io.ReadAll(rec.Body)
		want := `frontend_http_requests_total{code="400",method="GET",route="GET /subscriptions/{subscriptionId}/resourcegroups/{resourceGroupName}/providers/microsoft.redhatopenshift/hcpopenshiftclusters/{clusterName}"}`
		if !strings.Contains(string(body), want) || !strings.Contains(string(body), "frontend_http_request_duration_seconds_bucket") {
			t.Fatalf("metrics lack %s:\n%.2000s", want, body)
		}
	})
}

func TestSubscriptionState(t *testing.T) {
	e := newEnv(t)
	const other = "2D3E5C2A-0000-4000-8000-00000000ABCD"
	otherCluster := "/subscriptions/" + other + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/c"
	otherList := "/subscriptions/" + other + "/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters"
	body := set(minimalBody(), "properties.platform.subnetId", "/subscriptions/"+other+"/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s")

	t.Run("unknown_subscription_allows_nothing", func(t *testing.T) {
		for _, resp := range []response{e.do("GET", otherCluster, nil, nil), e.do("GET", otherList, nil, nil), e.put(otherCluster, body)} {
			if code, _ := resp.armError(t); resp.code != 400 || code != "InvalidSubscriptionState" {
				t.Fatalf("%d %s, want 400 InvalidSubscriptionState", resp.code, resp.body)
			}
		}
	})
	t.Run("registered_then_warned_allows_get_and_delete_only", func(t *testing.T) {
		e.registerSubscription(other, armdoc.SubscriptionRegistered)
		if resp := e.put(otherCluster, body); resp.code != 201 {
			t.Fatalf("PUT while registered: %d %s", resp.code, resp.body)
		}
		e.registerSubscription(other, armdoc.SubscriptionWarned)
		if resp := e.put(otherCluster, body); resp.code != 409 {
			t.Fatalf("PUT while warned: %d", resp.code)
		}
		if resp := e.do("GET", otherCluster, nil, nil); resp.code != 200 {
			t.Fatalf("GET while warned: %d", resp.code)
		}
		if resp := e.do("DELETE", otherCluster, nil, nil); resp.code != 202 {
			t.Fatalf("DELETE while warned: %d %s", resp.code, resp.body)
		}
	})
	t.Run("subscription_get_returns_state", func(t *testing.T) {
		resp := e.do("GET", "/subscriptions/"+other+"?api-version=2.0", nil, nil)
		if b := resp.json(t); resp.code != 200 || b["state"] != "Warned" {
			t.Fatalf("%d %s", resp.code, resp.body)
		}
		if resp := e.do("GET", "/subscriptions/3D3E5C2A-0000-4000-8000-00000000ABCD?api-version=2.0", nil, nil); resp.code != 404 {
			t.Fatalf("unknown subscription: %d", resp.code)
		}
	})
	t.Run("invalid_state_returns_400", func(t *testing.T) {
		resp := e.do("PUT", "/subscriptions/"+other+"?api-version=2.0", []byte(`{"state":"Happy"}`), nil)
		if code, target := resp.armError(t); resp.code != 400 || target != "state" {
			t.Fatalf("%d %s %s", resp.code, code, target)
		}
	})
	t.Run("deleted_subscription_deletes_its_clusters", func(t *testing.T) {
		const third = "4D3E5C2A-0000-4000-8000-00000000ABCD"
		e.registerSubscription(third, armdoc.SubscriptionRegistered)
		p := "/subscriptions/" + third + "/resourceGroups/rg/providers/Microsoft.RedHatOpenShift/hcpOpenShiftClusters/doomed"
		created := e.put(p, body)
		if created.code != 201 {
			t.Fatalf("create: %d %s", created.code, created.body)
		}
		e.registerSubscription(third, armdoc.SubscriptionDeleted)
		d, err := e.store.Get(t.Context(), strings.ToLower(third), strings.ToLower(p))
		if err != nil {
			t.Fatal(err)
		}
		var rd armdoc.ResourceDocument
		json.Unmarshal(d.Body, &rd)
		od, err := e.store.Get(t.Context(), strings.ToLower(third), rd.ActiveOperationID)
		if rd.ProvisioningState != armdoc.StateDeleting || err != nil || !strings.Contains(string(od.Body), "Delete") {
			t.Fatalf("cluster of deleted subscription: %+v (operation %v)", rd, err)
		}
		if _, deletes, _ := e.cs.snapshot(); deletes[len(deletes)-1] != rd.InternalID {
			t.Fatalf("DeleteCluster calls %v, want %s last", deletes, rd.InternalID)
		}
	})
}
