package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/openhcp/openhcp/admin/pkg/adminapi"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// maintenanceAPI stands in for the admin API's maintenance routes as the real ones answer
// (admin/pkg/server TestMaintenanceWrites): a write is 202 with a Pending request, which a
// later GET shows carried out — Done, or Failed for a campaign that does not exist. It keeps
// the bodies it was sent.
type maintenanceAPI struct {
	mu     sync.Mutex
	bodies map[string][]byte // by path
	reads  map[string]int    // GETs per request ID
	posts  int
}

func (m *maintenanceAPI) handler() http.Handler {
	mux := http.NewServeMux()
	accept := func(w http.ResponseWriter, r *http.Request, req maintenance.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		m.mu.Lock()
		m.bodies[r.URL.Path] = body.Bytes()
		m.posts++
		m.mu.Unlock()
		req.ID, req.State, req.RequestedBy = req.Campaign+"-"+string(req.Action), maintenance.RequestPending, "alice"
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(req)
	}
	mux.HandleFunc("POST /admin/v1/maintenance/campaigns", func(w http.ResponseWriter, r *http.Request) {
		accept(w, r, maintenance.Request{Action: maintenance.ActionCreateCampaign, Campaign: "z1"})
	})
	mux.HandleFunc("POST /admin/v1/maintenance/campaigns/{id}/{action}", func(w http.ResponseWriter, r *http.Request) {
		accept(w, r, maintenance.Request{Action: maintenance.RequestAction(r.PathValue("action") + "-campaign"), Campaign: r.PathValue("id")})
	})
	mux.HandleFunc("GET /admin/v1/maintenance/requests/{id}", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		m.mu.Lock()
		m.reads[id]++
		n := m.reads[id]
		m.mu.Unlock()
		campaign, action, _ := strings.Cut(id, "-")
		req := maintenance.Request{ID: id, Action: maintenance.RequestAction(action), Campaign: campaign, RequestedBy: "alice", State: maintenance.RequestPending}
		switch {
		case n < 2: // carried out from the second read on
		case campaign == "nosuch":
			req.State, req.Message = maintenance.RequestFailed, "no campaign nosuch: document not found"
		default:
			req.State, req.CampaignState, req.Message = maintenance.RequestDone, maintenance.CampaignRunning, action+" "+campaign+": campaign is Running"
		}
		_ = json.NewEncoder(w).Encode(req)
	})
	return mux
}

