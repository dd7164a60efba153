package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore"
	"github.com/openhcp/openhcp/internal/docstore/postgres"
)

// useAdminLogin makes the admin API use the document store as the region's admin login does:
// a login with GrantAdminLogin's privileges only, under the store's row-level security.
func useAdminLogin(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	su, err := pgx.Connect(ctx, e.docsDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close(ctx)
	var db, owner string
	if err := su.QueryRow(ctx, "SELECT current_database(), current_user").Scan(&db, &owner); err != nil {
		t.Fatal(err)
	}
	if _, err := su.Exec(ctx, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'adminlogin') THEN CREATE ROLE adminlogin LOGIN NOBYPASSRLS; END IF; END $$"); err != nil {
		t.Fatal(err)
	}
	if err := postgres.GrantAdminLogin(ctx, su, db, owner, "adminlogin"); err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(ctx, strings.Replace(e.docsDSN, "postgres://postgres@", "postgres://adminlogin@", 1), postgres.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	e.srv.cfg.Store = st
}

func TestMaintenanceCampaigns(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	// A halted campaign as the backend's campaign runner leaves it.
	threshold := 0.1
	c := maintenance.Campaign{CampaignSpec: maintenance.CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable", MaxInFlight: 2,
		Bake: time.Minute, FailureThreshold: &threshold, RequestedBy: "sre"},
		State: maintenance.CampaignHalted, Waves: []maintenance.Wave{{Shard: "mgmt-1", Clusters: []string{"a", "b"}, Failed: 1}}, Created: time.Now().UTC()}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.docs.Create(ctx, &docstore.Document{PartitionKey: maintenance.Partition, ID: "campaign/z1", Type: maintenance.TypeCampaign, ResourceID: "campaign/z1", Body: b}); err != nil {
		t.Fatal(err)
	}
	t.Run("read_only_lists_campaigns_and_tasks", func(t *testing.T) {
		code, _, body := e.call(t, "bob", "GET", "/admin/v1/maintenance/campaigns", "")
		var cs struct{ Campaigns []maintenance.Campaign }
		if code != 200 || json.Unmarshal(body, &cs) != nil || len(cs.Campaigns) != 1 || cs.Campaigns[0].ID != "z1" || cs.Campaigns[0].State != maintenance.CampaignHalted {
			t.Fatalf("%d %s", code, body)
		}
		code, _, body = e.call(t, "bob", "GET", "/admin/v1/maintenance/tasks", "")
		var ts struct{ Tasks []maintenance.Task }
		if code != 200 || json.Unmarshal(body, &ts) != nil || ts.Tasks == nil || len(ts.Tasks) != 0 {
			t.Fatalf("%d %s", code, body)
		}
	})
}

