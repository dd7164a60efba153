package server

import (
	"context"
	"encoding/json"
	"testing"
	"time"

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
