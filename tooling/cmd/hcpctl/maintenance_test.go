package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

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