func TestMaintenanceCampaignCommands(t *testing.T) {
	m := &maintenanceAPI{bodies: map[string][]byte{}, reads: map[string]int{}}
	api, _, _, _ := adminAPI(t, m.handler())
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(append([]string{}, api...), args...), noEnv, &out, &errb)
		return code, out.String(), errb.String()
	}

	t.Run("create_sends_the_campaign_and_waits_until_done", func(t *testing.T) {
		code, out, errb := run("maintenance", "campaign", "create", "z1", "--from-version", "4.19.16", "--channel-group", "stable",
			"--canary-shard", "mgmt-2", "--bake", "1h", "--max-in-flight", "3", "--failure-threshold", "0.2", "--reason", "CHG-12", "--wait", "-o", "json")
		var r adminapi.MaintenanceRequest
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.State != maintenance.RequestDone || r.CampaignState != maintenance.CampaignRunning {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		var sent adminapi.CampaignCreate
		if err := json.Unmarshal(m.bodies["/admin/v1/maintenance/campaigns"], &sent); err != nil {
			t.Fatal(err)
		}
		if sent.ID != "z1" || sent.FromVersion != "4.19.16" || sent.ChannelGroup != "stable" || sent.CanaryShard != "mgmt-2" || sent.Bake != "1h" ||
			sent.MaxInFlight != 3 || sent.FailureThreshold == nil || *sent.FailureThreshold != 0.2 || sent.Reason != "CHG-12" {
			t.Fatalf("body sent: %+v", sent)
		}
	})
	t.Run("create_without_a_threshold_leaves_the_default_to_the_maintenance_service", func(t *testing.T) {
		if code, _, errb := run("maintenance", "campaign", "create", "z1", "--from-version", "4.19.16", "--channel-group", "stable", "--reason", "r"); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb)
		}
		if b := m.bodies["/admin/v1/maintenance/campaigns"]; bytes.Contains(b, []byte("failureThreshold")) || bytes.Contains(b, []byte("bake")) {
			t.Fatalf("body sent names a default: %s", b)
		}
	})
	t.Run("resume_without_wait_prints_the_pending_request_as_yaml", func(t *testing.T) {
		code, out, errb := run("maintenance", "campaign", "resume", "z2", "--reason", "understood", "-o", "yaml")
		var r adminapi.MaintenanceRequest
		if code != exitOK || yaml.Unmarshal([]byte(out), &r) != nil || r.State != maintenance.RequestPending || r.Action != maintenance.ActionResumeCampaign || r.Campaign != "z2" {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		if string(m.bodies["/admin/v1/maintenance/campaigns/z2/resume"]) != `{"reason":"understood"}` {
			t.Fatalf("body sent: %s", m.bodies["/admin/v1/maintenance/campaigns/z2/resume"])
		}
	})
	t.Run("cancel_of_an_unknown_campaign_with_wait_exits_1_with_the_reason", func(t *testing.T) {
		code, out, errb := run("maintenance", "campaign", "cancel", "nosuch", "--reason", "stop", "--wait")
		if code != exitFailed || out != "" || !strings.Contains(errb, "no campaign nosuch") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
	})
	t.Run("request_get_shows_what_became_of_it", func(t *testing.T) {
		code, out, errb := run("maintenance", "request", "get", "z2-resume-campaign", "--wait")
		if code != exitOK || !strings.Contains(out, "Done") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no_reason", []string{"maintenance", "campaign", "resume", "z1"}, "--reason is required"},
		{"no_from_version", []string{"maintenance", "campaign", "create", "z1", "--channel-group", "stable", "--reason", "r"}, "--from-version"},
		{"a_bake_that_is_no_duration", []string{"maintenance", "campaign", "create", "z1", "--from-version", "4.19.16", "--channel-group", "stable", "--bake", "soon", "--reason", "r"}, "--bake"},
		{"no_campaign", []string{"maintenance", "campaign", "cancel", "--reason", "r"}, "<campaign id>"},
	} {
		t.Run(c.name+"_is_a_usage_error_calling_nothing", func(t *testing.T) {
			before := m.posts
			code, out, errb := run(c.args...)
			if code != exitUsage || out != "" || !strings.Contains(errb, c.want) || m.posts != before {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
			}
		})
	}
}

// taskWindowAPI stands in for the admin API's task and window routes as the real ones answer
// (admin/pkg/server TestMaintenanceTaskAndWindowWrites): 202 with a Pending request, Done from
// the second read on, Failed for task "nosuch"; 400 naming the field for a type it does not run.
type taskWindowAPI struct {
	mu       sync.Mutex
	bodies   map[string][]byte // by method and path
	requests map[string]maintenance.Request
	reads    map[string]int
	calls    int
}

func (m *taskWindowAPI) handler() http.Handler {
	mux := http.NewServeMux()
	accept := func(w http.ResponseWriter, r *http.Request, req maintenance.Request) {
		var body bytes.Buffer
		_, _ = body.ReadFrom(r.Body)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.bodies[r.Method+" "+r.URL.Path] = body.Bytes()
		m.calls++
		req.ID, req.State, req.RequestedBy = fmt.Sprintf("req-%d", m.calls), maintenance.RequestPending, "alice"
		m.requests[req.ID] = req
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(req)
	}
	mux.HandleFunc("POST /admin/v1/maintenance/tasks", func(w http.ResponseWriter, r *http.Request) {
		var b adminapi.TaskCreate
		raw, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(raw, &b)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if b.Type != maintenance.TypeZStreamUpgrade && b.Type != maintenance.TypeNodePoolZStreamUpgrade {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "InvalidRequest", "target": "type",
				"message": "unknown task type " + b.Type + ": the maintenance service runs zstream-upgrade, nodepool-zstream-upgrade"}})
			return
		}
		accept(w, r, maintenance.Request{Action: maintenance.ActionCreateTask, Cluster: b.Cluster, Task: &maintenance.TaskSpec{Type: b.Type, Params: b.Params}})
	})
	mux.HandleFunc("POST /admin/v1/maintenance/tasks/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		accept(w, r, maintenance.Request{Action: maintenance.ActionCancelTask, TaskID: r.PathValue("id")})
	})
	mux.HandleFunc("PUT /admin/v1/maintenance/windows/{cluster}", func(w http.ResponseWriter, r *http.Request) {
		accept(w, r, maintenance.Request{Action: maintenance.ActionSetWindow, Cluster: r.PathValue("cluster")})
	})
	mux.HandleFunc("GET /admin/v1/maintenance/windows/{cluster}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("cluster") != "c1" {
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": "NotFound", "target": r.PathValue("cluster"),
				"message": "cluster " + r.PathValue("cluster") + " has no maintenance window"}})
			return
		}
		_ = json.NewEncoder(w).Encode(adminapi.WindowOf("c1", &maintenance.Window{Days: []time.Weekday{time.Saturday}, Start: 2 * time.Hour, Length: 4 * time.Hour}))
	})
	mux.HandleFunc("DELETE /admin/v1/maintenance/windows/{cluster}", func(w http.ResponseWriter, r *http.Request) {
		accept(w, r, maintenance.Request{Action: maintenance.ActionClearWindow, Cluster: r.PathValue("cluster")})
	})
	mux.HandleFunc("GET /admin/v1/maintenance/requests/{id}", func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		defer m.mu.Unlock()
		id := r.PathValue("id")
		req, ok := m.requests[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		m.reads[id]++
		switch {
		case m.reads[id] < 2:
		case req.TaskID == "nosuch":
			req.State, req.Message = maintenance.RequestFailed, "no task nosuch: document not found"
		default:
			req.State, req.Message = maintenance.RequestDone, "done"
		}
		_ = json.NewEncoder(w).Encode(req)
	})
	return mux
}