func TestMaintenanceWrites(t *testing.T) {
	e := start(t)
	useAdminLogin(t, e)
	ctx := context.Background()
	threshold := 0.1
	halted := maintenance.Campaign{CampaignSpec: maintenance.CampaignSpec{ID: "z1", FromVersion: "4.19.16", ChannelGroup: "stable", MaxInFlight: 2,
		Bake: time.Minute, FailureThreshold: &threshold, RequestedBy: "sre"},
		State: maintenance.CampaignHalted, Waves: []maintenance.Wave{{Shard: "mgmt-1", Clusters: []string{"a", "b"}, Failed: 1}}, Created: time.Now().UTC()}
	b, err := json.Marshal(halted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.docs.Create(ctx, &docstore.Document{PartitionKey: maintenance.Partition, ID: "campaign/z1", Type: maintenance.TypeCampaign, ResourceID: "campaign/z1", Body: b}); err != nil {
		t.Fatal(err)
	}
	// The maintenance service's consumer, as the owner of the maintenance documents. Resume and
	// cancel need no Cluster Service; a create, which does, is submitted after the last
	// consume here and carried out in backend/pkg/maintenance's and backend/cmd/maintenance's tests.
	consume := func(t *testing.T) {
		t.Helper()
		if err := maintenance.NewRequests(e.docs, maintenance.NewCampaigns(maintenance.NewTasks(e.docs), nil, nil), nil, nil).VerifyWith(e.statementPub).Process(ctx); err != nil {
			t.Fatalf("process requests: %v", err)
		}
	}
	accepted := func(t *testing.T, code int, body []byte) maintenance.Request {
		t.Helper()
		var r maintenance.Request
		if code != http.StatusAccepted || json.Unmarshal(body, &r) != nil || r.ID == "" || r.State != maintenance.RequestPending {
			t.Fatalf("want 202 with a pending request: %d %s", code, body)
		}
		return r
	}
	follow := func(t *testing.T, id string) maintenance.Request {
		t.Helper()
		code, _, body := e.call(t, "bob", "GET", "/admin/v1/maintenance/requests/"+id, "")
		var r maintenance.Request
		if code != 200 || json.Unmarshal(body, &r) != nil || r.ID != id {
			t.Fatalf("GET request %s: %d %s", id, code, body)
		}
		return r
	}
	requests := func(t *testing.T) int {
		t.Helper()
		rs, err := maintenance.NewRequests(e.docs, nil, nil, nil).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}

	t.Run("read_only_sre_may_not_write_and_the_refusal_is_audited", func(t *testing.T) {
		code, ae, _ := e.call(t, "bob", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"try"}`)
		if code != http.StatusForbidden || !strings.Contains(ae.Message, "maintenance.write") {
			t.Fatalf("%d %+v", code, ae)
		}
		got := e.lastAudit(t, audit.Filter{Person: "bob", Target: "z1", Outcome: audit.Forbidden})
		if len(got) != 1 || got[0].Route != "POST /admin/v1/maintenance/campaigns/{id}/resume" {
			t.Fatalf("audit of the refusal: %+v", got)
		}
		if n := requests(t); n != 0 {
			t.Fatalf("%d requests stored after a refused call", n)
		}
	})

	for _, c := range []struct{ name, body, field string }{
		{"no_reason", `{"id":"z2","fromVersion":"4.19.16","channelGroup":"stable"}`, "reason"},
		{"an_unknown_field", `{"reason":"r","id":"z2","fromVersion":"4.19.16","channelGroup":"stable","waves":3}`, "body"},
		{"a_bad_campaign_id", `{"reason":"r","id":"Z 2","fromVersion":"4.19.16","channelGroup":"stable"}`, "id"},
		{"no_from_version", `{"reason":"r","id":"z2","channelGroup":"stable"}`, "fromVersion"},
		{"a_bake_that_is_no_duration", `{"reason":"r","id":"z2","fromVersion":"4.19.16","channelGroup":"stable","bake":"soon"}`, "bake"},
		{"a_failure_threshold_above_one", `{"reason":"r","id":"z2","fromVersion":"4.19.16","channelGroup":"stable","failureThreshold":2}`, "failureThreshold"},
		{"a_negative_max_in_flight", `{"reason":"r","id":"z2","fromVersion":"4.19.16","channelGroup":"stable","maxInFlight":-1}`, "maxInFlight"},
	} {
		t.Run("create_with_"+c.name+"_is_400_naming_"+c.field, func(t *testing.T) {
			code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns", c.body)
			if code != http.StatusBadRequest || ae.Target != c.field {
				t.Fatalf("%d %+v; want 400 naming %s", code, ae, c.field)
			}
			if n := requests(t); n != 0 {
				t.Fatalf("%d requests stored after a 400", n)
			}
		})
	}

	t.Run("resume_is_carried_out_by_the_maintenance_service_and_followed_to_done", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"failure understood"}`)
		r := accepted(t, code, body)
		consume(t)
		got := follow(t, r.ID)
		if got.State != maintenance.RequestDone || got.CampaignState != maintenance.CampaignRunning {
			t.Fatalf("resume request: %+v", got)
		}
	})

	t.Run("cancel_of_an_unknown_campaign_is_followed_to_failed_with_the_reason", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/nosuch/cancel", `{"reason":"stop"}`)
		r := accepted(t, code, body)
		consume(t)
		got := follow(t, r.ID)
		if got.State != maintenance.RequestFailed || !strings.Contains(got.Message, "no campaign nosuch") {
			t.Fatalf("cancel request: %+v", got)
		}
	})

	t.Run("create_is_accepted_as_a_pending_request_in_the_admin_logins_name_of_the_sre", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns",
			`{"reason":"z-stream 4.19.16","id":"z2","fromVersion":"4.19.16","channelGroup":"stable","canaryShard":"mgmt-2","bake":"45m","maxInFlight":3,"failureThreshold":0.2}`,
			"X-Correlation-Id", "corr-create-z2")
		r := accepted(t, code, body)
		if r.Action != maintenance.ActionCreateCampaign || r.Campaign != "z2" || r.RequestedBy != "alice" || r.Reason != "z-stream 4.19.16" ||
			r.CorrelationID != "corr-create-z2" || r.Spec == nil || r.Spec.Bake != 45*time.Minute || r.Spec.MaxInFlight != 3 || *r.Spec.FailureThreshold != 0.2 || r.Spec.CanaryShard != "mgmt-2" {
			t.Fatalf("request as answered: %+v %+v", r, r.Spec)
		}
		if got := follow(t, r.ID); got.State != maintenance.RequestPending || got.Spec.ID != "z2" {
			t.Fatalf("request as stored: %+v", got)
		}
		got := e.lastAudit(t, audit.Filter{Person: "alice", Target: "z2", CorrelationID: "corr-create-z2"})
		if len(got) != 2 || got[0].Reason != "z-stream 4.19.16" {
			t.Fatalf("audit of the create (allowed, then completed): %+v", got)
		}
	})

	t.Run("an_unknown_request_is_404", func(t *testing.T) {
		code, _, _ := e.call(t, "bob", "GET", "/admin/v1/maintenance/requests/nosuch", "")
		if code != http.StatusNotFound {
			t.Fatalf("%d", code)
		}
	})
}

