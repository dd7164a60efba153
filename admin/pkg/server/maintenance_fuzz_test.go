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

// FuzzTaskCreate: any body of POST /admin/v1/maintenance/tasks is either a 400 naming the field
// at fault, or a create-task request of a type the maintenance service runs, with parameters the
// type takes, that the maintenance service's own check takes.
func FuzzTaskCreate(f *testing.F) {
	for _, s := range []string{
		`{"reason":"r","type":"zstream-upgrade","cluster":"0123456789abcdefghijklmnopqrstuv"}`,
		`{"reason":"r","type":"nodepool-zstream-upgrade","cluster":"c1","params":{"nodePool":"p1","toVersion":"4.19.17"}}`,
		`{"reason":"r","type":"nodepool-zstream-upgrade","cluster":"c1"}`,
		`{"reason":"r","type":"reboot","cluster":"c1"}`,
		`{"reason":"r","type":"zstream-upgrade","cluster":"c1","params":{"fromVersion":"\u0000"}}`,
		`{"reason":"r","type":"zstream-upgrade","cluster":"../x"}`, `null`, `{"params":[]}`, `{"type":5}`,
	} {
		f.Add(s)
	}
	types := taskTypes()
	f.Fuzz(func(t *testing.T, body string) {
		req, err := parseTaskCreate(httptest.NewRequest(http.MethodPost, "/admin/v1/maintenance/tasks", strings.NewReader(body)), types)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
				t.Fatalf("refusal %v of %q", err, body)
			}
			return
		}
		req.RequestedBy = "fuzz"
		if req.Action != maintenance.ActionCreateTask || req.Task == nil || req.Validate() != nil || req.CheckAsked(types) != nil {
			t.Fatalf("%q accepted as %+v (%v)", body, req, req.Validate())
		}
	})
}

// FuzzWindowSet: any body of PUT /admin/v1/maintenance/windows/{cluster} is either a 400 naming
// the field at fault, or a set-window request whose window opens.
func FuzzWindowSet(f *testing.F) {
	for _, s := range []string{
		`{"reason":"r","days":["Sat","Sun"],"start":"02:00","length":"4h"}`,
		`{"reason":"r","start":"23:59","length":"168h"}`,
		`{"reason":"r","start":"24:00","length":"1h"}`,
		`{"reason":"r","days":["Mon","mon"],"start":"02:00","length":"1h"}`,
		`{"reason":"r","start":"02:00","length":"-1h"}`,
		`{"reason":"r","start":"2:0","length":"9999999999h"}`, `null`, `{"days":"Sat"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := parseWindowSet(httptest.NewRequest(http.MethodPut, "/admin/v1/maintenance/windows/c1", strings.NewReader(body)), "c1")
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != http.StatusBadRequest || ae.body.Target == "" || ae.body.Message == "" {
				t.Fatalf("refusal %v of %q", err, body)
			}
			return
		}
		req.RequestedBy = "fuzz"
		if req.Action != maintenance.ActionSetWindow || req.Window == nil || req.Window.Validate() != nil || req.Validate() != nil {
			t.Fatalf("%q accepted as %+v (%v)", body, req, req.Validate())
		}
	})
}
