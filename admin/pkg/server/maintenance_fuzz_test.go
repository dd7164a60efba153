package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openhcp/openhcp/backend/pkg/maintenance"
)

// FuzzCampaignCreate: any body of POST /admin/v1/maintenance/campaigns is either a 400 naming
// the field at fault, or a create request whose spec the maintenance service's own check takes.
func FuzzCampaignCreate(f *testing.F) {
	for _, s := range []string{
		`{"reason":"r","id":"z1","fromVersion":"4.19.16","channelGroup":"stable"}`,
		`{"reason":"r","id":"z1","fromVersion":"4.19.16","channelGroup":"stable","canaryShard":"mgmt-2","maxInFlight":3,"bake":"1h","failureThreshold":0.2}`,
		`{"reason":"r","id":"Z1","fromVersion":"4.19.16","channelGroup":"stable"}`,
		`{"reason":"r","id":"z1","fromVersion":"4.19.16","channelGroup":"stable","bake":"-1s"}`,
		`{"reason":"r","id":"z1","fromVersion":"4.19.16","channelGroup":"stable","failureThreshold":1e308}`,
		`{"reason":"r","id":"z1","fromVersion":"","channelGroup":"stable","maxInFlight":-1}`,
		`{"id":"z1"} {}`, `null`, `{"waves":1}`, `{"bake":"9999999999999999h"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := parseCampaignCreate(httptest.NewRequest(http.MethodPost, "/admin/v1/maintenance/campaigns", strings.NewReader(body)))
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
				t.Fatalf("refusal %v of %q", err, body)
			}
			return
		}
		req.RequestedBy = "fuzz"
		if req.Action != maintenance.ActionCreateCampaign || req.Spec == nil || req.Campaign != req.Spec.ID || req.Validate() != nil {
			t.Fatalf("%q accepted as %+v (%v)", body, req, req.Validate())
		}
	})
}
