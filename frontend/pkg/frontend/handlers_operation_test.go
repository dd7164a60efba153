package frontend

import (
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/internal/armdoc"
)

func TestOperationStatus(t *testing.T) {
	e := newEnv(t)
	path := clusterPath("rg", "ops")
	created := e.put(path, minimalBody())
	async := created.header.Get("Azure-AsyncOperation")
	opID := opIDFrom(t, async)
	statusPath := strings.TrimPrefix(async, e.http.URL)
	resultPath := strings.Replace(statusPath, "hcpOperationStatuses", "hcpOperationResults", 1)

	t.Run("running_operation_is_200_with_status_and_start_time", func(t *testing.T) {
		resp := e.do("GET", statusPath, nil, nil)
		if resp.code != 200 {
			t.Fatalf("status %d: %s", resp.code, resp.body)
		}
		b := resp.json(t)
		if b["name"] != opID || b["status"] != "Accepted" || b["startTime"] == nil || b["endTime"] != nil || b["error"] != nil ||
			!strings.HasSuffix(b["id"].(string), "/hcpOperationStatuses/"+opID) {
			t.Fatalf("body %s", resp.body)
		}
	})
	t.Run("running_operation_result_is_202_with_location", func(t *testing.T) {
		resp := e.do("GET", resultPath, nil, nil)
		if resp.code != 202 || !strings.Contains(resp.header.Get("Location"), "/hcpOperationResults/"+opID) || resp.header.Get("Retry-After") == "" {
			t.Fatalf("status %d headers %v", resp.code, resp.header)
		}
	})
	t.Run("succeeded_create_status_has_end_time_and_result_is_the_resource", func(t *testing.T) {
		e.finish(opID, armdoc.StateSucceeded, nil)
		resp := e.do("GET", statusPath, nil, nil)
		b := resp.json(t)
		if b["status"] != "Succeeded" || b["endTime"] == nil {
			t.Fatalf("body %s", resp.body)
		}
		end, err := time.Parse(time.RFC3339Nano, b["endTime"].(string))
		if err != nil || time.Since(end) > time.Minute {
			t.Fatalf("endTime %v: %v", b["endTime"], err)
		}
		res := e.do("GET", resultPath, nil, nil)
		if res.code != 200 {
			t.Fatalf("result status %d: %s", res.code, res.body)
		}
		rb := res.json(t)
		if rb["id"] != path || rb["properties"].(map[string]any)["provisioningState"] != "Succeeded" {
			t.Fatalf("result body %s", res.body)
		}
	})
	t.Run("succeeded_delete_result_is_204", func(t *testing.T) {
		del := e.do("DELETE", path, nil, nil)
		delOp := opIDFrom(t, del.header.Get("Location"))
		e.finish(delOp, armdoc.StateSucceeded, nil)
		res := e.do("GET", strings.TrimPrefix(del.header.Get("Location"), e.http.URL), nil, nil)
		if res.code != 204 {
			t.Fatalf("status %d: %s", res.code, res.body)
		}
		if got := e.do("GET", path, nil, nil); got.code != 404 {
			t.Fatalf("GET after delete: %d", got.code)
		}
	})
	t.Run("failed_operation_status_carries_error_and_result_is_the_error", func(t *testing.T) {
		p2 := clusterPath("rg", "fails")
		c := e.put(p2, minimalBody())
		id := opIDFrom(t, c.header.Get("Azure-AsyncOperation"))
		e.finish(id, armdoc.StateFailed, &armdoc.CloudErrorBody{Code: "ProvisioningFailed", Message: "etcd never became ready"})
		st := e.do("GET", strings.TrimPrefix(c.header.Get("Azure-AsyncOperation"), e.http.URL), nil, nil)
		b := st.json(t)
		if st.code != 200 || b["status"] != "Failed" || b["error"].(map[string]any)["code"] != "ProvisioningFailed" {
			t.Fatalf("status body %s", st.body)
		}
		res := e.do("GET", strings.Replace(strings.TrimPrefix(c.header.Get("Azure-AsyncOperation"), e.http.URL), "hcpOperationStatuses", "hcpOperationResults", 1), nil, nil)
		if code, _ := res.armError(t); res.code != 400 || code != "ProvisioningFailed" {
			t.Fatalf("result %d %s", res.code, res.body)
		}
	})
	t.Run("canceled_operation_always_has_an_error", func(t *testing.T) {
		p3 := clusterPath("rg", "canceled")
		c := e.put(p3, minimalBody())
		id := opIDFrom(t, c.header.Get("Azure-AsyncOperation"))
		e.finish(id, armdoc.StateCanceled, nil)
		b := e.do("GET", strings.TrimPrefix(c.header.Get("Azure-AsyncOperation"), e.http.URL), nil, nil).json(t)
		if b["error"] == nil || b["error"].(map[string]any)["code"] != "Canceled" {
			t.Fatalf("body %v", b)
		}
	})
	t.Run("unknown_operation_or_other_location_is_404", func(t *testing.T) {
		for _, p := range []string{
			"/subscriptions/" + testSub + "/providers/Microsoft.RedHatOpenShift/locations/eastus/hcpOperationStatuses/00000000-0000-0000-0000-000000000000",
			strings.Replace(statusPath, "/locations/eastus/", "/locations/westus/", 1),
		} {
			resp := e.do("GET", p, nil, nil)
			if resp.code != 404 {
				t.Fatalf("%s: status %d", p, resp.code)
			}
			resp.armError(t)
		}
	})
	t.Run("another_caller_cannot_read_the_operation", func(t *testing.T) {
		p4 := clusterPath("rg", "mine")
		c := e.do("PUT", p4, mustJSON(minimalBody()), map[string]string{"x-ms-client-object-id": "owner"})
		sp := strings.TrimPrefix(c.header.Get("Azure-AsyncOperation"), e.http.URL)
		if resp := e.do("GET", sp, nil, map[string]string{"x-ms-client-object-id": "someone-else"}); resp.code != 404 {
			t.Fatalf("other caller got %d", resp.code)
		}
		if resp := e.do("GET", sp, nil, map[string]string{"x-ms-client-object-id": "owner"}); resp.code != 200 {
			t.Fatalf("owner got %d", resp.code)
		}
	})
}