func TestMaintenanceTaskAndWindowCommands(t *testing.T) {
	m := &taskWindowAPI{bodies: map[string][]byte{}, requests: map[string]maintenance.Request{}, reads: map[string]int{}}
	api, _, _, _ := adminAPI(t, m.handler())
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append(append([]string{}, api...), args...), noEnv, &out, &errb)
		return code, out.String(), errb.String()
	}
	sent := func(t *testing.T, key string, v any) {
		t.Helper()
		m.mu.Lock()
		defer m.mu.Unlock()
		if err := json.Unmarshal(m.bodies[key], v); err != nil {
			t.Fatalf("body of %s: %v (%s)", key, err, m.bodies[key])
		}
	}

	t.Run("task_create_sends_the_type_and_params_and_waits_until_done", func(t *testing.T) {
		code, out, errb := run("maintenance", "task", "create", "c1", "--type", "nodepool-zstream-upgrade", "--param", "nodePool=p1", "--param", "toVersion=4.19.17",
			"--reason", "CHG-7", "--wait", "-o", "json")
		var r adminapi.MaintenanceRequest
		if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.State != maintenance.RequestDone || r.Action != maintenance.ActionCreateTask {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		var b adminapi.TaskCreate
		sent(t, "POST /admin/v1/maintenance/tasks", &b)
		if b.Cluster != "c1" || b.Type != "nodepool-zstream-upgrade" || b.Params["nodePool"] != "p1" || b.Params["toVersion"] != "4.19.17" || b.Reason != "CHG-7" {
			t.Fatalf("body sent: %+v", b)
		}
	})
	t.Run("task_create_of_a_type_the_service_does_not_run_exits_1_with_the_admin_apis_reason", func(t *testing.T) {
		code, out, errb := run("maintenance", "task", "create", "c1", "--type", "reboot-everything", "--reason", "r")
		if code != exitFailed || out != "" || !strings.Contains(errb, "unknown task type") || !strings.Contains(errb, "zstream-upgrade") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
	})
	t.Run("task_cancel_of_an_unknown_task_with_wait_exits_1_with_the_reason", func(t *testing.T) {
		code, out, errb := run("maintenance", "task", "cancel", "nosuch", "--reason", "stop", "--wait")
		if code != exitFailed || out != "" || !strings.Contains(errb, "no task nosuch") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
	})
	t.Run("window_set_sends_days_start_and_length", func(t *testing.T) {
		code, out, errb := run("maintenance", "window", "set", "c1", "--days", "Sat,Sun", "--start", "02:00", "--length", "4h", "--reason", "customer asked", "--wait")
		if code != exitOK || !strings.Contains(out, "Done") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		var b adminapi.WindowSet
		sent(t, "PUT /admin/v1/maintenance/windows/c1", &b)
		if strings.Join(b.Days, ",") != "Sat,Sun" || b.Start != "02:00" || b.Length != "4h" || b.Reason != "customer asked" {
			t.Fatalf("body sent: %+v", b)
		}
	})
	t.Run("window_get_shows_the_window_and_exits_1_without_one", func(t *testing.T) {
		code, out, errb := run("maintenance", "window", "get", "c1")
		if code != exitOK || !strings.Contains(out, "Sat 02:00 UTC for 4h0m0s") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		code, out, errb = run("maintenance", "window", "get", "c2")
		if code != exitFailed || out != "" || !strings.Contains(errb, "no maintenance window") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
	})
	t.Run("window_clear_sends_the_reason", func(t *testing.T) {
		code, out, errb := run("maintenance", "window", "clear", "c1", "--reason", "customer asked")
		if code != exitOK || !strings.Contains(out, "Pending") {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
		}
		var b map[string]string
		sent(t, "DELETE /admin/v1/maintenance/windows/c1", &b)
		if b["reason"] != "customer asked" {
			t.Fatalf("body sent: %v", b)
		}
	})
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"task_create_without_a_type", []string{"maintenance", "task", "create", "c1", "--reason", "r"}, "--type is required"},
		{"task_create_with_a_param_that_is_no_pair", []string{"maintenance", "task", "create", "c1", "--type", "zstream-upgrade", "--param", "nodePool", "--reason", "r"}, "--param"},
		{"task_cancel_without_a_reason", []string{"maintenance", "task", "cancel", "t1"}, "--reason is required"},
		{"window_set_at_25_o_clock", []string{"maintenance", "window", "set", "c1", "--start", "25:00", "--length", "4h", "--reason", "r"}, "--start"},
		{"window_set_on_no_day", []string{"maintenance", "window", "set", "c1", "--days", "Caturday", "--start", "02:00", "--length", "4h", "--reason", "r"}, "--days"},
		{"window_set_of_no_length", []string{"maintenance", "window", "set", "c1", "--start", "02:00", "--length", "0s", "--reason", "r"}, "positive"},
		{"campaign_create_over_an_unknown_target", []string{"maintenance", "campaign", "create", "z1", "--from-version", "4.19.16", "--channel-group", "stable", "--target", "machines", "--reason", "r"}, "--target"},
	} {
		t.Run(c.name+"_is_a_usage_error_calling_nothing", func(t *testing.T) {
			m.mu.Lock()
			before := m.calls
			m.mu.Unlock()
			code, out, errb := run(c.args...)
			m.mu.Lock()
			after := m.calls
			m.mu.Unlock()
			if code != exitUsage || out != "" || !strings.Contains(errb, c.want) || after != before {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errb)
			}
		})
	}
}
