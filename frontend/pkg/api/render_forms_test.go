package api_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	csv1 "github.com/openhcp/openhcp/cluster-service/api/v1"
	"github.com/openhcp/openhcp/frontend/pkg/api"
)

// TestRenderedClusterForms: the forms every api-version renders alike (api.Cluster.RenderedProperties)
// and those that are a version's own, for a cluster whose read-only properties are empty and
// whose image digest mirror has no mirrors.
func TestRenderedClusterForms(t *testing.T) {
	c := &api.Cluster{Spec: &csv1.ClusterSpec{ImageDigestMirrors: []*csv1.ImageDigestMirror{{Source: "quay.io/a"}}}}
	c.Etcd.KeyManagementMode = api.KeyManagementPlatform
	for _, tc := range []struct {
		version     string
		has, hasNot []string
	}{
		{"2024-06-10-preview",
			[]string{`"version":{}`, `"dns":{}`, `"api":{"url":""}`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`,
				`"operatorsAuthentication":{"userAssignedIdentities":{"controlPlaneOperators":{},"dataPlaneOperators":{}}}`},
			[]string{`"console"`, `"provisioningState"`, `"imageDigestMirrors"`, `"vnetIntegrationSubnetId"`}},
		{"2025-12-23-preview",
			[]string{`"version":{"id":""}`, `"dns":{}`, `"url":""`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`, `"vnetIntegrationSubnetId":""`,
				`"imageDigestMirrors":[{"source":"quay.io/a","mirrors":[]}]`, `"controlPlaneOperators":{},"dataPlaneOperators":{}`},
			[]string{`"console"`, `"provisioningState"`}},
		{"2026-06-30-preview",
			[]string{`"version":{"id":""}`, `"dns":{}`, `"url":""`, `"issuerUrl":""`, `"nodeDrainTimeoutMinutes":0`, `"vnetIntegrationSubnetId":""`,
				`"imageDigestMirrors":[{"source":"quay.io/a","mirrors":[]}]`, `"controlPlaneOperators":{},"dataPlaneOperators":{}`},
			[]string{`"console"`, `"provisioningState"`, `"status"`}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			v, ok := api.Lookup(tc.version)
			if !ok {
				t.Fatalf("no api-version %s", tc.version)
			}
			b, err := json.Marshal(v.RenderCluster(c))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(string(b), s) {
					t.Errorf("rendered without %s: %s", s, b)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(string(b), s) {
					t.Errorf("rendered with %s: %s", s, b)
				}
			}
		})
	}
}

// TestRenderedClusterConditions: the versions whose type has properties.status show each
// condition with its message, "" included, and its time in RFC 3339 as recorded; the others
// show no status.
func TestRenderedClusterConditions(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("CEST", 2*60*60))
	c := &api.Cluster{Conditions: []api.Condition{
		{Type: "Available", Status: "True", LastTransitionTime: at},
		{Type: "Degraded", Status: "False", Reason: "AsExpected", Message: "fine", LastTransitionTime: at},
	}}
	c.Etcd.KeyManagementMode = api.KeyManagementPlatform
	const status = `"status":{"conditions":[` +
		`{"type":"Available","status":"True","lastTransitionTime":"2026-05-01T10:00:00+02:00","message":""},` +
		`{"type":"Degraded","status":"False","lastTransitionTime":"2026-05-01T10:00:00+02:00","reason":"AsExpected","message":"fine"}]}`
	for version, want := range map[string]bool{"2024-06-10-preview": false, "2025-12-23-preview": false, "2026-06-30-preview": true, "2026-09-01-preview": true} {
		v, ok := api.Lookup(version)
		if !ok {
			t.Fatalf("no api-version %s", version)
		}
		b, err := json.Marshal(v.RenderCluster(c))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(b), status); got != want {
			t.Errorf("%s: rendered with the status %v, want %v: %s", version, got, want, b)
		}
		if !want && strings.Contains(string(b), `"status"`) {
			t.Errorf("%s: rendered with a status: %s", version, b)
		}
	}
}