// The maintenance service carries out only requests the admin API signed, so without its
// statement key the admin API stores none: a write answers 503 and nothing is stored.
func TestMaintenanceWritesNeedTheStatementKey(t *testing.T) {
	e := start(t, func(c *Config) { c.StatementKey = nil })
	useAdminLogin(t, e)
	code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"failure understood"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "--sre-statement-key") {
		t.Fatalf("%d %+v; want 503 naming --sre-statement-key", code, ae)
	}
	rs, err := maintenance.NewRequests(e.docs, nil, nil, nil).List(context.Background())
	if err != nil || len(rs) != 0 {
		t.Fatalf("requests stored without the key: %v %v", rs, err)
	}
}

// TestMaintenanceTaskAndWindowWrites: a single task, a task cancel and a cluster's window are
// requests like a campaign's: refused with 400 naming the field before anything is signed or
// stored, accepted 202 as a Pending request in the SRE's name, audited with the cluster or task
// as target, and followed to what the maintenance service made of them.
func TestMaintenanceTaskAndWindowWrites(t *testing.T) {
	e := start(t)
	useAdminLogin(t, e)
	ctx := context.Background()
	const cluster = "0123456789abcdefghijklmnopqrstuv"
	consume := func(t *testing.T) {
		t.Helper()
		// Cancel and clear need no Cluster Service; create-task and set-window, which do, are
		// submitted after the last consume here and carried out in backend/pkg/maintenance's
		// TestTaskAndWindowRequests.
		if err := maintenance.NewRequests(e.docs, maintenance.NewCampaigns(maintenance.NewTasks(e.docs), nil, nil), nil, nil).
			VerifyWith(e.statementPub).WithTypes(maintenance.TaskTypes(nil, maintenance.ZStreamConfig{}, maintenance.RegionCertConfig{})).Process(ctx); err != nil {
			t.Fatalf("process requests: %v", err)
		}
	}
	requests := func(t *testing.T) []*maintenance.Request {
		t.Helper()
		rs, err := maintenance.NewRequests(e.docs, nil, nil, nil).List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	accepted := func(t *testing.T, code int, body []byte) maintenance.Request {
		t.Helper()
		var r maintenance.Request
		if code != http.StatusAccepted || json.Unmarshal(body, &r) != nil || r.ID == "" || r.State != maintenance.RequestPending || r.RequestedBy != "alice" {
			t.Fatalf("want 202 with a pending request of alice: %d %s", code, body)
		}
		return r
	}
	follow := func(t *testing.T, id string) maintenance.Request {
		t.Helper()
		code, _, body := e.call(t, "bob", "GET", "/admin/v1/maintenance/requests/"+id, "")
		var r maintenance.Request
		if code != 200 || json.Unmarshal(body, &r) != nil || r.ID != id {
			t.Fatalf("GET request %s: %d %s", id, code, body)
		}
		return r
	}

	for _, c := range []struct{ name, method, path, body, field, says string }{
		{"a_task_of_an_unknown_type", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"reboot-everything","cluster":"` + cluster + `"}`, "type", "zstream-upgrade"},
		{"a_node_pool_task_without_its_pool", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"nodepool-zstream-upgrade","cluster":"` + cluster + `"}`, "params.nodePool", "needs parameter nodePool"},
		{"a_task_parameter_value_the_type_refuses", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"breakglass-signer-rotation","cluster":"` + cluster + `","params":{"signers":"all"}}`, "params.signers", "params.signers must be sre, customer or both"},
		{"a_task_parameter_the_type_does_not_take", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"zstream-upgrade","cluster":"` + cluster + `","params":{"force":"yes"}}`, "params.force", "takes no parameter"},
		{"a_task_without_a_cluster", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"zstream-upgrade"}`, "cluster", "no cluster ID"},
		{"a_task_body_with_an_unknown_field", "POST", "/admin/v1/maintenance/tasks", `{"reason":"r","type":"zstream-upgrade","cluster":"` + cluster + `","priority":9}`, "body", ""},
		{"a_task_without_a_reason", "POST", "/admin/v1/maintenance/tasks", `{"type":"zstream-upgrade","cluster":"` + cluster + `"}`, "reason", ""},
		{"a_cancel_of_a_task_id_that_is_no_id", "POST", "/admin/v1/maintenance/tasks/NO_SUCH/cancel", `{"reason":"r"}`, "taskId", ""},
		{"a_window_starting_at_25_o_clock", "PUT", "/admin/v1/maintenance/windows/" + cluster, `{"reason":"r","start":"25:00","length":"4h"}`, "start", "HH:MM"},
		{"a_window_on_no_day", "PUT", "/admin/v1/maintenance/windows/" + cluster, `{"reason":"r","days":["Caturday"],"start":"02:00","length":"4h"}`, "days", "day of the week"},
		{"a_window_of_no_length", "PUT", "/admin/v1/maintenance/windows/" + cluster, `{"reason":"r","start":"02:00","length":"0s"}`, "window", "positive"},
		{"a_window_longer_than_a_week", "PUT", "/admin/v1/maintenance/windows/" + cluster, `{"reason":"r","start":"02:00","length":"200h"}`, "window", "at most a week"},
		{"a_window_of_a_cluster_id_that_is_no_id", "PUT", "/admin/v1/maintenance/windows/NO_SUCH", `{"reason":"r","start":"02:00","length":"4h"}`, "cluster", ""},
		{"a_campaign_over_an_unknown_target", "POST", "/admin/v1/maintenance/campaigns", `{"reason":"r","id":"z3","fromVersion":"4.19.16","channelGroup":"stable","target":"machines"}`, "target", "nodepools"},
	} {
		t.Run(c.name+"_is_400_naming_"+c.field+"_and_stores_nothing", func(t *testing.T) {
			code, ae, _ := e.call(t, "alice", c.method, c.path, c.body)
			if code != http.StatusBadRequest || ae.Target != c.field || !strings.Contains(ae.Message, c.says) {
				t.Fatalf("%d %+v; want 400 naming %s saying %q", code, ae, c.field, c.says)
			}
			if rs := requests(t); len(rs) != 0 {
				t.Fatalf("%d requests stored after a 400", len(rs))
			}
		})
	}

	t.Run("read_only_sre_may_not_set_a_window_and_the_refusal_is_audited", func(t *testing.T) {
		code, ae, _ := e.call(t, "bob", "PUT", "/admin/v1/maintenance/windows/"+cluster, `{"reason":"r","start":"02:00","length":"4h"}`)
		if code != http.StatusForbidden || !strings.Contains(ae.Message, "maintenance.write") {
			t.Fatalf("%d %+v", code, ae)
		}
		if got := e.lastAudit(t, audit.Filter{Person: "bob", Target: cluster, Outcome: audit.Forbidden}); len(got) != 1 {
			t.Fatalf("audit of the refusal: %+v", got)
		}
	})

	t.Run("cancel_of_an_unknown_task_is_followed_to_failed_and_clear_to_done", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/tasks/nosuch/cancel", `{"reason":"stop"}`)
		cancel := accepted(t, code, body)
		code, _, body = e.call(t, "alice", "DELETE", "/admin/v1/maintenance/windows/"+cluster, `{"reason":"customer asked"}`)
		clear := accepted(t, code, body)
		consume(t)
		if got := follow(t, cancel.ID); got.State != maintenance.RequestFailed || !strings.Contains(got.Message, "no task nosuch") {
			t.Fatalf("cancel request: %+v", got)
		}
		if got := follow(t, clear.ID); got.State != maintenance.RequestDone || !strings.Contains(got.Message, "no maintenance window") {
			t.Fatalf("clear request: %+v", got)
		}
	})
	t.Run("create_task_is_a_signed_pending_request_naming_its_task_audited_with_the_cluster", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/tasks",
			`{"reason":"CHG-7: pool one","type":"nodepool-zstream-upgrade","cluster":"`+cluster+`","params":{"nodePool":"p1","toVersion":"4.19.17"}}`,
			"X-Correlation-Id", "corr-task")
		r := accepted(t, code, body)
		if r.Action != maintenance.ActionCreateTask || r.Cluster != cluster || r.TaskID != r.ID || r.Task == nil ||
			r.Task.Type != maintenance.TypeNodePoolZStreamUpgrade || r.Task.Params["nodePool"] != "p1" || r.Reason != "CHG-7: pool one" || len(r.Signature) == 0 {
			t.Fatalf("request as answered: %+v", r)
		}
		if got := e.lastAudit(t, audit.Filter{Person: "alice", Target: cluster, CorrelationID: "corr-task"}); len(got) != 2 {
			t.Fatalf("audit of the create (allowed, then completed): %+v", got)
		}
	})

	t.Run("set_window_is_a_pending_request_holding_the_window", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "PUT", "/admin/v1/maintenance/windows/"+cluster, `{"reason":"customer asked","days":["Sat","sunday"],"start":"02:30","length":"4h"}`)
		r := accepted(t, code, body)
		if r.Action != maintenance.ActionSetWindow || r.Cluster != cluster || r.Window == nil || r.Window.Start != 2*time.Hour+30*time.Minute ||
			r.Window.Length != 4*time.Hour || len(r.Window.Days) != 2 || r.Window.Days[0] != time.Saturday || r.Window.Days[1] != time.Sunday {
			t.Fatalf("request as answered: %+v %+v", r, r.Window)
		}
	})

	t.Run("get_window_shows_the_window_the_maintenance_service_stored_and_404_without_one", func(t *testing.T) {
		code, ae, _ := e.call(t, "bob", "GET", "/admin/v1/maintenance/windows/"+cluster, "")
		if code != http.StatusNotFound || !strings.Contains(ae.Message, "no maintenance window") {
			t.Fatalf("%d %+v; want 404 saying it has none", code, ae)
		}
		// As the maintenance service, the owner of window documents, stores one.
		if err := maintenance.NewWindows(e.docs, nil).Set(ctx, cluster, &maintenance.Window{Days: []time.Weekday{time.Saturday, time.Sunday},
			Start: 2*time.Hour + 30*time.Minute, Length: 4 * time.Hour}); err != nil {
			t.Fatal(err)
		}
		code, _, body := e.call(t, "bob", "GET", "/admin/v1/maintenance/windows/"+cluster, "")
		var got struct {
			Cluster, Start, Length, Description string
			Days                                []string
		}
		if code != 200 || json.Unmarshal(body, &got) != nil || got.Cluster != cluster || strings.Join(got.Days, ",") != "Sat,Sun" ||
			got.Start != "02:30" || got.Length != "4h0m0s" || !strings.Contains(got.Description, "Sat,Sun 02:30 UTC") {
			t.Fatalf("%d %s", code, body)
		}
		// What GET shows is what PUT takes.
		if _, err := maintenance.ParseWindow(got.Days, got.Start, got.Length); err != nil {
			t.Fatalf("the window as shown does not parse back: %v", err)
		}
	})
}
