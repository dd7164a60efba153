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
