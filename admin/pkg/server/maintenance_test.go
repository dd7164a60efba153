package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openhcp/openhcp/admin/pkg/audit"
	"github.com/openhcp/openhcp/backend/pkg/maintenance"
	"github.com/openhcp/openhcp/internal/docstore"
)

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
	stored := func() maintenance.CampaignState {
		d, err := e.docs.Get(ctx, maintenance.Partition, "campaign/z1")
		if err != nil {
			t.Fatal(err)
		}
		var got maintenance.Campaign
		if err := json.Unmarshal(d.Body, &got); err != nil {
			t.Fatal(err)
		}
		return got.State
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
	t.Run("read_only_cannot_resume_403_and_nothing_changes", func(t *testing.T) {
		code, _, _ := e.call(t, "bob", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"x"}`)
		if code != 403 || stored() != maintenance.CampaignHalted {
			t.Fatalf("%d, campaign %s", code, stored())
		}
	})
	t.Run("resume_needs_a_reason_400", func(t *testing.T) {
		code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{}`)
		if code != 400 || ae.Target != "reason" {
			t.Fatalf("%d %+v", code, ae)
		}
	})
	t.Run("resume_by_admin_runs_the_campaign_again_and_is_audited", func(t *testing.T) {
		code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"canary failure understood"}`, "X-Correlation-Id", "cid-resume")
		var got maintenance.Campaign
		if code != 200 || stored() != maintenance.CampaignRunning || json.Unmarshal(body, &got) != nil || !strings.Contains(got.Message, "resumed by alice: canary failure understood") {
			t.Fatalf("%d %s, campaign %s", code, body, stored())
		}
		recs := e.lastAudit(t, audit.Filter{CorrelationID: "cid-resume"})
		if len(recs) != 2 || recs[1].Reason != "canary failure understood" || recs[1].Target != "z1" {
			t.Fatalf("audit %+v", recs)
		}
	})
	t.Run("resume_of_a_running_campaign_is_409", func(t *testing.T) {
		if code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/resume", `{"reason":"x"}`); code != 409 {
			t.Fatalf("%d %s", code, body)
		}
	})
	t.Run("cancel_ends_it_and_an_unknown_campaign_is_404", func(t *testing.T) {
		if code, _, body := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/z1/cancel", `{"reason":"stop"}`); code != 200 || stored() != maintenance.CampaignCancelled {
			t.Fatalf("%d %s", code, body)
		}
		if code, ae, _ := e.call(t, "alice", "POST", "/admin/v1/maintenance/campaigns/nope/cancel", `{"reason":"stop"}`); code != 404 || ae.Target != "nope" {
			t.Fatalf("%d %+v", code, ae)
		}
	})
}
